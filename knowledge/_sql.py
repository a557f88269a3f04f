"""The named statements of knowledge's database half, and the one place their driver errors are translated.

This module must never hold a statement itself: every statement lives in `knowledge/queries.sql`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg

from knowledge.db_errors import KnowledgeStoreError, translate_knowledge_db_error
from state.queries import Queries, load_queries

__all__ = ["QUERIES", "translated"]

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
