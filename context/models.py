"""The contracts of the context layer: request, policy, source spec, item, brief and the subject key.

These are the shapes the spec's "Contracts" section writes, under the names ARCHITECTURE.md fixes. The
policy and its source specs are strict (no coercion from strings, floats or booleans) and round-trip
through JSON, because they are frozen in a run snapshot and travel through Inngest step results.

This module must never read a database, call a model or carry a tenancy filter in a policy: the subject
travels in the request, and every source filters through `request.subject`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal, Protocol, runtime_checkable
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from state.refs import ResourceRef, make_subject_key

__all__ = [
    "CLASS_ORDER",
    "KEYLESS_KINDS",
    "MAX_CONTEXT_ITEM_LIMIT",
    "MAX_TOKEN_BUDGET",
    "BriefExplanation",
    "ContextBrief",
    "ContextItem",
    "ContextKind",
    "ContextPolicy",
    "ContextRequest",
    "ContextSource",
    "ContextSourceSpec",
    "ContextSubject",
    "CutCandidate",
    "CutRule",
    "DropReason",
    "ExplainedItem",
    "ExplainingContextSource",
    "ResourceRef",
    "SourceSpend",
    "make_subject_key",
]

MAX_CONTEXT_ITEM_LIMIT = 999
"""MAX_ROWS - 1: a cap at PostgREST's MAX_ROWS would ask for rows one read cannot answer."""

MAX_TOKEN_BUDGET = 100_000_000
"""The largest `token_budget` or `total_token_budget` a policy may name (far above any model's window)."""

ContextKind = Literal[
    "application",
    "conversation",
    "definition_summary",
    "dossier",
    "knowledge",
    "memory",
    "outreach",
    "outreach_thread",
    "personal_memory",
    "run_history",
]

CLASS_ORDER: tuple[ContextKind, ...] = (
    "conversation",
    "outreach_thread",
    "outreach",
    "personal_memory",
    "application",
    "dossier",
    "definition_summary",
    "knowledge",
    "memory",
    "run_history",
)
"""The fact owners, strongest first: the packer spends, dedupes upward and lays out in this order."""

KEYLESS_KINDS: frozenset[ContextKind] = frozenset({"conversation", "run_history"})
"""Kinds that create no subject_key, so they never win or lose a dedupe."""


@dataclass(frozen=True)
class ContextSubject:
    """The four fields every source filters through; the tenancy is `organization_id`."""

    organization_id: UUID
    """The tenancy every source filters by."""
    user_id: UUID | None = None
    """The person who asks, or None for a trigger run."""
    trigger_id: UUID | None = None
    """The trigger that started the run, or None."""
    definition_id: UUID | None = None
    """The definition of the run; None for a front door turn."""

    @classmethod
    def of_actor(cls, organization_id: UUID, user_id: UUID | None) -> ContextSubject:
        """The subject of a front door turn: an actor, with no run, no trigger and no definition."""
        return cls(organization_id=organization_id, user_id=user_id, trigger_id=None, definition_id=None)

    @classmethod
    def for_run(
        cls,
        *,
        organization_id: UUID,
        definition_id: UUID,
        user_id: UUID | None = None,
        trigger_id: UUID | None = None,
    ) -> ContextSubject:
        """The subject of a run, which always names its own definition."""
        return cls(
            organization_id=organization_id,
            user_id=user_id,
            trigger_id=trigger_id,
            definition_id=definition_id,
        )


@dataclass(frozen=True)
class ContextRequest:
    """What a build reads for: the subject, the query and the refs already in scope."""

    subject: ContextSubject
    """Every source filters through this."""
    query: str
    """The user text, or the run input summary."""
    entities: list[ResourceRef]
    """What is already in scope."""
    run_id: UUID | None = None
    """The current run, or None for a front door turn."""
    conversation_id: UUID | None = None
    """The conversation of the turn, if any."""


