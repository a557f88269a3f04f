"""The console's layout check, for any browser test: no badge wraps, no table cell breaks a word across lines.

`broken_words(page)` measures the page as Chromium laid it out: each `.badge` must sit on one line box, and
each word (a run of letters, digits and underscores: "knowledge", "relevance_floor") in a table cell must
sit on one line box, judged with `Range.getClientRects()` (a range over a word split across two lines has
rects on two lines). A line may end after punctuation ("test/", "hash-"), as text does; a run of non-space
characters longer than `MAX_WORD` (ids, hostile one-token payloads) may break anywhere: nothing else keeps
it inside the page. `assert_layout_whole(page, where)` fails with what broke. This module must never change
the page.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_WORD", "assert_layout_whole", "broken_words"]

MAX_WORD = 30
"""The longest word (characters) a cell must keep on one line; a UUID (36) may break."""

_MEASURE = """(maxWord) => {
  const lines = (range) => {
    const tops = [];
    for (const r of range.getClientRects()) {
      if (r.width < 0.5 || r.height < 0.5) continue;
      if (!tops.some(t => Math.abs(t - r.top) < 2)) tops.push(r.top);
    }
    return tops.length;
  };
  const broken = [];
  for (const badge of document.querySelectorAll('.badge')) {
    const range = document.createRange();
    range.selectNodeContents(badge);
    if (lines(range) > 1) broken.push({kind: 'badge', word: badge.textContent, cell: badge.textContent});
  }
  for (const cell of document.querySelectorAll('td, th')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const run of node.data.matchAll(/\\S+/g)) {
        if (run[0].length > maxWord) continue;
        for (const m of run[0].matchAll(/[\\p{L}\\p{N}_]+/gu)) {
          const range = document.createRange();
          range.setStart(node, run.index + m.index);
          range.setEnd(node, run.index + m.index + m[0].length);
          if (lines(range) > 1) broken.push({kind: 'cell', word: m[0], cell: cell.textContent.trim().slice(0, 60)});
        }
      }
    }
  }
  return broken;
}"""


async def broken_words(page: Any) -> list[dict[str, str]]:
    """Every badge on more than one line and every cell word of at most `MAX_WORD` characters split across lines."""
    found: list[dict[str, str]] = await page.evaluate(_MEASURE, MAX_WORD)
    return found


async def assert_layout_whole(page: Any, where: str) -> None:
    """Fail naming each wrapped badge and each word a table cell broke, on the page as laid out now."""
    broken = await broken_words(page)
    assert not broken, f"a badge wrapped or a cell broke a word on {where}: {broken[:8]}"
