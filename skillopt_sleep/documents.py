"""The documents a night evolves: a skill (SKILL.md) and a memory file (CLAUDE.md / AGENTS.md).

Edits touch only the managed block between the markers below; every byte outside it is kept as
it was. Rules inside the block are one bullet line each, and the block stays small: it is read on
every agent turn (rule budget per document; AGENTS.md within Codex's 32 KiB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from skillopt_sleep.errors import EXIT_CONFIG, UserError
from skillopt_sleep.sanitize import rule_problem, utf8
from skillopt_sleep.types import Edit

START = "<!-- skillopt-sleep:learned:start -->"
END = "<!-- skillopt-sleep:learned:end -->"
BLOCK_TITLE = "Learned rules (managed by skillopt-sleep; edit outside this block)"
DEFAULT_SKILL_NAME = "skillopt-sleep-learned"
AGENTS_MD_LIMIT = 32 * 1024
SKILL_NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Limits:
    max_rules: int = 12  # per document
    max_rule_chars: int = 300
    max_bytes: int | None = None  # whole-file cap (AGENTS.md: 32 KiB)


class EditRefused(ValueError):
    """An edit that cannot be applied within the managed block's rules."""


@dataclass(frozen=True)
class Document:
    role: str  # "skill" | "memory"
    path: Path
    original: bytes | None  # the live bytes as read; None when the file does not exist
    text: str  # current text (the original, or with edits applied)
    limits: Limits = Limits()
    read_only: bool = False  # the live file has no write bit: no edit is applied to it

    @property
    def newline(self) -> str:
        return "\r\n" if "\r\n" in self.text else "\n"

    def rules(self) -> list[str]:
        block = _find_block(self.text)
        if block is None:
            return []
        inner = self.text[block[0]:block[1]]
        return [m.group(1).strip() for m in re.finditer(r"^\s*[-*]\s+(.+?)\s*$", inner, re.MULTILINE)]

    def with_rules(self, rules: list[str]) -> Document:
        return replace(self, text=_set_block(self.text, rules, self.newline))

    def encoded(self) -> bytes:
        return utf8(self.text)

    @property
    def changed(self) -> bool:
        return self.original is None or self.encoded() != self.original


@dataclass(frozen=True)
class DocumentSet:
    skill: Document
    memory: Document

    def get(self, role: str) -> Document:
        if role == "skill":
            return self.skill
        if role == "memory":
            return self.memory
        raise ValueError(f"unknown document role {role!r}")

    def with_document(self, doc: Document) -> DocumentSet:
        return replace(self, **{doc.role: doc})

    def all(self) -> list[Document]:
        return [self.skill, self.memory]

    def prompt_prefix(self) -> str:
        """What the target model is told: both documents, as the agent would load them."""
        parts = []
        for doc in (self.memory, self.skill):
            body = doc.text.strip()
            if body:
                parts.append(f"<document name=\"{doc.path.name}\" role=\"{doc.role}\">\n{body}\n</document>")
        return "\n\n".join(parts)

    def fingerprint(self) -> str:
        import hashlib

        return hashlib.sha256(
            (self.skill.text + "\0" + self.memory.text).encode("utf-8")
        ).hexdigest()[:16]


def document_paths(project: Path, agent: str, skill_name: str = DEFAULT_SKILL_NAME,
                   skill_path: Path | None = None, user_level_skill: bool = False) -> tuple[Path, Path]:
    """(skill path, memory path) for an agent per DESIGN §5."""
    if agent not in ("claude", "codex"):
        raise UserError(f"unknown agent {agent!r} (use claude or codex)", EXIT_CONFIG)
    if not SKILL_NAME_RE.match(skill_name) or len(skill_name) > 64:
        raise UserError(
            f"skill name {skill_name!r} must be lowercase letters, digits and hyphens, at most 64 chars",
            EXIT_CONFIG,
        )
    memory = project / ("CLAUDE.md" if agent == "claude" else "AGENTS.md")
    if skill_path is not None:
        return skill_path, memory
    base = Path.home() if user_level_skill else project
    folder = ".claude" if agent == "claude" else ".agents"
    return base / folder / "skills" / skill_name / "SKILL.md", memory


