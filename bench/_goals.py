"""Every goal a benchmark measures, beside the figure it measured: `bench/results/goals.md`.

A bench module returns, beside its figures, `"goal_report": [goal(...), ...]`, one row per goal, built from
the figures of that same run. `python -m bench` collects the rows of every result on disk into one table
(printed, and written as Markdown), so a reader sees each goal, its figure and whether it was met in one
place; a goal not met carries the note that says what limits it. Nothing here asserts a timing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def goal(
    name: str,
    measured: float | None,
    *,
    at_most: float | None = None,
    at_least: float | None = None,
    unit: str = "",
    note: str = "",
) -> dict[str, Any]:
    """One row: `measured` against its bound (`at_most` or `at_least`); `met` is None when not measured."""
    if (at_most is None) == (at_least is None):
        raise ValueError(f"goal {name!r} needs exactly one of at_most and at_least")
    bound = at_most if at_most is not None else at_least
    target = f"<= {bound:g}{unit}" if at_most is not None else f">= {bound:g}{unit}"
    met = None
    if measured is not None:
        met = measured <= at_most if at_most is not None else measured >= at_least  # type: ignore[operator]
    return {"goal": name, "target": target, "measured": measured, "unit": unit, "met": met, "note": note}


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(results: Iterable[tuple[str, dict[str, Any]]]) -> str:
    """A Markdown table of every `goal_report` row of the results (name, result)."""
    lines = ["| bench | goal | target | measured | met | what limits it |", "|---|---|---|---|---|---|"]
    for bench, result in results:
        for row in result.get("goal_report") or []:
            measured = "not measured" if row["measured"] is None else f"{row['measured']:g}{row['unit']}"
            met = {True: "yes", False: "**no**", None: "-"}[row["met"]]
            cells = (bench, row["goal"], row["target"], measured, met, row["note"])
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
