"""The shape of a request: its mode and its object."""

from __future__ import annotations

import pytest

from skillopt_sleep.mining.shape import ASK, PRODUCE, shape_of


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("write the commit message for the staged change", PRODUCE),
        ("commit msg for what's staged please", PRODUCE),
        ("can you draft a PR desc for feature/login", PRODUCE),
        ("pls fill in the PR template", PRODUCE),
        ("summarize the incident for the status page", PRODUCE),
        ("do a quick review of this PR", PRODUCE),
        ("why is the build slow?", ASK),
        ("how do I undo the last commit", ASK),
        ("the cache ignores my TTL, why?", ASK),
        ("login form is broken on safari", ASK),
        ("commit the lockfile too", "commit"),
        ("message the team about the outage", "messag"),
        ("test whether the VPN is up", "test"),
        ("run the migration on staging", "run"),
        ("Could you revert the last migration", "revert"),
    ],
)
def test_mode_is_read_from_the_opening(text, mode):
    assert shape_of(text).mode == mode


def test_object_is_the_head_without_the_opening_verb():
    assert shape_of("write the commit message for the staged change").object_words == ("commit", "messag")
    assert shape_of("fill in the PR template for this change").object_words == ("pr", "templat")
    assert shape_of("run the migration on staging").object_words == ("migration",)
    assert shape_of("release notes for 1.4.1 please").object_words == ("releas", "note")


def test_spelling_variants_share_object_trigrams():
    joined, hyphened = shape_of("postmortem for the outage"), shape_of("post-mortem for the outage")
    assert joined.object_words == hyphened.object_words and joined.grams == hyphened.grams
    assert shape_of("a Dockerfile for the api").grams & shape_of("docker image for the api").grams


def test_empty_and_odd_text():
    assert shape_of("").mode == PRODUCE and shape_of("").object_words == ()
    assert shape_of("???").object_words == () and shape_of("???").words == frozenset()
    assert shape_of("pls").object_words == ()
