"""`state.errors`: the shared root's message rule and the one translation of driver errors."""

from __future__ import annotations

import asyncpg
import pytest

from context.errors import ContextError, ContextMisuseError
from functions.errors import FunctionsError, ServiceNotReadyError
from knowledge.errors import KnowledgeError, KnowledgeInputError
from memory.errors import MemoryMisuseError, MemoryStoreError
from state.errors import (
    CodedError,
    DatabaseError,
    DatabaseUnavailableError,
    MigrationError,
    StateError,
    translated_db_errors,
)


def test_every_root_shares_the_coded_error_rule_and_keeps_its_own_tree() -> None:
    for root, child in (
        (StateError, MigrationError),
        (ContextError, ContextMisuseError),
        (MemoryStoreError, MemoryMisuseError),
        (KnowledgeError, KnowledgeInputError),
        (FunctionsError, ServiceNotReadyError),
    ):
        assert root.__bases__ == (CodedError,), "each package root subclasses the shared root directly"
        assert str(child()) == (child.__doc__ or "").strip(), "a message defaults to the class docstring"
        assert str(child("said")) == "said"
    assert not issubclass(ContextError, StateError) and not issubclass(MemoryStoreError, StateError)


def test_a_driver_error_leaves_the_block_as_a_database_error_with_its_cause() -> None:
    original = asyncpg.UniqueViolationError("duplicate key")
    with pytest.raises(DatabaseError) as caught, translated_db_errors():
        raise original
    assert type(caught.value) is DatabaseError and caught.value.__cause__ is original


def test_a_lost_socket_leaves_the_block_as_database_unavailable() -> None:
    with pytest.raises(DatabaseUnavailableError), translated_db_errors():
        raise ConnectionResetError("peer closed")


def test_any_other_error_passes_through_untranslated() -> None:
    with pytest.raises(KeyError), translated_db_errors():
        raise KeyError("not the database")
