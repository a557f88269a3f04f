"""The database half's errors: drawn in the docstring, stable codes, SQLSTATEs translated in one place."""

from __future__ import annotations

import asyncpg
import pytest

from knowledge import errors
from knowledge._sql import translate_knowledge_db_error
from knowledge.errors import (
    KnowledgeError,
    KnowledgeInputError,
    KnowledgeStoreError,
    LiveModelChangedError,
    NoLiveModelError,
)

ERRORS = [getattr(errors, n) for n in errors.__all__ if isinstance(getattr(errors, n), type)]


def test_the_tree_in_the_docstring_names_every_error_and_its_code() -> None:
    doc = errors.__doc__ or ""
    for error in ERRORS:
        assert issubclass(error, KnowledgeError)
        assert error.__name__ in doc and error.code in doc, error
    assert len({e.code for e in ERRORS}) == len(ERRORS)


@pytest.mark.parametrize(
    ("sqlstate", "expected"),
    [("KS001", NoLiveModelError), ("KS002", LiveModelChangedError), ("22023", KnowledgeInputError)],
)
def test_the_sqlstates_of_the_knowledge_sql_are_translated(sqlstate: str, expected: type[Exception]) -> None:
    exc = asyncpg.PostgresError.new({"C": sqlstate, "M": "message from the function", "S": "ERROR"})
    translated = translate_knowledge_db_error(exc)
    assert type(translated) is expected and "message from the function" in str(translated)


def test_any_other_database_error_is_a_retryable_store_error() -> None:
    exc = asyncpg.PostgresError.new({"C": "40001", "M": "serialization failure", "S": "ERROR"})
    translated = translate_knowledge_db_error(exc)
    assert isinstance(translated, KnowledgeStoreError) and translated.retryable
