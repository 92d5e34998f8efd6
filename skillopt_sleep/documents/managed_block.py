"""The documents a night evolves: a skill (SKILL.md) and a memory file (CLAUDE.md, AGENTS.md, ...:
``agents.py`` says whose is which).

Edits touch only the managed block between the markers below; every byte outside it is kept as
it was. Rules inside the block are one bullet line each, and the block stays small: it is read on
every agent turn (rule budget per document; AGENTS.md within Codex's 32 KiB).

Two exceptions, both visible to whoever reads the document (``handwritten.py``): a rule may name a
hand-written line it overrides (rendered ``- <rule> (supersedes: "<line>")``, several as
``"<a>"; "<b>"``), and a skill its owner
opted in to whole-skill editing (``edit_whole_skill``) accepts ``replace_line`` / ``delete_line``
edits of its hand-written lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from skillopt_sleep.documents import handwritten
from skillopt_sleep.documents.agents import AGENT_DOCUMENTS, AGENTS_MD
from skillopt_sleep.documents.context import ContextFile, load_context
from skillopt_sleep.errors import EXIT_CONFIG, UserError
from skillopt_sleep.files import read_regular
from skillopt_sleep.redact import redact
from skillopt_sleep.sanitize import clean_text, rule_problem, utf8
from skillopt_sleep.types import Edit

START = "<!-- skillopt-sleep:learned:start -->"
END = "<!-- skillopt-sleep:learned:end -->"
BLOCK_TITLE = "Learned rules (managed by skillopt-sleep; edit outside this block)"
DEFAULT_SKILL_NAME = "skillopt-sleep-learned"
AGENTS_MD_LIMIT = 32 * 1024
# the most of a document it reads at all: any real CLAUDE.md / AGENTS.md / SKILL.md is far smaller
DOCUMENT_READ_LIMIT = 16 * 1024 * 1024
SKILL_NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
LINE_OPS = ("replace_line", "delete_line")


@dataclass(frozen=True)
class Limits:
    max_rules: int = 12  # per document
    max_rule_chars: int = 300
    max_bytes: int | None = None  # whole-file cap (AGENTS.md: 32 KiB)


class EditRefused(ValueError):
    """An edit that cannot be applied within the managed block's rules."""


class BudgetFull(EditRefused):
    """Refused only because the document already holds its ``Limits.max_rules`` rules."""


@dataclass(frozen=True)
class Document:
    role: str  # "skill" | "memory"
    path: Path
    original: bytes | None  # the live bytes as read; None when the file does not exist
    text: str  # current text (the original, or with edits applied)
    limits: Limits = Limits()
    read_only: bool = False  # the live file has no write bit: no edit is applied to it
    whole_skill: bool = False  # the owner opted this skill in: its hand-written lines may be edited

    @property
    def newline(self) -> str:
        return "\r\n" if "\r\n" in self.text else "\n"

    def rules(self) -> list[str]:
        block = _find_block(self.text)
        if block is None:
            return []
        inner = self.text[block[0] : block[1]]
        return [m.group(1).strip() for m in re.finditer(r"^\s*[-*]\s+(.+?)\s*$", inner, re.MULTILINE)]

    def hand_written(self) -> list[handwritten.Line]:
        return _hand_written(self.text)

    def redacted_hand_written(self) -> list[str]:
        """The hand-written lines as they read once the whole document is redacted (a secret that
        spans lines, such as a private key, is only recognised in its context)."""
        return [line.content for line in _hand_written(redact(clean_text(self.text)))]

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
    # what the agent loads with them on every request, read-only (``context.py``), and the files
    # left out of it, a line each
    context: tuple[ContextFile, ...] = ()
    context_skipped: tuple[str, ...] = ()

    def get(self, role: str) -> Document:
        if role == "skill":
            return self.skill
        if role == "memory":
            return self.memory
        raise ValueError(f"unknown document role {role!r}")

    def with_document(self, doc: Document) -> DocumentSet:
        if doc.role == "skill":
            return replace(self, skill=doc)
        if doc.role == "memory":
            return replace(self, memory=doc)
        raise ValueError(f"unknown document role {doc.role!r}")

    def all(self) -> list[Document]:
        return [self.skill, self.memory]

    def prompt_prefix(self) -> str:
        """What the target model is told: both documents, as the agent would load them."""
        parts = []
        named = [(self.memory.path.name, "memory", self.memory.text)]
        named += [(c.name, "context", c.text) for c in self.context]
        named.append((self.skill.path.name, "skill", self.skill.text))
        for name, role, text in named:
            body = text.strip()
            if body:
                parts.append(f'<document name="{name}" role="{role}">\n{body}\n</document>')
        return "\n\n".join(parts)

    def fingerprint(self) -> str:
        import hashlib

        texts = [self.skill.text, self.memory.text] + [c.name + "\0" + c.text for c in self.context]
        return hashlib.sha256("\0".join(texts).encode("utf-8")).hexdigest()[:16]


