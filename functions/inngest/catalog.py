"""Every Inngest function of the app, created against one client and one service slot.

Every function runs under `functions.inngest.failures.QuietFailures`: no failure it sends holds a stack or
a path. This module must never open anything: the functions read the slot when a step runs.
"""

from __future__ import annotations

from typing import Any

import inngest

from functions._services import ServiceSlot
from functions.inngest.context_segment import make_context_segment_brief
from functions.inngest.failures import install_quiet_failures
from functions.inngest.knowledge_ingest import make_knowledge_ingest
from functions.inngest.knowledge_ingest_batch import make_knowledge_ingest_batch
from functions.inngest.knowledge_sweep import make_knowledge_sweep
from functions.inngest.knowledge_switch import make_knowledge_reembed, make_knowledge_switch
from functions.inngest.memory_expiry import make_memory_expiry_sweep

__all__ = ["build_functions"]


def build_functions(client: inngest.Inngest, slot: ServiceSlot) -> list[inngest.Function[Any]]:
    """The functions the app serves at `/api/inngest`, each sending failures without a stack or a path."""
    install_quiet_failures(client)
    return [
        make_context_segment_brief(
            client,
            builder=lambda: slot.get().builder,
            metrics=lambda: slot.get().metrics,
            receipts=lambda: slot.get().receipts,
        ),
        make_knowledge_ingest(client, slot),
        make_knowledge_ingest_batch(client, slot),
        make_knowledge_sweep(client, slot),
        make_knowledge_switch(client, slot),
        make_knowledge_reembed(client, slot),
        make_memory_expiry_sweep(client, slot),
    ]
