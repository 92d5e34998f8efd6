"""Checks: a task's judge and the words that describe what it checks."""
