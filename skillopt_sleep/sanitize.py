"""One place that makes untrusted text (model replies, transcript text) safe to show or store.

Three uses, one module:

- ``clean_text`` / ``clean_obj``: what goes into a record on disk (report.json, evidence.jsonl,
  history, the refusal ledger, ``--json`` output). Terminal escape sequences, C0/C1 controls,
  bidi overrides and other invisible format characters are removed; newlines and tabs stay.
  A lone UTF-16 surrogate (which cannot be encoded) becomes U+FFFD.
- ``sanitize``: the same, for a terminal line or the Markdown report, which additionally defuses
  HTML comment markers (so text cannot hide content or forge the managed-block markers), HTML
  tags and ``javascript:`` link targets, so that they show as text when the report is rendered.
- ``rule_problem``: why a proposed rule is not plain Markdown prose (a rule is written into
  CLAUDE.md / AGENTS.md / SKILL.md and read by the agent on every turn), or None. Rules are refused,
  never silently repaired: a reply that smuggles escapes or markup is hostile, and the reason is
  recorded in the report.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

# ESC-introduced sequences: CSI (colours, cursor moves, clear screen), OSC (titles, clipboard
# writes, hyperlinks), DCS/SOS/PM/APC strings, and the two-byte forms; plus the 8-bit C1 forms.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
)
# C0 controls except \t and \n, DEL, C1 controls, bidi embeddings/overrides/isolates and marks,
# zero-width and other invisible format characters, interlinear annotations, tag characters
# (used to smuggle hidden instructions) and the BOM.
_INVISIBLE = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f"
    # the remaining format (Cf) characters: Arabic/Syriac/Kaithi number marks, Egyptian
    # hieroglyph and shorthand format controls, musical beam/slur controls
    "\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
)
_CONTROLS = re.compile(f"[{_INVISIBLE}]")
_SURROGATES = re.compile("[\ud800-\udfff]")
_LINE_SEPARATORS = str.maketrans({"\u2028": "\n", "\u2029": "\n", "\x85": "\n"})


def clean_text(text: Any) -> str:
    """``text`` without escape sequences, control or invisible format characters (keeps \\n, \\t)."""
    if text is None:
        return ""
    text = str(text)
    if text.isascii() and text.isprintable():
        return text  # the common case, at the cost of two C-level scans
    text = text.replace("\r\n", "\n").replace("\r", "\n").translate(_LINE_SEPARATORS)
    text = _ESCAPES.sub("", text)
    text = _CONTROLS.sub("", text)
    return _SURROGATES.sub("\ufffd", text)


def no_surrogates(obj: Any) -> Any:
    """``obj`` with every lone UTF-16 surrogate (a JSON ``"\\ud83d"`` escape without its pair, as
    Node writes when it splits an emoji) replaced by U+FFFD, in strings inside dicts and lists.
    Such a string cannot be encoded as UTF-8, so every write of it would fail."""
    if isinstance(obj, str):
        return _SURROGATES.sub("\ufffd", obj) if _SURROGATES.search(obj) else obj
    if isinstance(obj, dict):
        return {no_surrogates(k): no_surrogates(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [no_surrogates(v) for v in obj]
    return obj


def utf8(text: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate becomes U+FFFD instead of an error."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", text).encode("utf-8")


def clean_obj(obj: Any) -> Any:
    """``clean_text`` applied to every string (keys included) inside dicts, lists and tuples."""
    if isinstance(obj, str):
        return clean_text(obj)
    if isinstance(obj, dict):
        return {clean_obj(k): clean_obj(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clean_obj(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(clean_obj(v) for v in obj)
    return obj


# In rendered Markdown: a link target that runs code when clicked (HTML tags: ``_TAG`` below).
_CODE_LINK = re.compile(r"(?i)(?<=[(<\"'])(\s*)(javascript|vbscript|data):")


def sanitize(text: Any, limit: int | None = None) -> str:
    """Make untrusted text safe for a terminal and a Markdown report.

    ``clean_text``, plus markup defused for rendered Markdown: HTML comment markers (so text cannot
    hide content or forge our managed-block markers), tags (``<img onerror=...>`` shows as text)
    and ``javascript:`` / ``data:`` link targets. ``limit`` caps the length, ending in an ellipsis.
    """
    text = clean_text(text)
    text = text.replace("<!--", "&lt;!--").replace("-->", "--&gt;")
    text = _TAG.sub(lambda m: "&lt;" + m.group(0)[1:], text)  # List<int> stays as it is
    text = _DOCUMENT_WRAPPER.sub(lambda m: "&lt;" + m.group(0)[1:], text)
    text = _CODE_LINK.sub(r"\1\2&#58;", text)
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)].rstrip() + "…"
    return text


# --------------------------------------------------------------------------- rules

# HTML markup: a comment, doctype or processing instruction (``<!``, ``<?``), a closing tag, an
# opening tag that carries attributes (``<x onerror=...>``), or a known HTML element. A generic
# type in prose (``Optional<User>``, ``Map<K, V>``) is none of these.
_HTML_ELEMENTS = (
    "a|abbr|address|area|article|aside|audio|b|base|bdi|bdo|blockquote|body|br|button|canvas|"
    "caption|code|col|details|dialog|div|dl|dt|dd|em|embed|fieldset|figure|font|footer|form|frame|"
    "frameset|h[1-6]|head|header|hr|html|i|iframe|img|input|ins|del|kbd|label|legend|li|link|main|"
    "map|mark|marquee|math|meta|meter|nav|noscript|object|ol|option|p|param|picture|pre|q|s|"
    "samp|script|section|select|small|source|span|strong|style|sub|summary|sup|svg|table|tbody|"
    "td|template|textarea|tfoot|th|thead|title|tr|track|u|ul|var|video|wbr|xmp|plaintext"
)
_TAG = re.compile(
    r"<[!?]|</[A-Za-z][\w:.-]*\s*>"
    r"|<[A-Za-z][\w:.-]*\s[^<>]*=[^<>]*>|<[A-Za-z][\w:.-]*\s+on\w+\s*="
    rf"|<(?:{_HTML_ELEMENTS})(?=[\s/>]|$)",
    re.IGNORECASE,
)
# The prompt wraps documents in <document ...>; a rule must not be able to close that wrapper,
# even inside a code span (prompts are not rendered Markdown).
_DOCUMENT_WRAPPER = re.compile(r"<\s*/?\s*document\b", re.IGNORECASE)
# Link schemes that run code or read local data when a rendered Markdown file is clicked.
_BAD_SCHEME = re.compile(r"(?<![A-Za-z0-9+.-])(?:(?:javascript|vbscript):\S|data:[a-z-]+/|file:/)", re.IGNORECASE)
_IMAGE = re.compile(r"!\[[^\]]*\]\(")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# A numeric character reference renders as any character, invisible ones included.
_ENTITY = re.compile(r"&#(?:[0-9]{1,7}|[xX][0-9A-Fa-f]{1,6});?")


def _unsafe_character(rule: str) -> str | None:
    for ch in rule:
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Cs", "Co") or ch in "\u2028\u2029":
            return f"U+{ord(ch):04X}"
    return None


def rule_problem(rule: str) -> str | None:
    """Why ``rule`` is not plain Markdown prose, or None when it is."""
    char = _unsafe_character(rule)
    if char is not None:
        return f"rule contains a control or invisible format character ({char})"
    if _DOCUMENT_WRAPPER.search(rule):
        return "rule contains a <document> tag (would escape the prompt's document wrapper)"
    if _BAD_SCHEME.search(rule):
        return "rule contains a javascript:, vbscript:, data: or file: link"
    prose = _CODE_SPAN.sub("", rule)  # markup quoted in a code span renders as text
    if _TAG.search(prose):
        return "rule contains HTML markup"
    if _IMAGE.search(prose):
        return "rule contains a Markdown image"
    if _ENTITY.search(prose):
        return "rule contains an HTML character reference"
    return None
