"""The learning loop's settings read from the night's config (gate/settings.py): the config's
sections reach the loop as they are (the retirement settings among them), and their defaults are
the config's."""

from __future__ import annotations


def test_the_settings_reach_the_loop() -> None:
    from skillopt_sleep.config import Config
    from skillopt_sleep.gate.settings import LoopSettings

    loop = LoopSettings.from_config(Config(retire_rules=False, retire_margin=0.2))
    assert (loop.documents.retire_rules, loop.documents.retire_margin) == (False, 0.2)
    assert (LoopSettings().documents.retire_rules, LoopSettings().documents.retire_margin) == (
        Config().documents.retire_rules,
        Config().documents.retire_margin,
    )


def test_the_loop_holds_the_config_sections_and_tonight_s_edit_budget() -> None:
    """One name per setting: the loop takes the sections as they are (a copy), defaults and all;
    tonight's scheduled edit budget replaces ``max_edits`` only."""
    from dataclasses import replace

    from skillopt_sleep.config import Config, DocumentSettings, GateSettings, LearningSettings
    from skillopt_sleep.gate.settings import LoopSettings, gate_config

    config = Config(k=2, max_edits=5, val_samples=4, max_val_samples=8, retire_margin=0.3)
    loop = LoopSettings.from_config(config, max_edits=3)
    assert loop.learning == replace(config.learning, max_edits=3)
    assert (loop.gate, loop.documents, loop.decide) == (config.gate, config.documents, gate_config(config.gate))
    assert loop.gate is not config.gate and config.learning.max_edits == 5
    assert LoopSettings.from_config(config).learning.max_edits == 5
    default = LoopSettings()
    assert (default.learning, default.gate, default.documents) == (
        LearningSettings(),
        GateSettings(),
        DocumentSettings(),
    )
    assert default.decide == gate_config(GateSettings())
