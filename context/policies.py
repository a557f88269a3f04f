"""The fixed platform policies: `front_door` and `outreach_planner`.

The Front Door owns the list of sources a turn may read and their values. It holds no outreach class and
no source that runs a fresh exploratory CRM, email, web or research search: application state resolves the
explicit refs of the turn only. Its knowledge source has the budget the spec decided, 1,500 tokens across up
to eight chunks, with both the platform and the organization scope. The Outreach planner policy is the one
policy that holds the two outreach classes.

The person's words are required in both: conversation is the one class that is never cut, and a brief
without it answers a question nobody asked, so a conversation read that fails fails the build (503 on the
front door, a retried step for a run) instead of handing over a brief about nothing. The outreach planner's
thread is required for the same reason: its newest reply is what the plan answers.

Both pass the publish check of a schema-only registry. This module must never carry a tenancy filter, and
never mark the dossier required.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from context.models import ContextPolicy, ContextSourceSpec

__all__ = [
    "FRONT_DOOR",
    "FRONT_DOOR_KNOWLEDGE_LIMIT",
    "FRONT_DOOR_KNOWLEDGE_TOKENS",
    "FRONT_DOOR_MEMORY_ORDER",
    "FRONT_DOOR_NAME",
    "NAMED_POLICIES",
    "OUTREACH_PLANNER",
    "OUTREACH_PLANNER_NAME",
]

FRONT_DOOR_NAME = "front_door"
OUTREACH_PLANNER_NAME = "outreach_planner"
FRONT_DOOR_KNOWLEDGE_TOKENS = 1500
"""Open decision 2 of the spec, decided for the Front Door: 1,500 tokens per turn."""
FRONT_DOOR_KNOWLEDGE_LIMIT = 8
"""Open decision 2 of the spec, decided for the Front Door: up to eight chunks."""
FRONT_DOOR_MEMORY_ORDER = "relevance"
"""The Front Door reads `memory` by relevance (docs/decisions.md, "Memory"): on REALTALK's real
conversations the evidence of a question reached the brief 0.5 % of the time by recency and 36 % by relevance
(the held-out LoCoMo observations: 3.6 % and 62.7 %). `personal_memory` stays newest first: a person's standing
preferences are few, and each one applies to every turn, asked about or not."""

FRONT_DOOR = ContextPolicy(
    sources=[
        # The person's words: a turn without them answers a question nobody asked, so a failure fails the
        # build (required: 503 `required_context_source_failed`, and the caller retries).
        ContextSourceSpec(name="conversation", required=True, token_budget=1500, limit=20),
        ContextSourceSpec(name="personal_memory", token_budget=400),
        ContextSourceSpec(name="application", token_budget=1200, limit=60),
        ContextSourceSpec(name="dossier", token_budget=600, limit=5),
        ContextSourceSpec(name="definition_summary", token_budget=400, limit=10),
        ContextSourceSpec(
            name="knowledge",
            token_budget=FRONT_DOOR_KNOWLEDGE_TOKENS,
            limit=FRONT_DOOR_KNOWLEDGE_LIMIT,
            options={"include_platform": True, "include_organization": True},
        ),
        ContextSourceSpec(name="memory", token_budget=500, limit=20, options={"order": FRONT_DOOR_MEMORY_ORDER}),
        ContextSourceSpec(name="run_history", token_budget=400, limit=5, options={"lookback_hours": 24}),
    ],
    total_token_budget=6000,
    refresh_on_resume=True,
)
"""The fixed platform policy of a Front Door turn."""

OUTREACH_PLANNER = ContextPolicy(
    sources=[
        # The person's words and the thread's newest reply: a plan without them answers nobody, so required.
        ContextSourceSpec(name="conversation", required=True, token_budget=800, limit=10),
        ContextSourceSpec(name="outreach_thread", required=True, token_budget=1500, limit=20),
        ContextSourceSpec(name="outreach", token_budget=800, limit=20),
        ContextSourceSpec(name="personal_memory", token_budget=400),
        ContextSourceSpec(name="application", token_budget=1200, limit=60),
        ContextSourceSpec(name="dossier", token_budget=800, options={"include_documents": False}),
        ContextSourceSpec(
            name="knowledge",
            token_budget=800,
            limit=4,
            options={"include_platform": False, "include_organization": True},
        ),
        ContextSourceSpec(name="memory", token_budget=500, limit=20),
        ContextSourceSpec(name="run_history", token_budget=400, limit=5, options={"lookback_hours": 168}),
    ],
    total_token_budget=6000,
    refresh_on_resume=True,
)
"""The one policy that holds the outreach classes."""

NAMED_POLICIES: Mapping[str, ContextPolicy] = MappingProxyType(
    {FRONT_DOOR_NAME: FRONT_DOOR, OUTREACH_PLANNER_NAME: OUTREACH_PLANNER}
)
"""The fixed platform policies by name (the spec's ContextPolicy has no name field)."""