class ContextSourceSpec(BaseModel):
    """One source of a policy: its name, switches, budget, item cap and options."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: str
    """The registered source name."""
    enabled: bool = True
    """A disabled source is never resolved and never read."""
    required: bool = False
    """A failure here fails the run."""
    token_budget: int = Field(ge=0, le=MAX_TOKEN_BUDGET)
    """The most tokens this source's items may spend."""
    limit: int | None = Field(default=None, ge=0, le=MAX_CONTEXT_ITEM_LIMIT)
    """The item cap; None uses the source default."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Validated against the source's declared schema at publish time."""


class ContextPolicy(BaseModel):
    """Enabled sources, per source budgets, the total budget and the section order."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    sources: list[ContextSourceSpec]
    """The sources, in policy order."""
    total_token_budget: int = Field(default=0, ge=0, le=MAX_TOKEN_BUDGET)
    """The hard cap on every item and heading of the brief."""
    refresh_on_resume: bool = True
    """Rebuild the brief when a segment resumes after a wait."""
    page_order: list[ContextKind] = Field(default_factory=list)
    """The section order of the text; kinds it omits follow in class order. No kind twice."""

    @field_validator("page_order")
    @classmethod
    def _no_kind_twice(cls, value: list[ContextKind]) -> list[ContextKind]:
        seen: set[str] = set()
        for kind in value:
            if kind in seen:
                raise ValueError(f"page_order names {kind!r} twice")
            seen.add(kind)
        return value


class ContextItem(BaseModel):
    """One structured fact a source returns; only the packer turns it into prose."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    """Which source produced it."""
    kind: ContextKind
    """Its fact class."""
    title: str
    """A short title."""
    body: str
    """The fact itself."""
    subject_key: str | None = None
    """Precedence and dedupe; an empty key is no key."""
    ref: ResourceRef | None = None
    """The row behind the item."""
    body_refs: list[ResourceRef] = Field(default_factory=list)
    """The other rows the body names."""
    recorded_at: datetime | None = None
    """When the fact was recorded."""
    tokens: int = Field(default=0, ge=0, strict=True)
    """The measured cost of the body alone; 0 makes the packer estimate the whole line."""
    rank_in_section: int = Field(default=0, strict=True)
    """A higher rank renders lower in its section; it never changes the spend."""
    review_overdue: date | None = None
    """The review date its document passed (set by its source from the stored date, never from text); the
    packer writes the overdue marker from it, or drops the item when its spec says `overdue: drop`."""
    placed_by: str | None = None
    """The source's rule that placed the item, when it says one (knowledge: `rank`, or `cap_fill` for a chunk
    past its document's cap that fills room no other document took); explain names it, the text never does."""

    @model_validator(mode="after")
    def _keyless_kinds_have_no_key(self) -> ContextItem:
        if self.kind in KEYLESS_KINDS and self.subject_key:
            raise ValueError(f"a {self.kind} item creates no subject_key")
        return self


class ContextBrief(BaseModel):
    """The packed brief, and the pressure it reports without storing the prompt."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, use_attribute_docstrings=True)

    text: str
    """The rendered brief."""
    items: list[ResourceRef]
    """The citable rows: each kept item's ref and its body_refs, written exactly as stored."""
    tokens: int
    """The true cost of the text, the unavailable-source line included."""
    per_source_tokens: dict[str, int]
    """Tokens spent per source that appears in the items (headings excluded)."""
    dropped: dict[str, int]
    """Items dropped per source that appears in the items."""
    failed_sources: list[str]
    """Sources that did not answer, in policy order."""
    dropped_citations: int = 0
    """Refs of kept items the brief could not write as stored, so they are not citable."""
    dropped_entities: int = 0
    """Malformed entities the entry point's normalizer dropped before the build (`state.refs.normalize_refs`)."""

    @classmethod
    def empty(cls) -> ContextBrief:
        """A brief with no text, no item and no failure."""
        return cls(text="", items=[], tokens=0, per_source_tokens={}, dropped={}, failed_sources=[])


