"""The seven sources over application state, built together for the demo and the sources benchmark.

`application_sources(db, dossier=...)` returns conversation, outreach thread, outreach, application,
dossier, definition summary and run history, in class order: the ten of `default_sources` without the
memory and knowledge sources (which need embedders, memories or a user's notes). A caller that must reach
the dossier source (to clear its cache or close it) passes its own. This module must never read a
database at import or construction time.
"""

from __future__ import annotations

from context.models import ContextSource
from context.sources.application import ApplicationContextSource
from context.sources.conversation import ConversationContextSource
from context.sources.definition_summary import DefinitionSummaryContextSource
from context.sources.dossier import DossierContextSource
from context.sources.outreach import OutreachContextSource
from context.sources.outreach_thread import OutreachThreadContextSource
from context.sources.run_history import RunHistoryContextSource
from state.db import Database

__all__ = ["application_sources"]


def application_sources(db: Database, *, dossier: DossierContextSource | None = None) -> list[ContextSource]:
    """The seven application-state sources over `db`, in class order; `dossier` is used as the dossier source."""
    return [
        ConversationContextSource(db),
        OutreachThreadContextSource(db),
        OutreachContextSource(db),
        ApplicationContextSource(db),
        dossier or DossierContextSource(db),
        DefinitionSummaryContextSource(db),
        RunHistoryContextSource(db),
    ]
