"""Kinds of work read from how a request asks for it (phrasings not in the labelled sets)."""

from __future__ import annotations

import pytest

from skillopt_sleep.mining import cluster, requests_from
from skillopt_sleep.mining.shape import KIND_MODE, grouping_shape, shape_of
from tests.mining.builders import digest


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("translate the footer text to Swedish", "translation"),
        ("put the legal notice into Greek", "translation"),
        ("a Polish version of the landing copy", "translation"),
        ("summarise the PR discussion", "summary"),
        ("tl;dr the retro doc", "summary"),
        ("explain the scheduler loop", "explanation"),
        ("what does this makefile target do?", "explanation"),
        ("how does the token bucket work?", "explanation"),
        ("containerize the billing api", "dockerfile"),
        ("write a Jenkinsfile for the monorepo", "ci-workflow"),
        ("add test fixtures for the ledger", "test-data"),  # the last noun names the thing
        ("perf test for the cache", "benchmark"),  # the longer phrase wins a tie
        ("add an example to the README", "readme"),  # named outside the head
        ("set up CI: lint and test every push", "ci-workflow"),  # a phrase ends at ":"
        ("message for the commit that bumps deps", "commit-message"),
        ("tidy up the parser module", "refactor"),
    ],
)
def test_kind_of_work(text, kind):
    assert shape_of(text).kind == kind


@pytest.mark.parametrize(
    "text",
    [
        "run the migrations on staging",  # operating on something is not writing it
        "revert the last commit",
        "bump python to 3.13 in the CI image",
        "why is the docker build slow?",  # a question about a thing does not ask for one
        "what does the Swedish translation say here?",
        "the query planner ignores my index",
        "email validation is broken on signup",
        "rename getUser to fetchUser",
    ],
)
def test_no_kind_where_none_is_asked_for(text):
    assert shape_of(text).kind is None


def test_a_kind_groups_requests_that_share_no_word():
    texts = [
        "translate the footer text to Swedish",
        "put the legal notice into Greek",
        "summarise the PR discussion",
        "tl;dr the retro doc",
        "run the migrations on staging",
    ]
    assert {grouping_shape(t).mode for t in texts[:4]} == {KIND_MODE}
    groups = cluster(requests_from([digest(f"s{n}", [(t, "")]) for n, t in enumerate(texts)]))
    got = sorted(sorted(r.text for r in g) for g in groups)
    assert got == sorted([sorted(texts[:2]), sorted(texts[2:4]), [texts[4]]])