DropReason = Literal[
    "kept", "source_not_enabled", "overdue", "subject_lost", "source_budget_spent", "total_budget_spent"
]
"""Why the packer kept or dropped one item: the five drop causes, or `kept`."""


class ExplainedItem(BaseModel):
    """What the packer did with one item it was given, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    source: str
    """The item's source."""
    kind: ContextKind
    """The item's class."""
    ref: ResourceRef | None
    """The row behind the item, if any."""
    title: str
    """The item's title, as the source gave it."""
    tokens: int
    """What its line costs (body and frame; a heading is never counted here)."""
    kept: bool
    """True when the item is in the brief."""
    reason: DropReason
    """`kept`, or the cause of the drop."""
    winner_source: str | None = None
    """For `subject_lost`: the source of the item that kept the subject."""
    winner_kind: ContextKind | None = None
    """For `subject_lost`: the class of the item that kept the subject."""
    message: str
    """The reason in words, e.g. `same subject lost to application of class application`."""


class SourceSpend(BaseModel):
    """The spend of one source against its budget."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    source: str
    """The source name."""
    used: int
    """Tokens its kept items spent."""
    budget: int | None
    """Its token budget, or None when no enabled spec names it."""
    kept: int
    """Items kept."""
    dropped: int
    """Items dropped."""


CutRule = Literal["relevance_floor", "per_source_cap", "beyond_limit"]
"""Why a source cut a candidate before the packer saw it: under the relevance floor, past the per-source
cap of one document, or ranked past the source's item limit."""


class CutCandidate(BaseModel):
    """A candidate a source found and cut before the packer, and the rule that cut it (explain mode only)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    source: str
    """The source that found it."""
    kind: ContextKind
    """The class the item would have had."""
    ref: ResourceRef | None
    """The row behind it, if any."""
    title: str
    """Its title, as the item would have carried it."""
    tokens: int
    """Its measured token count."""
    rank: int
    """Its 1-based place in the source's candidate order (best first)."""
    score: float | None = None
    """The source's score for it (knowledge: the fused score), when the source has one."""
    rule: CutRule
    """The rule that cut it."""
    message: str
    """The rule in words, e.g. `fused score 0.21 under the relevance floor 0.30`."""


class BriefExplanation(BaseModel):
    """Why a brief holds what it holds: one entry per item given to the packer, in the order given.

    Computed by the packer in the same pass as the brief; never stored, never logged, and never part of
    the brief's text or accounting.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    items: list[ExplainedItem]
    """One entry per item the packer was given, in the order given."""
    sources: list[SourceSpend]
    """Per source spend, in policy order, then sources no enabled spec names by name."""
    total_budget: int
    """The policy's total token budget."""
    total_used: int
    """The brief's tokens (headings and the unavailable-source line included)."""
    cut: list[CutCandidate] = []
    """Candidates the sources found and cut before the packer, in policy order, each source's best first."""

    @classmethod
    def empty(cls, total_budget: int = 0) -> BriefExplanation:
        """The explanation of a brief that was given nothing."""
        return cls(items=[], sources=[], total_budget=total_budget, total_used=0)


@runtime_checkable
class ContextSource(Protocol):
    """A retriever of structured items; it never writes prose and never reads a filter from its spec."""

    @property
    def name(self) -> str:
        """The registered source name, equal to its kind."""
        ...

    @property
    def options_schema(self) -> type[BaseModel]:
        """The pydantic model its policy options are validated against."""
        ...

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        """Return this source's items for the request's subject."""
        ...


@runtime_checkable
class ExplainingContextSource(ContextSource, Protocol):
    """A source that can also say which candidates it cut before the packer (used by explain mode only)."""

    async def retrieve_explained(
        self, request: ContextRequest, spec: ContextSourceSpec
    ) -> tuple[list[ContextItem], list[CutCandidate]]:
        """Return the same items as `retrieve`, and the candidates it cut, each with its rule."""
        ...
