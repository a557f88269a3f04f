"""The goal table `make bench` prints: each goal beside its figure, met or not, and a refusal of a bad goal."""

from __future__ import annotations

import pytest

from bench._goals import goal, render


def test_a_goal_is_met_only_on_the_right_side_of_its_bound() -> None:
    assert goal("p50", 9.9, at_most=10, unit=" ms")["met"] is True
    assert goal("p50", 10.1, at_most=10, unit=" ms")["met"] is False
    assert goal("ratio", 1.0, at_least=1.0, unit="x")["met"] is True
    assert goal("ratio", 0.99, at_least=1.0, unit="x")["met"] is False
    assert goal("ratio", None, at_least=1.0)["met"] is None


def test_a_goal_needs_exactly_one_bound() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        goal("both", 1.0, at_most=2, at_least=0)
    with pytest.raises(ValueError, match="exactly one"):
        goal("neither", 1.0)


def test_the_table_lists_every_row_of_every_result_with_its_note_and_escapes_pipes() -> None:
    results = [
        ("ingest", {"goal_report": [goal("docs/s", 238.0, at_least=650, unit=" docs/s", note="HNSW | live")]}),
        ("packer", {"no": "goals"}),
        ("search", {"goal_report": [goal("p50", 9.0, at_most=10, unit=" ms"), goal("p99", None, at_most=25)]}),
    ]
    lines = render(results).splitlines()
    assert lines[2] == "| ingest | docs/s | >= 650 docs/s | 238 docs/s | **no** | HNSW \\| live |"
    assert lines[3] == "| search | p50 | <= 10 ms | 9 ms | yes |  |"
    assert lines[4] == "| search | p99 | <= 25 | not measured | - |  |"
    assert len(lines) == 5
