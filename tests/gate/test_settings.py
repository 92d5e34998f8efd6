"""The learning loop's settings read from the night's config (gate/settings.py): the retirement
settings reach the loop, and their defaults are the config's."""

from __future__ import annotations


def test_the_settings_reach_the_loop() -> None:
    from skillopt_sleep.config import Config
    from skillopt_sleep.gate.settings import LoopSettings

    loop = LoopSettings.from_config(Config(retire_rules=False, retire_margin=0.2))
    assert (loop.retire_rules, loop.retire_margin) == (False, 0.2)
    assert (LoopSettings().retire_rules, LoopSettings().retire_margin) == (
        Config().documents.retire_rules,
        Config().documents.retire_margin,
    )
