"""knowledge_search before and after migration 0107 (issue 45): the planning bench on both migration sets.

Runs `bench.bench_search_planning.run` at 3,000 and 10,000 chunks, once on the migrations without 0107 (a
copy in a temporary folder: 0103's dynamic statement) and once on all of them, and prints, per run, the
main statement's calls, plans, planning and execution ms per call, the top-level call's execution ms, and
the prologue's lexeme statement. `.venv/bin/python -m bench.search_planning_before_after`. Nothing here
asserts a timing.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench import bench_search_planning as planning
from state.migrate import MIGRATIONS_DIR


def _pick(statements: list[dict[str, Any]], head: str) -> dict[str, Any]:
    return next(s for s in statements if s["head"].startswith(head))


async def main() -> dict[str, Any]:
    """Both migration sets at both sizes; a JSON-able dict keyed `<set>@<chunks>`."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ac-mig-") as folder:
        before = Path(folder)
        for path in MIGRATIONS_DIR.iterdir():
            if not path.name.startswith("0107_"):
                shutil.copy(path, before / path.name)
        for chunks in (3_000, 10_000):
            for label, directory in (("dynamic_0103", before), ("static_0107", MIGRATIONS_DIR)):
                result = await planning.run(chunks=chunks, migrations=directory)
                statements = result["statements"]
                out[f"{label}@{chunks}"] = {
                    "wall_ms": result["wall_ms_per_search"],
                    "main": _pick(statements, "WITH dense_walk"),
                    "top_exec_ms": next(s for s in statements if s["toplevel"])["exec_ms_per_call"],
                    "lexemes": _pick(statements, "SELECT array_agg(t.lexeme"),
                }
                print(label, chunks, json.dumps(out[f"{label}@{chunks}"]), flush=True)
    return out


if __name__ == "__main__":
    asyncio.run(main())