def _read(role: str, path: Path, limits: Limits) -> Document:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Document(role, path, None, "", limits)
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}", EXIT_CONFIG) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path} is not UTF-8 text; refusing to manage it", EXIT_CONFIG) from None
    try:
        _find_block(text)
    except UserError as exc:
        raise UserError(f"{path}: {exc.message}", EXIT_CONFIG) from None
    return Document(role, path, data, text, limits, read_only=is_read_only(path))


def is_read_only(path: Path) -> bool:
    """The file exists and nobody may write it (no write bit at all): the owner froze it, and
    no night edits or adopts into it. (Mode bits, not ``os.access``: root may write anything.)"""
    try:
        return not (path.stat().st_mode & 0o222)
    except OSError:
        return False


def load_documents(project: Path, agent: str = "claude", skill_name: str = DEFAULT_SKILL_NAME,
                   skill_path: Path | None = None, max_rules: int = 12,
                   user_level_skill: bool = False) -> DocumentSet:
    skill_file, memory_file = document_paths(project, agent, skill_name, skill_path, user_level_skill)
    base = Limits(max_rules=max_rules)
    memory_limits = replace(base, max_bytes=AGENTS_MD_LIMIT) if agent == "codex" else base
    skill = _read("skill", skill_file, base)
    if skill.original is None:
        name = skill_file.parent.name
        if skill_file.name != "SKILL.md" or not SKILL_NAME_RE.match(name) or len(name) > 64:
            raise UserError(
                f"cannot create {skill_file}: a new skill is a SKILL.md in a folder whose name is "
                "lowercase letters, digits and hyphens (at most 64 characters)", EXIT_CONFIG)
        skill = replace(skill, text=new_skill_text(name))
    return DocumentSet(skill=skill, memory=_read("memory", memory_file, memory_limits))


def new_skill_text(name: str) -> str:
    """A fresh SKILL.md with valid Agent Skills frontmatter."""
    if not SKILL_NAME_RE.match(name) or len(name) > 64:
        name = DEFAULT_SKILL_NAME
    description = (
        "Rules learned overnight by skillopt-sleep from this project's recurring tasks. "
        "Use for any task in this project; follow every rule below."
    )
    return (
        f"---\nname: {name}\ndescription: {description}\n---\n\n"
        f"# {name}\n\nRules learned from this project's recurring tasks.\n"
    )


_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


def _find_block(text: str) -> tuple[int, int] | None:
    """(start, end) of the managed block's inside, or None when the document has none.

    Only a marker alone on its line, outside a fenced code block, counts: a marker quoted in prose
    (inside backticks, or in a fence explaining the format) is text. More than one block, or a
    start without an end (or the reverse), is ambiguous and refused: the rules would land in the
    wrong place.
    """
    starts: list[int] = []
    ends: list[int] = []
    fence: str | None = None
    pos = 0
    for line in text.splitlines(keepends=True):
        opening = _FENCE.match(line)
        if opening is not None:
            mark = opening.group(1)
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip().strip(mark[0]):
                fence = None
        elif fence is None:
            stripped = line.strip()
            if stripped == START:
                starts.append(pos + line.index(START) + len(START))
            elif stripped == END:
                ends.append(pos + line.index(END))
        pos += len(line)
    if not starts and not ends:
        return None
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise UserError(
            f"a document has {len(starts)} skillopt-sleep start and {len(ends)} end marker line(s)"
            + (" (the end before the start)" if len(starts) == len(ends) == 1 else "")
            + "; the learned block is ambiguous. Leave one start and one end marker, each on its "
            "own line, or remove both", EXIT_CONFIG)
    return starts[0], ends[0]


