"""How `ac-context brief` prints a brief and its explanation for a person.

The brief's text prints as text (citations such as `[crm.company 8f21]` included), never as rich markup;
the accounting is a table. An explanation prints as a per-source budget bar chart (tokens used against
the source's budget, items dropped), the total against its budget, then one row per item the packer was
given: kept or dropped, the reason, its token cost and its ref, and last the candidates a source cut before
the packer (the relevance floor, the per-source cap, the limit), each with its rule. Each function prints
from the JSON form (a model is dumped first), so a brief a service answered over HTTP prints exactly as one
built here. This module must never decide anything: it only prints what the packer answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from functions.cli._common import console, plain

if TYPE_CHECKING:
    from pydantic import BaseModel

    from context.models import BriefExplanation, ContextBrief

__all__ = ["bar", "show_brief", "show_cut", "show_explanation"]

BAR_WIDTH = 24


def bar(used: int, budget: int | None, width: int = BAR_WIDTH) -> str:
    """A text bar of `used` out of `budget` (full and marked when over it; empty for no budget)."""
    if not budget:
        return "·" * width
    filled = min(width, round(width * used / budget))
    return "█" * filled + "░" * (width - filled)


def _json(value: BaseModel | Mapping[str, Any]) -> Mapping[str, Any]:
    """The JSON form of a brief or an explanation: what the HTTP API answers and what `--json` prints."""
    return value if isinstance(value, Mapping) else value.model_dump(mode="json")


def show_brief(brief: ContextBrief | Mapping[str, Any]) -> None:
    """Print a brief's text and its accounting table (from the model, or its JSON as a service answered it)."""
    result = _json(brief)
    console.print(plain(result["text"]) if result["text"] else Text("(empty brief)", style="dim"))
    table = Table("source", "tokens", "dropped")
    per_source, dropped = result["per_source_tokens"], result["dropped"]
    for source in sorted(set(per_source) | set(dropped)):
        table.add_row(plain(source), str(per_source.get(source, 0)), str(dropped.get(source, 0)))
    console.print(table)
    failed = ", ".join(result["failed_sources"]) or "none"
    console.print(
        plain(f"total {result['tokens']} tokens; failed sources: {failed}; citable rows: {len(result['items'])}")
    )
    if result["dropped_entities"]:
        console.print(plain(f"malformed entities dropped: {result['dropped_entities']}"))


def _ref(ref: Mapping[str, Any] | None) -> str:
    return "" if ref is None else f"{ref['kind']} {ref['id']}"


def show_explanation(value: BriefExplanation | Mapping[str, Any]) -> None:
    """Print the per-source budget bars, then why each item was kept or dropped."""
    explanation = _json(value)
    console.print(Text("\nbudgets", style="bold"))
    chart = Table.grid(padding=(0, 2))
    for spend in explanation["sources"]:
        budget = "not enabled" if spend["budget"] is None else f"{spend['used']}/{spend['budget']}"
        meter = bar(spend["used"], spend["budget"])
        chart.add_row(plain(spend["source"]), meter, budget, f"{spend['dropped']} dropped")
    total, used = explanation["total_budget"], explanation["total_used"]
    chart.add_row(Text("total", style="bold"), bar(used, total), f"{used}/{total}", "")
    console.print(chart)
    table = Table(title="items, in the order the packer was given them", title_justify="left")
    for column in ("#", "source", "tokens", "", "why"):
        table.add_column(column)
    table.add_column("ref", overflow="fold")
    for n, entry in enumerate(explanation["items"], 1):
        verdict = Text("kept", style="green") if entry["kept"] else Text("dropped", style="red")
        why = "" if entry["kept"] else entry["message"]
        ref = plain(_ref(entry["ref"]))
        table.add_row(str(n), plain(entry["source"]), str(entry["tokens"]), verdict, plain(why), ref)
    console.print(table)
    if explanation["cut"]:
        show_cut(explanation)


def show_cut(value: BriefExplanation | Mapping[str, Any]) -> None:
    """Print the candidates the sources cut before the packer, each with its rule, score, rank and tokens."""
    table = Table(title="candidates cut before the packer", title_justify="left")
    for column in ("source", "title", "rule", "score", "rank", "tokens", "why"):
        table.add_column(column)
    table.add_column("ref", overflow="fold")
    for c in _json(value)["cut"]:
        score = "" if c["score"] is None else f"{c['score']:.3f}"
        table.add_row(
            plain(c["source"]), plain(c["title"]), c["rule"], score, str(c["rank"]), str(c["tokens"]),
            plain(c["message"]), plain(_ref(c["ref"])),
        )  # fmt: skip
    console.print(table)
