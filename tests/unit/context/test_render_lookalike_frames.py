"""Every listed look-alike of a bracket renders in a brief as `(` or `)` (context/_render.py).

Each character is written out here, not read from the module, so dropping one from `_OPENING`/`_CLOSING`
fails its case: the bracket pieces, corners and Pi/Pf brackets listed before, the frames a hostile test
found reaching briefs verbatim (⊑…⊒, ⎾…⏋, ⎿…⏌, ᒥ…ᒧ, ⎸…⎹, ▕…▏, ⊂…⊃, ‹…›, «…», ᐸ…ᐳ), the characters whose
confusable skeleton or Unicode name is a bracket, and the HTML references of a bracket (`&#91;`, `&lsqb;`,
`&#x5b;`, ..., with or without the semicolon).
"""

from __future__ import annotations

import pytest

from context.models import ContextItem, ResourceRef
from context.packer import ContextPacker
from tests.unit.context.helpers import policy, spec

MARKER = "overdue: review was due 2020-01-06"

OPENING = [
    "\u228f", "\u239b", "\u239c", "\u239d", "\u23a1", "\u23a2", "\u23a3", "\u23a7", "\u23a8", "\u23a9",
    "\u231c", "\u231e", "\u2e02", "\u2e04", "\u2e09", "\u2e0c", "\u2e1c", "\u2e20",  # listed before
    "\u2291", "\u23be", "\u23bf", "\u14a5", "\u23b8", "\u2595", "\u2282", "\u2039", "\u00ab", "\u1438",  # found
    "\u23aa", "\u23b0", "\U0001d114", "\U0001d115",  # named a bracket piece; 𝄔's skeleton is `{`
    "\U000e0028", "\U000e005b", "\U000e007b",  # tag characters of ( [ {
    "[", "{", "\uff3b", "\u3010", "\u2772", "\u2768", "\u2774", "\u3014", "\u301a", "\u27e6", "\ufe47",  # Ps
]  # fmt: skip
CLOSING = [
    "\u2290", "\u239e", "\u239f", "\u23a0", "\u23a4", "\u23a5", "\u23a6", "\u23ab", "\u23ac", "\u23ad",
    "\u231d", "\u231f", "\u2e03", "\u2e05", "\u2e0a", "\u2e0d", "\u2e1d", "\u2e21",
    "\u2292", "\u23cb", "\u23cc", "\u14a7", "\u23b9", "\u258f", "\u2283", "\u203a", "\u00bb", "\u1433",
    "\u23b1",
    "\U000e0029", "\U000e005d", "\U000e007d",
    "]", "}", "\uff3d", "\u3011", "\u2773", "\u2769", "\u2775", "\u3015", "\u301b", "\u27e7", "\ufe48",
]  # fmt: skip
FRAMES = [
    ("\u2291", "\u2292"), ("\u23be", "\u23cb"), ("\u23bf", "\u23cc"), ("\u14a5", "\u14a7"), ("\u23b8", "\u23b9"),
    ("\u2595", "\u258f"), ("\u2282", "\u2283"), ("\u2039", "\u203a"), ("\u00ab", "\u00bb"), ("\u1438", "\u1433"),
    ("&#91;", "&#93;"), ("&lsqb;", "&rsqb;"), ("&#x5b;", "&#x5d;"), ("&#X5B;", "&#X5D;"), ("&#91", "&#93"),
    ("&lbrack;", "&rbrack;"), ("&lcub;", "&rcub;"), ("&#123;", "&#125;"), ("&#0091;", "&#x0005d;"),
    ("&#12304;", "&#12305;"),
]  # fmt: skip


def _brief_text(title: str, body: str = "") -> str:
    item = ContextItem(
        source="knowledge", kind="knowledge", title=title, body=body, ref=ResourceRef(kind="knowledge_source", id="s1"),
        tokens=0,
    )  # fmt: skip
    return ContextPacker().pack([item], policy(spec("knowledge", 500))).text


@pytest.mark.parametrize("char", OPENING, ids=[f"U+{ord(c):04X}" for c in OPENING])
def test_each_listed_opening_look_alike_renders_as_an_opening_parenthesis(char: str) -> None:
    text = _brief_text(f"{char}{MARKER}) due", f"x {char}{MARKER})")
    assert f"- [knowledge_source s1] ({MARKER}) due: x ({MARKER})" in text.splitlines(), text


@pytest.mark.parametrize("char", CLOSING, ids=[f"U+{ord(c):04X}" for c in CLOSING])
def test_each_listed_closing_look_alike_renders_as_a_closing_parenthesis(char: str) -> None:
    text = _brief_text(f"({MARKER}{char} due", f"x ({MARKER}{char}")
    assert f"- [knowledge_source s1] ({MARKER}) due: x ({MARKER})" in text.splitlines(), text


@pytest.mark.parametrize(("opening", "closing"), FRAMES)
def test_each_look_alike_frame_from_the_issue_renders_in_parentheses(opening: str, closing: str) -> None:
    text = _brief_text(f"{opening}{MARKER}{closing}", "Pay within 7 days")
    assert f"- [knowledge_source s1] ({MARKER}): Pay within 7 days" in text.splitlines(), text


def test_a_reference_to_anything_but_a_bracket_and_plain_text_stay_as_written() -> None:
    text = _brief_text("AT&T &amp; R&D", "&lt;b&gt; &#60; &copy; 3 < 4 > 2, \u304f \u00bd")
    assert "- [knowledge_source s1] AT&T &amp; R&D: &lt;b&gt; &#60; &copy; 3 < 4 > 2, \u304f \u00bd" in text