def _set_block(text: str, rules: list[str], nl: str) -> str:
    body = nl + f"## {BLOCK_TITLE}" + nl + nl + "".join(f"- {r}{nl}" for r in rules)
    block = _find_block(text)
    if block is not None:
        return text[:block[0]] + body + text[block[1]:]
    prefix = text
    if prefix and not prefix.endswith(nl):
        prefix += nl
    if prefix:
        prefix += nl
    return prefix + START + body + END + nl


def clean_rule(content: str, limits: Limits) -> str:
    """Normalise one rule or refuse it: one line of plain Markdown prose, bounded, no markup that
    escapes the block, no control or invisible characters (``sanitize.rule_problem``)."""
    rule = re.sub(r"[ \t\r\n]+", " ", content or "").strip()
    # checked before \s collapses control characters such as \x1c or \x85; a huge reply is
    # refused for its length below without scanning it
    problem = rule_problem(rule) if len(rule) <= 4 * limits.max_rule_chars else None
    rule = re.sub(r"\s+", " ", rule)
    rule = re.sub(r"^([-*]|\d+[.)])\s+", "", rule)
    if not rule:
        raise EditRefused("empty rule")
    if len(rule) > limits.max_rule_chars:
        raise EditRefused(f"rule longer than {limits.max_rule_chars} characters")
    lowered = rule.lower()
    if "skillopt-sleep:learned" in lowered or "<!--" in rule or "-->" in rule:
        raise EditRefused("rule contains managed-block markers or HTML comments")
    if rule.startswith("#") or rule.startswith("---") or "```" in rule:
        raise EditRefused("rule contains headings, frontmatter or code fences")
    if problem is not None:
        raise EditRefused(problem)
    return rule


def _refuse_duplicate(rule: str, others: list[str]) -> None:
    key = rule.lower().rstrip(" .;:!")
    if any(r.lower().rstrip(" .;:!") == key for r in others):
        raise EditRefused("rule already present")


def _index(rules: list[str], anchor: str) -> int:
    want = re.sub(r"\s+", " ", anchor or "").strip().lower()
    for i, r in enumerate(rules):
        if r.lower() == want:
            return i
    for i, r in enumerate(rules):
        if want and want in r.lower():
            return i
    raise EditRefused(f"anchor {anchor!r} is not a rule in the managed block")


def apply_edit(docs: DocumentSet, edit: Edit) -> DocumentSet:
    """Return the documents with one edit applied inside the managed block, or raise EditRefused."""
    if edit.target not in ("skill", "memory"):
        raise EditRefused(f"unknown edit target {edit.target!r}")
    doc = docs.get(edit.target)
    if doc.read_only:
        raise EditRefused(f"{doc.path.name} is read-only; it is left as it is")
    rules = doc.rules()
    if edit.op == "add":
        rule = clean_rule(edit.content, doc.limits)
        _refuse_duplicate(rule, rules)
        rules.append(rule)
    elif edit.op == "replace":
        at = _index(rules, edit.anchor)
        rule = clean_rule(edit.content, doc.limits)
        _refuse_duplicate(rule, rules[:at] + rules[at + 1:])
        rules[at] = rule
    elif edit.op == "delete":
        rules.pop(_index(rules, edit.anchor))
    elif edit.op == "insert_after":
        at = _index(rules, edit.anchor)
        rule = clean_rule(edit.content, doc.limits)
        _refuse_duplicate(rule, rules)
        rules.insert(at + 1, rule)
    else:
        raise EditRefused(f"unknown edit op {edit.op!r}")
    if len(rules) > doc.limits.max_rules and edit.op != "delete":
        raise EditRefused(f"{doc.path.name} already holds its budget of {doc.limits.max_rules} rules")
    new_doc = doc.with_rules(rules)
    size = len(new_doc.encoded())
    if doc.limits.max_bytes is not None and size > doc.limits.max_bytes and size > len(doc.encoded()):
        raise EditRefused(f"{doc.path.name} would exceed {doc.limits.max_bytes} bytes")
    return docs.with_document(new_doc)
