"""The options schema each of the ten context sources declares, keyed by source name.

A policy's `options` dictionary is validated against these schemas at publish time, strictly and with no
extra key allowed. The DB-backed source modules import their schema from here, so the publish check of the
fixed policies runs with a registry built from these schemas alone, with no database.

No schema here may ever declare an organization, a user, or a row filter: the subject travels in the
request, and the registry refuses a source whose schema declares such a field.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "OVERDUE_OPTION",
    "SOURCE_OPTIONS",
    "ConversationOptions",
    "DossierOptions",
    "EmptyOptions",
    "KnowledgeOptions",
    "MemoryOptions",
    "RunHistoryOptions",
    "SourceOptions",
    "drops_overdue_items",
]

OVERDUE_OPTION: Final = "overdue"
"""The option that says what the packer does with an item of an overdue document: `mark` or `drop`."""


class SourceOptions(BaseModel):
    """The base of every options schema: strict, frozen, and no undeclared key."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class EmptyOptions(SourceOptions):
    """The schema of a source that takes no option."""


class KnowledgeOptions(SourceOptions):
    """Which knowledge scopes a search joins; the organization itself always comes from the subject."""

    include_platform: bool = False
    """Join the platform documents (organization_id IS NULL)."""
    include_organization: bool = False
    """Join the documents of the subject's organization."""
    min_relevance: float | None = Field(default=None, ge=0.0, le=1.0)
    """Drop hits neither search half finds relevant (knowledge.search); None keeps the measured default."""
    keep_top: int | None = Field(default=None, ge=0, le=1000)
    """Keep a hit either half ranks within its own first `keep_top` unless its relevance is under 0.83 of the
    floor (knowledge.search); 0 applies the floor alone; None keeps the measured default (0)."""
    per_source: int | None = Field(default=None, ge=1, le=1000)
    """The most chunks one document places by rank (its other chunks then fill what room the limit leaves);
    None keeps the measured default."""
    overdue: Literal["mark", "drop"] = "mark"
    """A chunk of a document past its review date: `mark` renders it with the overdue marker, `drop` leaves
    it out and counts the drop (reason `overdue`)."""


class MemoryOptions(SourceOptions):
    """How the memory sources order what they read; the count cap is `spec.limit` (default 20)."""

    order: Literal["recency", "relevance"] = "recency"
    """`recency`: newest first (the spec's V1). `relevance`: ranked against the question by knowledge's hybrid
    scoring (BM25 over the memory text, the live model's vector), every other rule unchanged."""


class DossierOptions(SourceOptions):
    """Which parts of the Company dossier the source returns."""

    include_user: bool = False
    """Add the user section; a subject with no user reads none whatever this says."""
    include_documents: bool = True
    """Add one item per active organization document and the count item."""


class RunHistoryOptions(SourceOptions):
    """How far back run history reads; the item cap is `spec.limit` (default 5), never an option."""

    lookback_hours: int = Field(default=24, ge=1, le=720)
    """The window of run creation times, in hours."""


class ConversationOptions(SourceOptions):
    """Whether the conversation summary joins the recent messages; the message cap is `spec.limit`."""

    include_summary: bool = True
    """Add the conversation summary item beside the recent messages."""


def drops_overdue_items(options: Mapping[str, Any]) -> bool:
    """Whether a spec's (published, so validated) options drop the items of overdue documents."""
    return options.get(OVERDUE_OPTION) == "drop"


SOURCE_OPTIONS: Mapping[str, type[BaseModel]] = MappingProxyType(
    {
        "application": EmptyOptions,
        "conversation": ConversationOptions,
        "definition_summary": EmptyOptions,
        "dossier": DossierOptions,
        "knowledge": KnowledgeOptions,
        "memory": MemoryOptions,
        "outreach": EmptyOptions,
        "outreach_thread": EmptyOptions,
        "personal_memory": MemoryOptions,
        "run_history": RunHistoryOptions,
    }
)
"""The options schema of every registered source name (names equal their kind)."""
