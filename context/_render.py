"""The text of a brief: the normalisation of source text, the item line, the headings and the notice.

Layout, exactly as rendered (lines joined by a newline)::

    Unavailable sources: knowledge, memory. Their facts are missing from this brief.
    <blank line>
    ## Conversation
    - [crm.company 8f21] Lifecycle stage: customer
    - Title with no ref: body

The notice line appears only when a source failed. Each section is a `## <Heading>` line with one line per
item. An item line is `- `, then `[<kind> <id>] ` when the item has a ref, then `[overdue: review was due
<date>] ` when the item's `review_overdue` is set, then the title, then `: ` and the body when both are
present. The marker is written from the structured date alone: no text can write it, because every bracket
of a title or a body is rewritten. Titles, bodies, ref identifiers and failed source names are normalised: every
bracket becomes `(` or `)` (`[`/`]`, `{`/`}`, and every Unicode opening or closing bracket: the categories
Ps/Pe, which hold the fullwidth, CJK, small, vertical, superscript and subscript forms; any character whose
NFKC form is one of those; the bracket look-alikes `_OPENING`/`_CLOSING` list; and an HTML character
reference that names a bracket, `&#91;`, `&#x5b;`, `&lsqb;`, `&rsqb;`, ..., semicolon or not), one character
(or one reference) for one, so no text can frame a look-alike of the marker (a homoglyph of "overdue" inside
is harmless: nothing can bracket it). The look-alike list is derived, as no confusables table ships with the
project: every character whose UTS #39 skeleton (confusables.txt 14.0.0) is a bracket, letters aside (the
table maps the hiragana く to an angle bracket ornament); every character Unicode names a bracket, parenthesis
or brace piece that can stand beside text; and the frames a hostile test found (⊏⊐ ⊑⊒ ⊂⊃, the dentistry and
box-line corners ⎾⏋ ⎿⏌ ⎸⎹ ▕▏, the syllabics ᒥᒧ ᐸᐳ, the guillemets ‹› «», the tag characters that encode
brackets). ASCII `<`/`>` and the horizontal brackets (⎴, ⏜, ...) stay as written. Every run of whitespace or
control characters (newline, CR, tab, form feed, U+0085, U+2028, U+2029, U+001C-U+001F, ...) becomes one
space, then the text is stripped. So every item line starts with `- `, and only the packer writes a line
that starts with `## `.

This module must never decide what is kept; it only writes and measures text.
"""

from __future__ import annotations

import html
import re
import unicodedata
from datetime import date

from context.models import ContextItem, ContextKind, ResourceRef
from context.tokens import estimate_tokens

__all__ = [
    "HEADINGS",
    "header_cost",
    "header_line",
    "normalise",
    "notice_line",
    "overdue_marker",
    "render_item",
    "written_as_stored",
]

HEADINGS: dict[ContextKind, str] = {
    "conversation": "Conversation",
    "outreach_thread": "Outreach thread",
    "outreach": "Outreach",
    "personal_memory": "Personal memory",
    "application": "Application state",
    "dossier": "Company dossier",
    "definition_summary": "Definitions",
    "knowledge": "Knowledge",
    "memory": "Memory",
    "run_history": "Run history",
}
_BLANK_RUN = re.compile(r"[\s\x00-\x1f\x7f-\x9f]+")
_OPENING = (
    "\u228f\u239b\u239c\u239d\u23a1\u23a2\u23a3\u23a7\u23a8\u23a9\u231c\u231e\u2e02\u2e04\u2e09\u2e0c\u2e1c\u2e20"
    "\u2291\u2282\u23be\u23bf\u23b8\u2595\u14a5\u1438\u2039\u00ab\u23aa\u23b0\U0001d114\U0001d115"
    "\U000e0028\U000e005b\U000e007b"
)
"""Opening-bracket look-alikes outside Ps: ⊏, the bracket pieces ⎛⎜⎝⎡⎢⎣⎧⎨⎩, corners ⌜⌞, ⸂⸄⸉⸌⸜⸠ (Pi); ⊑ ⊂,
the corners ⎾ ⎿, the box lines ⎸ ▕, the syllabics ᒥ ᐸ, the guillemets ‹ «, the curly pieces ⎪ ⎰, the musical
brace and bracket 𝄔 𝄕, and the tag characters of `(`, `[` and `{`."""
_CLOSING = (
    "\u2290\u239e\u239f\u23a0\u23a4\u23a5\u23a6\u23ab\u23ac\u23ad\u231d\u231f\u2e03\u2e05\u2e0a\u2e0d\u2e1d\u2e21"
    "\u2292\u2283\u23cb\u23cc\u23b9\u258f\u14a7\u1433\u203a\u00bb\u23b1"
    "\U000e0029\U000e005d\U000e007d"
)
"""Their closing counterparts: ⊐, ⎞⎟⎠⎤⎥⎦⎫⎬⎭, ⌝⌟, ⸃⸅⸊⸍⸝⸡ (Pf); ⊒ ⊃, ⏋ ⏌, ⎹ ▏, ᒧ ᐳ, › », ⎱, and the tag
characters of `)`, `]` and `}`."""
_SLOW = re.compile(r"[\[\]{}&]")
"""An ASCII text without these (nor doubled spaces or controls) is already normal."""
_REFERENCE = re.compile(r"&(?:#[0-9]{1,8}|#[xX][0-9a-fA-F]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});?")
"""An HTML character reference, its semicolon optional (a browser reads `&#91` as `[`)."""


