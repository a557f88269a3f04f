"""docs/decisions.md stays navigable: every decision is a question, and the index lists each one."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("decisions_index", ROOT / "scripts" / "decisions_index.py")
assert _spec is not None and _spec.loader is not None
decisions_index = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(decisions_index)

TEXT = (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8")
HEADINGS = re.findall(r"(?m)^### (.+)$", TEXT)


def test_the_index_lists_every_decision_as_generated() -> None:
    assert decisions_index.with_index(TEXT) == TEXT, "run `make decisions-index`"


def test_every_decision_heading_states_its_question() -> None:
    not_questions = [h for h in HEADINGS if not h.rstrip().endswith("?")]
    assert not_questions == []


def test_no_two_decisions_share_a_question() -> None:
    assert len(HEADINGS) == len(set(HEADINGS))


def test_the_generator_replaces_a_stale_index_and_keeps_the_rest() -> None:
    doc = "# D\n\nintro\n\n## Index\n\nold line\n\n## Part (issue 1)\n\n### Why this?\n\nbecause\n"
    fresh = decisions_index.with_index(doc)
    assert "old line" not in fresh
    assert "- [Why this?](#why-this)" in fresh
    assert fresh.endswith("## Part (issue 1)\n\n### Why this?\n\nbecause\n")
    assert decisions_index.with_index(fresh) == fresh
