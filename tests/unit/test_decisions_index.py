"""docs/decisions.md stays navigable: every decision is a question, and the index lists every subject."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("decisions_index", ROOT / "scripts" / "decisions_index.py")
assert _spec is not None and _spec.loader is not None
decisions_index = importlib.util.module_from_spec(_spec)
sys.modules["decisions_index"] = decisions_index  # its dataclass looks its module up
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
    assert "- [Part (issue 1)](#part-issue-1): 1 decision\n" in fresh
    assert fresh.endswith("## Part (issue 1)\n\n### Why this?\n\nbecause\n")
    assert decisions_index.with_index(fresh) == fresh


def test_a_superseded_entry_is_marked_in_the_index() -> None:
    doc = (
        "# D\n\n## Index\n\n## Subject\n\n### Why now?\n\nthe rule\n\n"
        "### Why then?\n\n**Superseded** by [Why now?](#why-now).\n\nthe old rule\n\n"
        "### Why again?\n\nnot superseded: **Superseded** later in the text does not count\n"
    )
    fresh = decisions_index.with_index(doc)
    assert "- [Subject](#subject): 3 decisions, 1 superseded\n" in fresh, "only an entry that opens with the mark"


SUBJECTS = re.split(r"(?m)^(?=## )", TEXT)


def test_every_superseded_entry_points_at_an_earlier_entry_of_its_subject_or_another() -> None:
    """A superseded entry links the entries that replaced it; within its subject it comes after them."""
    anchors: dict[str, tuple[int, int]] = {}
    seen: dict[str, int] = {}
    problems = []
    for number, subject in enumerate(SUBJECTS):
        for position, heading in enumerate(re.findall(r"(?m)^#{2,3} (.+)$", subject)):
            anchors[decisions_index.slug(heading, seen)] = (number, position)
    for number, subject in enumerate(SUBJECTS):
        for position, entry in enumerate(re.split(r"(?m)^(?=### )", subject)[1:], start=1):
            first = entry.partition("\n")[2].strip().partition("\n")[0]
            if not first.startswith("**Superseded** by ["):
                continue
            targets = re.findall(r"\]\(#([^)]+)\)", first)
            if not targets:
                problems.append((entry.partition("\n")[0], "no link"))
            for target in targets:
                where = anchors.get(target)
                if where is None:
                    problems.append((entry.partition("\n")[0], f"unknown anchor {target}"))
                elif where[0] == number and where[1] >= position:
                    problems.append((entry.partition("\n")[0], f"placed before {target}"))
    assert problems == []


def test_the_decisions_stay_within_a_third_of_the_size_they_had_when_filed_by_history() -> None:
    # 396 KB when the file was filed by issue; a subject's entry is the question, the choice, the reason, the
    # figure and the test, and a decision that grows past this budget is a sign an old one should go.
    assert len(TEXT.encode("utf-8")) <= 132_000
