"""Replay: a task answered under a document set, and the answers scored."""
