"""The context sources, one module per kind, and the registry of all ten for one process.

`default_sources(db, embedders=...)` builds every source over the `Database` (the knowledge and memory sources also
take the model-id-to-embedder lookup, the process default when None); `default_registry(...)` wraps them
in a `ContextSourceRegistry`. Their names equal their kinds. This module must never read a database at
import or construction time.
"""

from __future__ import annotations

from collections.abc import Callable

from context.models import ContextSource
from context.registry import ContextSourceRegistry
from context.sources._query_vectors import once_per_build
from context.sources.application import ApplicationContextSource
from context.sources.conversation import ConversationContextSource
from context.sources.definition_summary import DefinitionSummaryContextSource
from context.sources.dossier import DossierContextSource
from context.sources.knowledge import KnowledgeContextSource
from context.sources.memory import MemoryContextSource
from context.sources.outreach import OutreachContextSource
from context.sources.outreach_thread import OutreachThreadContextSource
from context.sources.personal_memory import PersonalMemoryContextSource
from context.sources.run_history import RunHistoryContextSource
from knowledge.embedding.registry import Embedder, get_embedder
from state.db import Database

__all__ = ["default_registry", "default_sources"]


def default_sources(db: Database, *, embedders: Callable[[str], Embedder] | None = None) -> list[ContextSource]:
    """All ten sources over `db`, in class order; `embedders` maps a model id to its embedder.

    The three sources that embed the question share one embedding of it per build (`context._query_vectors`).
    """
    embedders = once_per_build(embedders or get_embedder)
    return [
        ConversationContextSource(db),
        OutreachThreadContextSource(db),
        OutreachContextSource(db),
        PersonalMemoryContextSource(db, embedders),
        ApplicationContextSource(db),
        DossierContextSource(db),
        DefinitionSummaryContextSource(db),
        KnowledgeContextSource(db, embedders),
        MemoryContextSource(db, embedders),
        RunHistoryContextSource(db),
    ]


def default_registry(db: Database, *, embedders: Callable[[str], Embedder] | None = None) -> ContextSourceRegistry:
    """A registry of `default_sources(db)`."""
    return ContextSourceRegistry(default_sources(db, embedders=embedders))
