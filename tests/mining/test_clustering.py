"""Clustering requests into kinds of task."""

from __future__ import annotations

import random


from skillopt_sleep.mining import cluster, requests_from
from tests.mining.builders import COMMIT_REQUESTS, TEST_REQUESTS, digest


def test_cluster_groups_rephrasings_across_sessions_and_separates_kinds():
    digests = [digest(f"c{i}", [(text, "")]) for i, text in enumerate(COMMIT_REQUESTS)]
    digests += [digest(f"t{i}", [(text, "")]) for i, text in enumerate(TEST_REQUESTS)]
    digests.append(digest("o", [("summarize yesterday's incident for the status page", "")]))
    groups = cluster(requests_from(digests))
    as_sets = sorted((sorted(r.text for r in g) for g in groups), key=len, reverse=True)
    assert as_sets[0] == sorted(COMMIT_REQUESTS)
    assert as_sets[1] == sorted(TEST_REQUESTS)
    assert as_sets[2] == ["summarize yesterday's incident for the status page"]
    assert len(groups) == 3
    # the commit group spans all three sessions
    commit = next(g for g in groups if g[0].text in COMMIT_REQUESTS)
    assert {r.session.session_id for r in commit} == {"c0", "c1", "c2"}


def test_cluster_threshold():
    reqs = requests_from(
        [digest("a", [("alpha beta gamma delta", "")]), digest("b", [("alpha beta epsilon zeta", "")])]
    )
    assert len(cluster(reqs, threshold=0.01)) == 1
    assert len(cluster(reqs, threshold=0.99)) == 2


def test_cluster_is_independent_of_input_order():
    texts = COMMIT_REQUESTS + TEST_REQUESTS + ["summarize yesterday's incident for the status page"]
    expected = None
    for shuffle_seed in range(6):
        order = list(texts)
        random.Random(shuffle_seed).shuffle(order)
        groups = cluster(requests_from([digest(f"s{i}", [(t, "")]) for i, t in enumerate(order)]))
        got = sorted(sorted(r.text for r in g) for g in groups)
        assert expected is None or got == expected
        expected = got


def test_cluster_joins_a_rephrasing_seeded_alone():
    texts = [
        "write the commit message for the staged changes",
        "Write a commit msg for my staged changes",  # cosine 0.57 to the first, above 0.3
        "commit message for the staged diff please",
    ]
    groups = cluster(requests_from([digest(f"s{i}", [(t, "")]) for i, t in enumerate(texts)]))
    together = next(g for g in groups if any(r.text == texts[0] for r in g))
    assert texts[1] in {r.text for r in together}


def test_cluster_empty():
    assert cluster([]) == []


def test_cluster_reads_abbreviations_as_the_same_request():
    texts = [
        "write the commit message for the staged change",
        "commit msg for what's staged please",
        "write the PR description for this branch",
        "PR desc for the login branch pls",
    ]
    groups = cluster(requests_from([digest(f"s{i}", [(t, "")]) for i, t in enumerate(texts)]))
    got = sorted(sorted(r.text for r in g) for g in groups)
    assert got == sorted([sorted(texts[:2]), sorted(texts[2:])])


def _groups_of(texts: list[str]) -> list[list[str]]:
    groups = cluster(requests_from([digest(f"s{i}", [(t, "")]) for i, t in enumerate(texts)]))
    return sorted(sorted(r.text for r in g) for g in groups)


def test_a_word_shared_in_another_sense_does_not_join():
    commit = [
        "write the commit message for the staged change",
        "commit msg for what's staged please",
        "suggest a commit message for these edits",
    ]
    others = ["commit the lockfile too", "message the team about the outage", "how do I undo the last commit?"]
    got = _groups_of(commit + others)
    assert sorted(commit) in got
    assert all([text] in got for text in others)


def test_a_request_joins_on_its_average_similarity_not_one_near_member():
    tests = [
        "add a unit test for the invoice parser",
        "write unit tests for parse_amount",
        "unit tests for the date helpers please",
    ]
    fix = "fix the flaky unit test in test_auth.py"  # shares "unit test" with each, asks something else
    got = _groups_of(tests + [fix])
    assert sorted(tests) in got and [fix] in got


def test_candidates_come_from_shared_keys_only(monkeypatch):
    """A request is compared only with groups it shares a key with (the inverted index)."""
    import skillopt_sleep.mining.clustering as clustering

    compared: list[int] = []
    original = clustering._Groups.average_link

    def counting(self, g, *args, **kwargs):
        compared.append(g)
        return original(self, g, *args, **kwargs)

    monkeypatch.setattr(clustering._Groups, "average_link", counting)
    rng = random.Random(7)

    def word() -> str:
        return "".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiou") for _ in range(4))

    texts = [f"write the release notes for v{i}.0" for i in range(5)] + [
        f"{word()} {word()} {word()}" for _ in range(40)
    ]
    got = _groups_of(texts)
    assert sorted(texts[:5]) in got
    assert len(got) == 41
    # 45 requests: an all-pairs leader pass alone would compare ~900 times
    assert len(compared) < 100, len(compared)


def _packed(*features: str) -> tuple[tuple[str, ...], tuple[float, ...]]:
    return features, tuple(1.0 / len(features) ** 0.5 for _ in features)


def test_candidates_are_bounded_and_the_groups_sharing_most_rare_keys_come_first():
    import skillopt_sleep.mining.clustering as clustering

    groups = clustering._Groups()
    common = [groups.new("produce") for _ in range(50)]
    for g in common:  # 50 groups hold the key "notes"; one of them also the rarer "relnot"
        groups.add(g, _packed(f"w{g}"), _packed(f"w{g}"), {"notes", f"only{g}"} | ({"relnot"} if g == 37 else set()), 1)
    got = groups.candidates({"notes", "relnot"}, "produce")
    assert len(got) == clustering.MAX_CANDIDATES and got == sorted(got)
    assert 37 in got
    assert groups.candidates({"notes"}, "ask") == []  # another mode's groups are never candidates


def test_a_group_a_request_left_is_no_longer_found_by_its_keys():
    import skillopt_sleep.mining.clustering as clustering

    groups = clustering._Groups()
    g = groups.new("produce")
    groups.add(g, _packed("a"), _packed("a"), {"alpha", "shared"}, 2)
    groups.add(g, _packed("b"), _packed("b"), {"beta", "shared"}, 1)
    assert groups.candidates({"alpha"}, "produce") == [g]
    groups.add(g, _packed("a"), _packed("a"), {"alpha", "shared"}, -2)
    assert groups.candidates({"alpha"}, "produce") == []
    assert groups.candidates({"shared"}, "produce") == [g]  # still held by the member that stayed
    assert groups.sizes[g] == 1


def test_a_request_typed_many_times_stays_with_its_kind():
    texts = ["commit msg pls"] * 4 + [
        "write the commit message for the staged change",
        "add a unit test for the invoice parser",
        "add a unit test for the invoice parser",
    ]
    groups = cluster(requests_from([digest(f"s{i}", [(t, "")]) for i, t in enumerate(texts)]))
    assert [sorted(r.session.session_id for r in g) for g in groups] == [["s0", "s1", "s2", "s3", "s4"], ["s5", "s6"]]
