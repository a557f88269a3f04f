"""Whether an error means the database connection is lost: the one test the API and the console share.

This module must never decide what to answer: the interfaces do (503 `database_unavailable`).
"""

from __future__ import annotations

import asyncpg

from state.errors import DatabaseUnavailableError

__all__ = ["DATABASE_ERRORS", "cause_chain", "is_database_outage"]

DATABASE_ERRORS: tuple[type[BaseException], ...] = (
    DatabaseUnavailableError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
    asyncpg.InterfaceError,
)
"""Errors that only a lost or refused database connection raises."""


def cause_chain(exc: BaseException) -> list[BaseException]:
    """`exc` and every error it was raised from or during, each once."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def is_database_outage(exc: BaseException) -> bool:
    """Whether `exc`, or anything in its cause chain, is an error only a lost database connection raises."""
    return any(isinstance(e, DATABASE_ERRORS) for e in cause_chain(exc))
