"""The suite ``bench_learning.py`` learns on: deficient skills, each with kinds of work whose
checks the skill's text misses (or contradicts), the tasks of each night drawn from them, and the
oracle rules the ceiling is measured with (never shown to the engine)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from skillopt_sleep.backends.sim import covering_rule
from skillopt_sleep.backends.sim.reading import parse_line, stance
from skillopt_sleep.checks import judges
from skillopt_sleep.documents.managed_block import DocumentSet
from skillopt_sleep.rules.scope import render_scoped, scope_for_kind
from skillopt_sleep.types import TaskRecord

SPLIT = {"train": 6, "val": 3, "test": 4}  # tasks per kind (train and val: per night)
AREAS = ("parser", "cache", "auth", "billing", "upload", "export", "scheduler", "webhook", "quota", "sync")
CHANGES = ("timeout", "cleanup", "rewrite", "rollback", "migration", "throttle")
SUBJECTS = tuple(f"{area} {change}" for change in CHANGES for area in AREAS)  # 60 per kind
PROJECT = "/bench-learning"


@dataclass(frozen=True)
class Kind:
    name: str  # the kind of work, as mining labels it ("commit message")
    intent: str  # with {x}: the request's words (they name the kind, as real requests do)
    checks: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Skill:
    name: str
    hand_written: str  # the skill's text outside the managed block
    kinds: tuple[Kind, ...]
    why: str  # what makes it deficient


SUITE = (
    Skill(
        "git-writing",
        "# Git writing\n\nHelp write commit messages, pull request descriptions and changelog "
        "entries for this repository.\n",
        (
            Kind(
                "commit message",
                "Write the commit message for the {x} fix.",
                ({"op": "contains", "arg": "Refs: ACME-"}, {"op": "regex", "arg": r"^(feat|fix): \S"}),
            ),
            Kind(
                "pull request description",
                "Write the pull request description for the {x} branch.",
                ({"op": "section_present", "arg": "Testing"}, {"op": "not_contains", "arg": "TODO"}),
            ),
            Kind(
                "changelog entry",
                "Write the changelog entry for the {x} release.",
                (
                    {"op": "not_contains", "arg": "Refs:"},
                    {"op": "max_chars", "arg": 400},
                    {"op": "min_chars", "arg": 120},
                ),
            ),
        ),
        "an unscoped 'always include Refs: ACME-' rule leaks into changelog entries, which forbid it",
    ),
    Skill(
        "research-notes",
        "# Research notes\n\nAnswer from what you already know.\n\n"
        "- Do NOT look anything up, search, or use any tools.\n- Keep a neutral tone.\n",
        (
            Kind(
                "dependency lookup",
                "Do a dependency lookup: find the latest release of the {x} library.",
                ({"op": "tool_called", "arg": "WebSearch"}, {"op": "contains", "arg": "Source:"}),
            ),
            Kind(
                "paper summary",
                "Write a paper summary of the {x} paper for the reading group.",
                ({"op": "section_present", "arg": "Key findings"}, {"op": "max_chars", "arg": 500}),
            ),
            Kind(
                "meeting brief",
                "Prepare a meeting brief about the {x} project.",
                ({"op": "section_present", "arg": "Action items"}, {"op": "contains", "arg": "Owner:"}),
            ),
        ),
        "the hand-written text forbids the tool its lookups need (the gbrain-evals seed)",
    ),
    Skill(
        "api-docs",
        "# API docs\n\nWrite reference documentation for the public HTTP API.\n",
        (
            Kind(
                "endpoint reference",
                "Write the endpoint reference for GET /{x}.",
                (
                    {"op": "section_present", "arg": "Parameters"},
                    {"op": "section_contains", "arg": {"section": "Example", "text": "curl"}},
                ),
            ),
            Kind(
                "error message",
                "Write the error message text shown when {x} fails.",
                ({"op": "max_chars", "arg": 160}, {"op": "not_contains", "arg": "Exception"}),
            ),
            Kind(
                "migration guide",
                "Write the migration guide for moving off the v1 {x} endpoint.",
                ({"op": "section_present", "arg": "Breaking changes"}, {"op": "min_chars", "arg": 600}),
            ),
        ),
        "a verbose model: the error messages' length cap, unscoped, cuts the migration guides",
    ),
    Skill(
        "incident-comms",
        "# Incident communication\n\nWrite clearly and calmly. Never blame individuals.\n",
        (
            Kind(
                "status update",
                "Post a status update about the {x} outage.",
                ({"op": "regex", "arg": r"^\[(investigating|identified|resolved)\]"}, {"op": "max_chars", "arg": 280}),
            ),
            Kind(
                "postmortem",
                "Write the postmortem for the {x} incident.",
                (
                    {"op": "section_present", "arg": "Timeline"},
                    {"op": "section_present", "arg": "Root cause"},
                    {"op": "contains", "arg": "Impact:"},
                ),
            ),
            Kind(
                "customer email",
                "Draft the customer email about the {x} incident.",
                (
                    {"op": "contains", "arg": "We apologize"},
                    {"op": "not_contains", "arg": "internal"},
                    {"op": "no_refusal", "arg": None},
                ),
            ),
        ),
        "three kinds with seven checks: caps and phrases that hurt the other kinds unless scoped",
    ),
)


def make_tasks(skill: Skill, night_number: int, fresh: bool) -> list[TaskRecord]:
    """Every kind's test tasks (the same every night) and the train and val tasks of one night: new
    requests each night when ``fresh`` (a night's own sessions), else night 1's again."""
    per_night = SPLIT["train"] + SPLIT["val"]
    offset = SPLIT["test"] + per_night * ((night_number - 1) if fresh else 0)
    tasks = []
    for kind in skill.kinds:
        checks = [judges.validate_check(dict(c)) for c in kind.checks]
        slug = kind.name.replace(" ", "-")
        plan = [("test", i) for i in range(SPLIT["test"])]
        plan += [("train" if j < SPLIT["train"] else "val", offset + j) for j in range(per_night)]
        for split, index in plan:
            x = SUBJECTS[index % len(SUBJECTS)]
            tasks.append(
                TaskRecord(
                    id=f"{slug}-{split}-{x.replace(' ', '-')}",
                    intent=kind.intent.format(x=x),
                    project=PROJECT,
                    judge={"kind": "rule", "checks": checks},
                    kind=kind.name,
                    skill_hint=skill.name,
                    split=split,
                    recurrence=SPLIT["train"],
                )
            )
    return tasks


def at_night(skill: Skill, night_number: int, shift: int) -> Skill:
    """The skill as one night's work asks for it. ``shift`` (a night number; 0: never): the work
    shifts that night — before it, every kind but the last; from it on, every kind but the first
    (which stops coming). Night ``10**6`` is the work after the shift: what the test measures."""
    if not shift:
        return skill
    return replace(skill, kinds=skill.kinds[:-1] if night_number < shift else skill.kinds[1:])


def oracle_rules(skill: Skill, docs: DocumentSet) -> list[str]:
    """One covering rule per check, scoped to its kind, superseding a hand-written line it conflicts
    with: what the ceiling is measured with (never shown to the engine)."""
    hand = [line.content for doc in docs.all() for line in _hand_lines(doc)]
    rules = []
    for kind in skill.kinds:
        for raw in kind.checks:
            check = judges.validate_check(dict(raw))
            rule = covering_rule(check)
            if rule is None:
                continue
            rule = render_scoped(scope_for_kind(kind.name), rule)
            against = next((line for line in hand if stance(check, parse_line(line).text) is False), None)
            rules.append(f'{rule} (supersedes: "{against}")' if against else rule)
    return rules


def _hand_lines(doc: Any) -> list[Any]:
    finder = getattr(doc, "hand_written", None)
    if finder is not None:
        return finder()
    from types import SimpleNamespace  # before whole-document awareness landed: every non-rule line

    rules = set(doc.rules())
    return [
        SimpleNamespace(content=ln.strip())
        for ln in doc.text.splitlines()
        if ln.strip() and ln.strip().lstrip("-* ").strip() not in rules and not ln.strip().startswith("<!--")
    ]


def new_project(root: Path, skill: Skill) -> Path:
    """A project under ``root`` holding the skill's hand-written text as its learned skill."""
    project = root / "proj"
    skill_file = project / ".claude" / "skills" / "skillopt-sleep-learned" / "SKILL.md"
    skill_file.parent.mkdir(parents=True)
    skill_file.write_text(
        "---\nname: skillopt-sleep-learned\ndescription: How this project writes "
        f"{skill.name.replace('-', ' ')}.\n---\n\n{skill.hand_written}",
        encoding="utf-8",
    )
    (project / "CLAUDE.md").write_text("# Project\n", encoding="utf-8")
    return project


def all_rules(docs: DocumentSet) -> list[tuple[str, str]]:
    """Every managed rule of ``docs``, with the role of its document."""
    return [(doc.role, rule) for doc in docs.all() for rule in doc.rules()]


def without(docs: DocumentSet, role: str, rule: str) -> DocumentSet:
    """``docs`` without ``rule`` in its ``role`` document."""
    doc = docs.get(role)
    return docs.with_document(doc.with_rules([r for r in doc.rules() if r != rule]))