def document_paths(
    project: Path,
    agent: str,
    skill_name: str = DEFAULT_SKILL_NAME,
    skill_path: Path | None = None,
    user_level_skill: bool = False,
) -> tuple[Path, Path]:
    """(skill path, memory path) for an agent per DESIGN §5 and ``documents/agents.py``."""
    if agent not in AGENT_DOCUMENTS:
        raise UserError(f"unknown agent {agent!r} (use one of {', '.join(AGENT_DOCUMENTS)})", EXIT_CONFIG)
    documents = AGENT_DOCUMENTS[agent]
    if not SKILL_NAME_RE.match(skill_name) or len(skill_name) > 64:
        raise UserError(
            f"skill name {skill_name!r} must be lowercase letters, digits and hyphens, at most 64 chars",
            EXIT_CONFIG,
        )
    memory = project / documents.memory
    if skill_path is not None:
        return skill_path, memory
    base = Path.home() if user_level_skill else project
    return base / documents.skills / skill_name / "SKILL.md", memory


def _read(role: str, path: Path, limits: Limits) -> Document:
    try:
        data = read_regular(path, DOCUMENT_READ_LIMIT)
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


def load_documents(
    project: Path,
    agent: str = "claude",
    skill_name: str = DEFAULT_SKILL_NAME,
    skill_path: Path | None = None,
    max_rules: int = 12,
    user_level_skill: bool = False,
    whole_skill: bool = False,
) -> DocumentSet:
    """The skill and memory documents of a project; ``whole_skill``: the owner opted this skill in
    to edits of its hand-written lines (never the memory file)."""
    skill_file, memory_file = document_paths(project, agent, skill_name, skill_path, user_level_skill)
    from skillopt_sleep.documents.containment import checked_document

    for path in (skill_file, memory_file):
        checked_document(project, path)  # a link out of the project is refused before any read
    base = Limits(max_rules=max_rules)
    memory_limits = replace(base, max_bytes=AGENTS_MD_LIMIT) if memory_file.name == AGENTS_MD else base
    skill = _read("skill", skill_file, base)
    if skill.original is None:
        name = skill_file.parent.name
        if skill_file.name != "SKILL.md" or not SKILL_NAME_RE.match(name) or len(name) > 64:
            raise UserError(
                f"cannot create {skill_file}: a new skill is a SKILL.md in a folder whose name is "
                "lowercase letters, digits and hyphens (at most 64 characters)",
                EXIT_CONFIG,
            )
        skill = replace(skill, text=new_skill_text(name))
    skill = replace(skill, whole_skill=whole_skill)
    memory = _read("memory", memory_file, memory_limits)
    if memory.original is None and memory_file.suffix == RULE_FILE_SUFFIX:
        memory = replace(memory, text=new_rule_file_text())
    context = load_context(project, agent, memory_file)
    return DocumentSet(skill=skill, memory=memory, context=context.files, context_skipped=context.skipped)


def whole_skill_opted_in(skill_name: str, opted: list[str] | tuple[str, ...], flag: bool = False) -> bool:
    """A night may edit this skill's hand-written lines: ``--edit-whole-skill`` for this run, or
    the skill named in the ``edit_whole_skill`` config list."""
    return flag or skill_name in opted


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


RULE_FILE_SUFFIX = ".mdc"  # a Cursor project rule: front matter says when Cursor reads it


def new_rule_file_text() -> str:
    """A fresh Cursor project rule that Cursor reads on every request (``alwaysApply: true``; a
    rule without it is read only when its globs or description match)."""
    description = "Rules learned overnight by skillopt-sleep from this project's recurring tasks"
    return f"---\ndescription: {description}\nalwaysApply: true\n---\n"


_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


def _hand_written(text: str) -> list[handwritten.Line]:
    try:
        block = _find_block(text)
    except UserError:
        block = None
    return handwritten.hand_written_lines(text, block, (START, END))


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
            "own line, or remove both",
            EXIT_CONFIG,
        )
    return starts[0], ends[0]


def _set_block(text: str, rules: list[str], nl: str) -> str:
    body = nl + f"## {BLOCK_TITLE}" + nl + nl + "".join(f"- {r}{nl}" for r in rules)
    block = _find_block(text)
    if block is not None:
        return text[: block[0]] + body + text[block[1] :]
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


def _quotable(line: str, doc: Document, what: str) -> None:
    """A hand-written line a rule may quote or an edit may remove: bounded, plain, no secret (on
    its own or as part of one that spans lines)."""
    problem = rule_problem(line)
    if len(line) > handwritten.MAX_LINE_CHARS:
        problem = f"longer than {handwritten.MAX_LINE_CHARS} characters"
    elif "<!--" in line or "-->" in line:
        problem = "holds an HTML comment"
    elif handwritten.SEPARATOR in line:
        problem = f"holds {handwritten.SEPARATOR}, which separates the lines a rule overrides"
    elif redact(line) != line or line not in doc.redacted_hand_written():
        problem = "holds what looks like a secret"
    if problem is not None:
        raise EditRefused(f"the {what} line {problem}")


