"""What `ac-context ingest` reads and prints: the files under its paths, and the summary of a run.

Directories are walked recursively (hidden files and folders skipped); `--include` keeps only the files
whose path relative to the directory (or whose name) matches one of its globs, `--exclude` drops matches.
Every document-derived string (file names, failure reasons) is escaped before rich renders it, so a file
named `[red]x` prints as itself. This module must never hold ingestion logic.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

__all__ = ["collect_files", "summary_table"]


def _matches(relative: Path, globs: Sequence[str]) -> bool:
    text = relative.as_posix()
    return any(fnmatch(text, glob) or fnmatch(relative.name, glob) for glob in globs)


def collect_files(paths: Sequence[Path], include: Sequence[str], exclude: Sequence[str]) -> list[Path]:
    """Every file named or under a named directory, filtered by the globs, each once, in a stable order."""
    found: dict[Path, None] = {}
    for path in paths:
        if path.is_dir():
            candidates = sorted(
                (f, f.relative_to(path))
                for f in path.rglob("*")
                if f.is_file() and not any(part.startswith(".") for part in f.relative_to(path).parts)
            )
        else:
            candidates = [(path, Path(path.name))]
        for file, relative in candidates:
            if include and not _matches(relative, include):
                continue
            if exclude and _matches(relative, exclude):
                continue
            found.setdefault(file.resolve(), None)
    return list(found)


def summary_table(rows: Sequence[dict[str, Any]]) -> Table:
    """One line per document that did not simply become ready, then the totals per status."""
    table = Table(title="ingestion summary", show_lines=False)
    for column in ("file", "status", "chunks", "reason"):
        table.add_column(column)
    for row in rows:
        if row["status"] != "ready":
            table.add_row(
                escape(row["file"]), escape(row["status"]), str(row.get("chunks") or ""),
                escape(row.get("failure_reason") or ""),
            )  # fmt: skip
    totals: dict[str, int] = {}
    for row in rows:
        totals[row["status"]] = totals.get(row["status"], 0) + 1
    chunks = sum(int(row.get("chunks") or 0) for row in rows)
    for status in sorted(totals):
        table.add_row(
            f"[bold]total {escape(status)}[/]", str(totals[status]), str(chunks) if status == "ready" else "", ""
        )
    return table
