"""Transcript sources: each agent's session files -> SessionDigests (read-only).

One protocol, one module per agent (claude_code.py, codex.py). ``harvest`` is what the rest of
the engine calls.
"""
