"""The named statements of knowledge's database half, and the one place their driver errors are translated.

The SQLSTATEs the knowledge SQL raises map to the errors of `knowledge.errors` here and nowhere else. This
module must never hold a statement itself (every statement lives in `knowledge/queries.sql`), and never
lets a driver error into another module's signature.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg

from knowledge.errors import (
    KnowledgeInputError,
    KnowledgeRuntimeError,
    KnowledgeStoreError,
    LiveModelChangedError,
    NoLiveModelError,
    SourceNotFoundError,
)
from state.queries import Queries, load_queries

__all__ = ["QUERIES", "translate_knowledge_db_error", "translated"]

QUERIES: Queries = load_queries(__file__)
"""Every named statement of `knowledge/queries.sql`."""


@contextmanager
def translated() -> Iterator[None]:
    """Re-raise a driver error as the knowledge error for it, the original kept as `__cause__`."""
    try:
        yield
    except asyncpg.PostgresError as exc:
        raise translate_knowledge_db_error(exc) from exc
    except (OSError, asyncpg.InterfaceError) as exc:
        raise KnowledgeStoreError(f"knowledge store unavailable: {exc}") from exc


_BY_SQLSTATE: dict[str, type[KnowledgeRuntimeError | KnowledgeInputError]] = {
    "KS001": NoLiveModelError,
    "KS002": LiveModelChangedError,
}


_SOURCE_GONE = frozenset({"knowledge_chunks_source_id_fkey", "knowledge_source_models_source_id_fkey"})
"""The foreign keys a chunk or readiness write breaks when its source was deleted meanwhile."""


def translate_knowledge_db_error(exc: asyncpg.PostgresError) -> KnowledgeRuntimeError | KnowledgeInputError:
    """The knowledge error for a driver error (raise it `from exc`)."""
    error_type = _BY_SQLSTATE.get(getattr(exc, "sqlstate", "") or "")
    message = getattr(exc, "message", None) or str(exc)
    if error_type is not None:
        return error_type(message)
    if getattr(exc, "sqlstate", "") == "23503" and getattr(exc, "constraint_name", None) in _SOURCE_GONE:
        return SourceNotFoundError(f"the knowledge source was deleted while it was written: {message}")
    if getattr(exc, "sqlstate", "") == "22023":
        return KnowledgeInputError(message)
    return KnowledgeStoreError(f"knowledge store error: {message}")
