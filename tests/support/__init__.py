"""Local stand-ins for the providers: HTTP servers on 127.0.0.1 speaking the Anthropic and OpenAI
APIs (driven through the real SDKs), and fake ``claude`` / ``codex`` executables."""
