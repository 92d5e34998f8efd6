"""Everything the tests share that is not itself a test; import it as ``tests.support.<module>``.

- ``fake_backend``: a backend answered by a function of the request (most unit tests of the
  engine's model calls).
- ``anthropic_server``, ``openai_server`` (on ``http_base``): HTTP servers on 127.0.0.1 speaking the
  Anthropic and OpenAI APIs, driven through the real SDKs and the real CLIs; ``provider_env`` points
  the real ``claude`` / ``codex`` at them; ``real_clients`` finds the pinned real CLIs.
- ``fake_cli``: fake ``claude`` / ``codex`` executables; ``os_tools`` + ``scheduler_tools``: fake
  crontab, systemctl, launchctl and schtasks.
- ``harvest`` (fixture transcripts), ``tasks`` (tasks files), ``staged_project`` (staged proposals),
  ``chromium`` and ``png`` (the report.html screenshot test).
"""