def _new_rule(docs: DocumentSet, doc: Document, edit: Edit) -> str:
    """The rule as it goes into the managed block, with its ``(supersedes: "...")`` suffix when it
    overrides a hand-written line, which must exist verbatim in either document (a rule scoped to a
    skill's work may override a line of the memory file)."""
    rule = clean_rule(edit.content, doc.limits)
    wanted = handwritten.superseded_lines(edit.supersedes)
    if not wanted:
        return rule
    for line in wanted:
        holders = [d for d in docs.all() if handwritten.find_line(d.hand_written(), line)]
        if not holders:
            names = " or ".join(d.path.name for d in docs.all())
            raise EditRefused(f"supersedes {line[:80]!r}, which is not a hand-written line of {names}")
        _quotable(line, holders[0], "superseded")
    return handwritten.render_supersedes(rule, wanted)


def _edit_line(doc: Document, edit: Edit) -> Document:
    """A ``replace_line`` / ``delete_line`` edit of a hand-written line of an opted-in skill."""
    if doc.role != "skill" or not doc.whole_skill:
        raise EditRefused(
            f"{edit.op} edits hand-written text, and whole-skill editing is off for "
            f"{doc.path.name} (opt in with edit_whole_skill or --edit-whole-skill)"
        )
    matches = handwritten.find_line(doc.hand_written(), edit.anchor)
    if not matches:
        raise EditRefused(f"anchor {edit.anchor[:80]!r} is not a hand-written line of {doc.path.name}")
    if len(matches) > 1:
        raise EditRefused(
            f"anchor {edit.anchor[:80]!r} is {len(matches)} lines of {doc.path.name}; which one is meant is ambiguous"
        )
    line = matches[0]
    _quotable(line.content, doc, "edited")
    if edit.op == "delete_line":
        return replace(doc, text=handwritten.delete_line(doc.text, line))
    content = clean_rule(edit.content, doc.limits)
    if content == line.content or redact(content) != content:
        raise EditRefused(
            "the new line is the old one" if content == line.content else "the new line holds what looks like a secret"
        )
    return replace(doc, text=handwritten.replace_line(doc.text, line, content))


def apply_edit(docs: DocumentSet, edit: Edit) -> DocumentSet:
    """Return the documents with one edit applied, or raise EditRefused. Rules go inside the managed
    block; only ``replace_line`` / ``delete_line`` on an opted-in skill touch hand-written lines."""
    if edit.target not in ("skill", "memory"):
        raise EditRefused(f"unknown edit target {edit.target!r}")
    doc = docs.get(edit.target)
    if doc.read_only:
        raise EditRefused(f"{doc.path.name} is read-only; it is left as it is")
    if edit.op in LINE_OPS:
        return docs.with_document(_checked(doc, _edit_line(doc, edit), _find_block(doc.text) is not None))
    rules = doc.rules()
    if edit.op == "add":
        rule = _new_rule(docs, doc, edit)
        _refuse_duplicate(rule, rules)
        rules.append(rule)
    elif edit.op == "replace":
        at = _index(rules, edit.anchor)
        rule = _new_rule(docs, doc, edit)
        _refuse_duplicate(rule, rules[:at] + rules[at + 1 :])
        rules[at] = rule
    elif edit.op == "delete":
        rules.pop(_index(rules, edit.anchor))
    elif edit.op == "insert_after":
        at = _index(rules, edit.anchor)
        rule = _new_rule(docs, doc, edit)
        _refuse_duplicate(rule, rules)
        rules.insert(at + 1, rule)
    else:
        raise EditRefused(f"unknown edit op {edit.op!r}")
    if len(rules) > doc.limits.max_rules and edit.op != "delete":
        raise BudgetFull(f"{doc.path.name} already holds its budget of {doc.limits.max_rules} rules")
    return docs.with_document(_checked(doc, doc.with_rules(rules), True))


def _checked(doc: Document, new_doc: Document, has_block: bool) -> Document:
    """``new_doc`` unless it is over its byte cap or its managed block (``has_block``) no longer
    reads back: a line that opens a code fence would hide the markers."""
    size = len(new_doc.encoded())
    if doc.limits.max_bytes is not None and size > doc.limits.max_bytes and size > len(doc.encoded()):
        raise EditRefused(f"{doc.path.name} would exceed {doc.limits.max_bytes} bytes")
    try:
        block = _find_block(new_doc.text)
    except UserError:
        block = None
    if has_block and block is None:
        raise EditRefused(f"the edit would break the managed block of {doc.path.name}")
    return new_doc
