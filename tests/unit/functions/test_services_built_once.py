"""The memory service and the ingestion kit are built in one place (`functions._services`), not by each face.

An interface that builds its own `MemoryService` (the demo's had no embedder and no expiry) or its own
`Ingestion` kit drifts from the others; `Services.memory` and `Services.ingestion` are the one build.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FUNCTIONS = ROOT / "functions"
BUILDER = FUNCTIONS / "_services.py"
NOT_YET = {
    # the demo's knowledge chapter ingests four documents on one thread, with no worker pool, on purpose
    "functions/demo/knowledge.py",
}


def _builds(path: Path) -> list[str]:
    """Where `path` constructs a `MemoryService` or an `Ingestion` kit (`Ingestion(...)`, `Ingestion.configured`)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        if name in ("MemoryService", "Ingestion") or (owner == "Ingestion" and name == "configured"):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_only_the_services_build_the_memory_service_and_the_ingestion_kit() -> None:
    offenders = [
        hit
        for path in sorted(FUNCTIONS.rglob("*.py"))
        if path != BUILDER and str(path.relative_to(ROOT)) not in NOT_YET
        for hit in _builds(path)
    ]
    assert offenders == []


def test_the_services_do_build_them() -> None:
    """The check above finds a construction where there is one (an empty scan would pass anything)."""
    assert len(_builds(BUILDER)) == 2


def test_the_one_memory_service_has_the_settings_expiry_and_the_live_embedder() -> None:
    """What the demo's own build lacked: every face's memories expire and are compared alike."""
    from typing import Any, cast

    from functions._services import configured_memory_service, default_embedders
    from memory.expiry import ExpiryPolicy
    from state.settings import load_settings

    settings = load_settings(memory_observation_ttl="P3D")
    service = configured_memory_service(cast(Any, object()), settings, default_embedders)
    assert service.expiry == ExpiryPolicy.from_settings(settings) and service.embed is not None
