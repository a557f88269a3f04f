"""Named SQL queries: each package keeps its runtime statements in one `queries.sql`.

A block starts with `-- name: <query_name>`, then comment lines saying what it does and its `$1…$n`
parameters, then the statement. `load_queries` reads a file once into a mapping; asking for a name no
block defines raises `UnknownQueryError`. No statement is ever assembled from request text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from state.errors import UnknownQueryError

__all__ = ["Queries", "load_queries", "parse_queries"]

_HEADER = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


def parse_queries(text: str) -> dict[str, str]:
    """Split a queries file into `{name: statement}` (comments kept, trailing `;` removed)."""
    matches = list(_HEADER.finditer(text))
    queries: dict[str, str] = {}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[match.end() : end].strip().rstrip(";").strip()
        name = match.group(1)
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice")
        if not body:
            raise ValueError(f"query {name!r} has no statement")
        queries[name] = body
    return queries


class Queries(Mapping[str, str]):
    """A read-only mapping of query names to statements that names the file on a miss."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._queries = parse_queries(path.read_text(encoding="utf-8"))

    def __getitem__(self, name: str) -> str:
        try:
            return self._queries[name]
        except KeyError:
            raise UnknownQueryError(f"no query named {name!r} in {self.path}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._queries)

    def __len__(self) -> int:
        return len(self._queries)


def load_queries(package_file: str) -> Queries:
    """Load the `queries.sql` beside a package module (pass `__file__`)."""
    return Queries(Path(package_file).resolve().parent / "queries.sql")
