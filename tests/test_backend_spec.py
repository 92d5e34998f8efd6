"""A backend spec string, read (backend_spec.py): its name, then the named backend's defaults from
the config overridden by the spec's own options."""

from __future__ import annotations

import pytest

from skillopt_sleep.backends import BackendSpecError, spec_options


def test_spec_options_take_the_named_backends_defaults_then_the_specs_own():
    defaults = {"anthropic": {"model": "from-config", "timeout": 5}, "openai": {"timeout": 99}}
    assert spec_options("Anthropic:model=from-spec", defaults) == ("anthropic", {"model": "from-spec", "timeout": 5})
    assert spec_options("sim", defaults) == ("sim", {})
    with pytest.raises(BackendSpecError):
        spec_options("auto", defaults)
