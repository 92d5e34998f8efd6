"""The corpus builder's readers: Go patterns in Python's syntax, trivy's rule literals, and the
lines it refuses to write."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.scripts import script_module

GO_RULES = r"""
package secret

const (
	quote     = `["']?`
	endSecret = `[.,]?(\s+|$)`
	startWord = "([^0-9a-zA-Z_]|^)"
	endWord   = "([^0-9a-zA-Z_]|$)"
)

var builtinRules = []Rule{
	{
		ID:              "demo-key",
		Regex:           MustCompileWithoutWordPrefix(fmt.Sprintf(`(?P<secret>dk_[a-z0-9]{20})%s%s`, quote, endSecret)),
		SecretGroupName: "secret",
		Keywords:        []string{"dk_"},
	},
	{
		ID:       "quoted-token",
		Regex:    MustCompile(`['\"](qt-(?i)[a-z0-9]{24})['\"]`),
		Keywords: []string{"qt-"},
	},
	{
		ID:              "xml-password",
		Regex:           MustCompile(`(?i)<password>(?P<secret>[^<\s{][^<{]+)</password>`),
		SecretGroupName: "secret",
	},
	{
		ID:    "gcp-service-account",
		Regex: MustCompile(`\"type\": \"service_account\"`),
	},
}
"""


@pytest.fixture(scope="module")
def values() -> Iterator[ModuleType]:
    yield from script_module("regex_values")


@pytest.fixture(scope="module")
def trivy() -> Iterator[ModuleType]:
    yield from script_module("redaction_trivy")


@pytest.fixture(scope="module")
def corpus() -> Iterator[ModuleType]:
    yield from script_module("redaction_corpus")


def test_a_flag_inside_a_go_pattern_holds_to_the_end_of_its_group(values: ModuleType) -> None:
    pattern = re.compile(values.go_to_python("(p8e-)(?i)[a-z0-9]{4}"))
    assert pattern.fullmatch("p8e-AbC1") and not pattern.fullmatch("P8E-abc1")
    nested = re.compile(values.go_to_python("a(b(?i)c)d"))
    assert nested.fullmatch("abCd") and not nested.fullmatch("abCD")


def test_trivy_rules_are_read_with_their_wrappers_and_secret_groups(trivy: ModuleType, tmp_path: Path) -> None:
    source = tmp_path / "builtin-rules.go"
    source.write_text(GO_RULES, encoding="utf-8")
    rules = {r["id"]: r for r in trivy.trivy_rules(source)}
    assert sorted(rules) == ["demo-key", "quoted-token", "xml-password"], "a marker line is no secret"
    demo = re.compile(rules["demo-key"]["regex"])
    m = demo.search("token: dk_" + "a1" * 10 + " next")
    assert m and m.group(rules["demo-key"]["group"]) == "dk_" + "a1" * 10
    assert not demo.search("xdk_" + "a1" * 10), "MustCompileWithoutWordPrefix puts a word boundary first"
    quoted = re.compile(rules["quoted-token"]["regex"])
    m = quoted.search('"qt-' + "Ab1" * 8 + '"')
    assert m and m.group(rules["quoted-token"]["group"]) == "qt-" + "Ab1" * 8, "the value, less its quotes"
    assert rules["xml-password"]["group"] == 1, "a brace inside a pattern does not end the rule literal"


def test_a_value_nobody_writes_is_not_a_line(corpus: ModuleType) -> None:
    for drawn in ("'value9x\"", '"value9x', "rest of the line", "<tag>v9</tag>"):
        assert corpus.unwritten(drawn), drawn
    for written in ("'value9x'", "value9x", "dk_a1a1a1a1"):
        assert not corpus.unwritten(written), written


def test_a_rule_no_template_fits_is_drawn_whole(corpus: ModuleType) -> None:
    rule = {"id": "ctx", "regex": r"AccountKey\s*=\s*(?P<secret>[A-Za-z0-9+/]{20}==)", "group": 1, "keywords": []}
    lines = corpus.whole_match_lines(random.Random(1), rule, 2)
    assert len(lines) == 2
    for line in lines:
        m = re.search(rule["regex"], line["line"])
        assert m and m.group(1) == line["secret"] and "\n" not in line["line"]
