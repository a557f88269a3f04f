"""What `ac-context ingest` reads and prints: the files under its paths, and the summary of a run.

Directories are walked recursively and take only the files the extractor reads by their ending
(`knowledge.documents.extract.DOCUMENT_SUFFIXES`: PDF, Markdown, HTML, plain text); hidden files and folders, files
without an ending (`LICENSE`) and other types are skipped and counted in one line (`Walk.skipped_line`).
A file named on the command line is taken when the extractor reads its name (one without an ending is read
as plain text), and refused otherwise (`document_type_unsupported`, one line). `--include` keeps only the
files whose path relative to the directory (or whose name) matches one of its globs, `--exclude` drops
matches.
Every document-derived string (file names, failure reasons) is escaped before rich renders it, so a file
named `[red]x` prints as itself. This module must never hold ingestion logic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from functions.cli.errors import CliError

__all__ = ["Walk", "collect_files", "print_summary"]

_READS = "PDF, Markdown, HTML or plain text"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_WALKED = "PDF, Markdown, HTML and text"


def _matches(relative: Path, globs: Sequence[str]) -> bool:
    text = relative.as_posix()
    return any(fnmatch(text, glob) or fnmatch(relative.name, glob) for glob in globs)


@dataclass
class Walk:
    """The files to ingest, and what the folder walk skipped: a count per reason, with one example each."""

    files: list[Path] = field(default_factory=list)
    """Every file to ingest, each once, in a stable order."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Files the walk left out, per reason (`hidden`, `without an extension`, `.json`...)."""
    examples: dict[str, str] = field(default_factory=dict)
    """One skipped file name per reason."""

    def skip(self, reason: str, example: str) -> None:
        """Count one skipped file under `reason`."""
        self.skipped[reason] += 1
        self.examples.setdefault(reason, example)

    def skipped_line(self) -> str | None:
        """One line saying how many files the walk skipped and why; None when it skipped none."""
        from knowledge.documents.extract import (
            DOCUMENT_SUFFIXES,  # here: `ac-context --help` must not load the extractor
        )

        total = sum(self.skipped.values())
        if not total:
            return None
        parts = [
            f"{n} {reason} (e.g. {self.examples[reason]})"
            for reason, n in sorted(self.skipped.items(), key=lambda item: (-item[1], item[0]))
        ]
        files = "file" if total == 1 else "files"
        return (
            f"skipped {total} {files} a folder walk does not take: {'; '.join(parts)}. It takes {_WALKED} files "
            f"({' '.join(sorted(DOCUMENT_SUFFIXES))}); name a file without an extension to read it as text"
        )


def _reason(relative: Path) -> str | None:
    """Why the walk skips this file (None: it takes it)."""
    from knowledge.documents.extract import DOCUMENT_SUFFIXES

    if any(part.startswith(".") for part in relative.parts):
        return "hidden"
    suffix = relative.suffix.lower()
    if suffix in DOCUMENT_SUFFIXES:
        return None
    return "without an extension" if not suffix else f"of type {suffix}"


def collect_files(paths: Sequence[Path], include: Sequence[str], exclude: Sequence[str]) -> Walk:
    """Every document named or under a named directory, filtered by the globs, each once, in a stable order.

    A named file the extractor cannot read by its name is refused (`document_type_unsupported`).
    """
    from knowledge.documents.extract import read_by_name

    walk = Walk()
    found: dict[Path, None] = {}
    for path in paths:
        if path.is_dir():
            candidates = sorted((f, f.relative_to(path)) for f in path.rglob("*") if f.is_file())
        else:
            if not read_by_name(path.name):
                raise CliError(
                    "document_type_unsupported",
                    f"{path}: files ending in {path.suffix.lower()} are not read; ingest {_READS}",
                )
            candidates = [(path, Path(path.name))]
        for file, relative in candidates:
            if include and not _matches(relative, include):
                continue
            if exclude and _matches(relative, exclude):
                continue
            reason = _reason(relative) if path.is_dir() else None
            if reason is not None:
                hidden = next((p for p in relative.parts if p.startswith(".")), relative.name)
                walk.skip(reason, hidden if reason == "hidden" else relative.name)
                continue
            found.setdefault(file.resolve(), None)
    walk.files = list(found)
    return walk


def print_summary(console: Console, rows: Sequence[dict[str, Any]]) -> None:
    """One line per document that did not simply become ready (its path whole), then the totals per status.

    A line is printed unwrapped (the terminal folds it), so a path or source id is never cut or split by a
    table column at any width.
    """
    for row in rows:
        if row["status"] != "ready":
            line = Text(row["status"], style="red" if row["status"] == "failed" else "yellow")
            line.append(f"  {_CONTROL.sub('', row['file'])}")
            counted = f"  {row['chunks']} chunks" if row.get("chunks") else ""
            reason = f"  {row['failure_reason']}" if row.get("failure_reason") else ""
            line.append(_CONTROL.sub("", f"  source {row['source_id']}{counted}{reason}"), style="dim")
            console.print(line, soft_wrap=True)
    totals: dict[str, int] = {}
    for row in rows:
        totals[row["status"]] = totals.get(row["status"], 0) + 1
    chunks = sum(int(row.get("chunks") or 0) for row in rows)
    from rich.table import Table  # only a summary draws a table

    table = Table(title="ingestion summary", title_justify="left")
    for column in ("status", "documents", "chunks"):
        table.add_column(column)
    for status in sorted(totals):
        table.add_row(f"[bold]total {escape(status)}[/]", str(totals[status]), str(chunks) if status == "ready" else "")
    console.print(table)