class _BracketTable(dict[int, str]):
    """`str.translate` table: every bracket to `(` or `)`, learnt per code point on first sight."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        category = unicodedata.category(char)
        folded = unicodedata.normalize("NFKC", char)
        folded = folded if len(folded) == 1 else "\x00"  # a bracket folds to one character, never to several
        if char in "()":
            value = char
        elif category == "Ps" or char in _OPENING or folded in "([{" or unicodedata.category(folded) == "Ps":
            value = "("
        elif category == "Pe" or char in _CLOSING or folded in ")]}" or unicodedata.category(folded) == "Pe":
            value = ")"
        else:
            value = char
        self[code] = value
        return value


_BRACKETS = _BracketTable()


def _reference(match: re.Match[str]) -> str:
    """An HTML character reference that names a bracket, as its parenthesis; any other, as written."""
    reference = match.group()
    decoded = html.unescape(reference if reference.endswith(";") else reference + ";")
    if len(decoded) == 1 and decoded.translate(_BRACKETS) in ("(", ")"):
        return decoded.translate(_BRACKETS)
    return reference


def _unbracketed(text: str) -> str:
    """`text` with every bracket, look-alike and bracket reference rewritten as `(`/`)`."""
    if "&" in text:
        text = _REFERENCE.sub(_reference, text)
    return text.translate(_BRACKETS)


_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate (a JSON `\\ud800` decodes to one): not UTF-8, so it becomes U+FFFD before it is counted."""

_UNSAFE_IN_IDENTIFIER = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")

_MARKER = "- "
_SEPARATOR = ": "


def normalise(text: str) -> str:
    """One line of text: brackets rewritten, every whitespace or control run one space, stripped."""
    if text.isascii() and text.isprintable() and "  " not in text and not _SLOW.search(text):
        return text.strip(" ")  # fast path: the only whitespace is single ASCII spaces
    return _BLANK_RUN.sub(" ", _unbracketed(_SURROGATE.sub("\ufffd", text))).strip()


def written_as_stored(ref: ResourceRef) -> bool:
    """True when `[<kind> <id>]` writes the ref exactly as stored, so a citation of it resolves."""
    return all(
        part and not _UNSAFE_IN_IDENTIFIER.search(part) and _unbracketed(part) == part for part in (ref.kind, ref.id)
    )


def _frame(item: ContextItem) -> tuple[str, str]:
    """The frame (marker, identifier, title, separator) and the normalised body of an item."""
    ident = f"[{normalise(item.ref.kind)} {normalise(item.ref.id)}] " if item.ref is not None else ""
    overdue = "" if item.review_overdue is None else overdue_marker(item.review_overdue) + " "
    title = normalise(item.title)
    body = normalise(item.body)
    separator = _SEPARATOR if title and body else ""
    return f"{_MARKER}{ident}{overdue}{title}{separator}", body


def overdue_marker(review_by: date) -> str:
    """The marker of an item whose document's review date passed; only the packer writes a bracket."""
    return f"[overdue: review was due {review_by.isoformat()}]"


def render_item(item: ContextItem) -> tuple[str, int]:
    """The one rendered line of an item (no newline) and its charge.

    The charge is the measured body `tokens` plus the estimate of the frame (marker, identifier, title,
    separator) and its newline, or the estimate of the whole line and its newline when `tokens` is 0.
    """
    frame, body = _frame(item)
    line = (frame + body).rstrip()
    if item.tokens > 0:
        return line, item.tokens + estimate_tokens(frame + "\n")
    return line, estimate_tokens(line + "\n")


def header_line(kind: ContextKind) -> str:
    """The heading line of a section."""
    return f"## {HEADINGS[kind]}"


def header_cost(kind: ContextKind) -> int:
    """The charge of a section heading, with the blank line before it."""
    return estimate_tokens("\n" + header_line(kind) + "\n")


def notice_line(names: list[str]) -> str:
    """The unavailable-source line that opens a brief when a source did not answer."""
    return f"Unavailable sources: {', '.join(names)}. Their facts are missing from this brief."
