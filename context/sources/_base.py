"""What the sources over one `Database` share: the database they read and their default options model.

`DatabaseSource` is the constructor and the two attributes of the `ContextSource` protocol that every
database-backed source writes the same way.

This module must never read the database, never build an item, and never decide what a source reads:
each source keeps its own `retrieve`.
"""

from __future__ import annotations

from pydantic import BaseModel

from context.options import EmptyOptions
from state.db import Database

__all__ = ["DatabaseSource"]


class DatabaseSource:
    """A context source that reads one `Database`; with no options unless it names its own model."""

    name: str
    """The registered source name, equal to its kind (each subclass sets it)."""
    options_schema: type[BaseModel] = EmptyOptions
    """The model its policy options are validated against."""

    def __init__(self, db: Database) -> None:
        self._db = db
