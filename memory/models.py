"""The shapes of durable memory: the tool input, the invocation, the stored revision and the live read row.

`MemorySubjectKeyPart` is the one type of a subject ref's `kind` and `id`: a string that is not blank (by
the shared list in `memory._blank`), holds no `:` and no null byte. The table CHECK and `parse_stored_refs`
state the same rules, and a test holds all three to one table of cases. `label` joins no key, so it stays
free text and may hold a colon. Those rules are the stored shape, which a read must tolerate.

A model writes a stricter shape, `CanonicalSubjectRef`: its `kind` is one of the closed set
`state.ids.ENTITY_KINDS` (a kind no resolver owns would be a memory nobody reads) and its `id` is canonical
UUID text, so no look-alike key (`crm\u2024company:…`, `crm.company:\u00a0<uuid>:…`, an upper-case id) is
ever made. A stored element outside that shape still parses as a `MemorySubjectRef`; the read guard then
drops its one memory.

This module must never read the database, and never accept a subject key from a caller: the service makes
the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from memory._blank import BLANK_CHARACTERS, is_blank
from state.durations import parse_duration
from state.ids import CANONICAL_UUID_PATTERN, EntityKind
from state.refs import ResourceRef

__all__ = [
    "ATTRIBUTE_PATTERN",
    "MAX_MEMORY_TEXT",
    "AgentMemory",
    "CanonicalSubjectRef",
    "LiveMemory",
    "MemoryCandidate",
    "MemoryScope",
    "MemorySubjectKeyPart",
    "MemorySubjectRef",
    "ParsedRefs",
    "RankedMemory",
    "RelevanceQuery",
    "ToolInvocation",
    "attribute_of",
    "check_key_part",
    "is_memory_attribute",
    "namespace_of",
    "parse_stored_refs",
]

MemoryScope = Literal["user", "organization"]

ATTRIBUTE_PATTERN = r"(observation|preference)(\.[a-z0-9_]+)+"
"""A namespaced memory attribute, e.g. `preference.language`; the table CHECK anchors the same pattern."""
_ATTRIBUTE = re.compile(ATTRIBUTE_PATTERN)
MAX_ATTRIBUTE = 120
MAX_MEMORY_TEXT = 4000
"""The longest memory text, in characters (the table CHECK `memories_text_length` agrees)."""


def is_memory_attribute(value: str) -> bool:
    """True when `value` is a namespaced memory attribute (`observation.` or `preference.`)."""
    return len(value) <= MAX_ATTRIBUTE and _ATTRIBUTE.fullmatch(value) is not None


def namespace_of(attribute: str) -> Literal["observation", "preference"]:
    """The namespace of a memory attribute: `observation` or `preference` (ValueError for neither)."""
    namespace = attribute.split(".", 1)[0]
    if namespace == "observation":
        return "observation"
    if namespace == "preference":
        return "preference"
    raise ValueError(f"{attribute!r} is in neither the observation. nor the preference. namespace")


def check_key_part(value: str) -> str:
    """Return `value` when it may be a subject key part, else raise ValueError naming the rule."""
    if "\x00" in value:
        raise ValueError("a subject key part must not hold a null byte")
    if ":" in value:
        raise ValueError("a subject key part must not hold ':'")
    if is_blank(value):
        raise ValueError("a subject key part must not be empty or blank")
    return value


def _no_null_byte(value: str | None) -> str | None:
    if value is not None and "\x00" in value:
        raise ValueError("a label must not hold a null byte (jsonb cannot store one)")
    return value


MemorySubjectKeyPart = Annotated[str, Field(strict=True), AfterValidator(check_key_part)]
"""A `kind` or `id` of a memory subject ref: not blank, no `:`, no null byte."""


class MemorySubjectRef(BaseModel):
    """The one row a memory is about: `kind` and `id` join the subject key; `label` is free text."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    kind: MemorySubjectKeyPart
    """The entity kind, e.g. `crm.company`; as stored any kind parses, and the read guard drops unknown ones."""
    id: MemorySubjectKeyPart
    """The row id as the owning table stores it."""
    label: Annotated[str | None, AfterValidator(_no_null_byte)] = None
    """Display text; never part of the key, never used to match."""

    def as_resource_ref(self, *, with_label: bool = True) -> ResourceRef:
        """The same row as a `ResourceRef`."""
        return ResourceRef(kind=self.kind, id=self.id, label=self.label if with_label else None)

    def stored(self) -> dict[str, str]:
        """The JSON element the table stores (label only when present)."""
        out = {"kind": self.kind, "id": self.id}
        if self.label is not None:
            out["label"] = self.label
        return out


class CanonicalSubjectRef(MemorySubjectRef):
    """A subject ref as a model may write it: a kind a resolver owns and a canonical UUID, nothing else."""

    kind: EntityKind
    """The entity kind, exactly one of the kinds a resolver owns (e.g. `crm.company`)."""
    id: Annotated[str, Field(strict=True, pattern=CANONICAL_UUID_PATTERN)]
    """The row's UUID in canonical text: lower-case hex, 8-4-4-4-12, with hyphens, nothing around it."""


class MemoryCandidate(BaseModel):
    """What a model asks `memory.remember` to keep: strict, and no subject key (the service makes it)."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    attribute: str = Field(max_length=MAX_ATTRIBUTE)
    """`observation.<name>` or `preference.<name>`, lower case, e.g. `preference.language`."""
    text: str = Field(max_length=MAX_MEMORY_TEXT)
    """The fact or instruction; leading and trailing blank characters are removed."""
    scope: MemoryScope
    """`user`: this person in this definition; `organization`: every user of this definition."""
    subject_refs: list[CanonicalSubjectRef] = Field(default_factory=list, max_length=1)
    """Zero or one row the memory is about, named canonically."""
    expires_at: AwareDatetime | None = Field(
        default=None,
        description=(
            "When the memory stops being read: an RFC 3339 date-time with its offset, e.g. "
            "2027-03-31T00:00:00Z; in the future and within the longest expiry. Give this or ttl, not both; "
            "with neither, the namespace default applies (observations expire, preferences do not)."
        ),
    )
    """An absolute expiry; None leaves it to `ttl` or the namespace default."""
    ttl: str | None = Field(
        default=None,
        description=(
            "How long the memory is read from now, as an ISO 8601 duration of whole weeks, days, hours, "
            "minutes or seconds (P30D, PT12H, P1DT6H; no years or months). Give this or expires_at, not both."
        ),
        json_schema_extra={"format": "duration", "examples": ["P30D", "PT12H"]},
    )
    """A time to live from the write; None leaves it to `expires_at` or the namespace default."""

    @field_validator("attribute")
    @classmethod
    def _namespaced(cls, value: str) -> str:
        if not is_memory_attribute(value):
            raise ValueError(
                "attribute must be observation.<name> or preference.<name> (lower case letters, digits, '_')"
            )
        return value

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("text must not hold a null byte")
        stripped = value.strip(BLANK_CHARACTERS)
        if not stripped:
            raise ValueError("text must not be empty or blank")
        return stripped

    @field_validator("ttl")
    @classmethod
    def _ttl(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if info.data.get("expires_at") is not None:
            raise ValueError("give expires_at or ttl, not both")
        parse_duration(value)  # its ValueError names the format
        return value


@dataclass(frozen=True)
class ToolInvocation:
    """The principal of one tool call: the run, its definition and exactly one of a user or a trigger."""

    organization_id: UUID
    """The tenancy of the call."""
    definition_id: UUID
    """The agent definition that owns what it writes."""
    run_id: UUID
    """The run that calls the tool; it is recorded as `proposed_by_run_id`."""
    user_id: UUID | None = None
    """The person the run acts for, or None for a trigger run."""
    trigger_id: UUID | None = None
    """The trigger that started the run, or None."""

    def __post_init__(self) -> None:
        if (self.user_id is None) == (self.trigger_id is None):
            raise ValueError("a tool invocation names exactly one of user_id and trigger_id")


def attribute_of(subject_key: str) -> str:
    """The attribute part of a stored subject key (`<kind>:<id>:<attribute>`)."""
    return subject_key.split(":", 2)[-1]


@dataclass(frozen=True)
class ParsedRefs:
    """The subject refs of one stored `subject_refs` value, and how many elements were refused."""

    refs: tuple[MemorySubjectRef, ...]
    """The well-formed elements, in stored order."""
    malformed: int
    """Elements (or a non-array value, counted once) that are not well-formed subject refs."""


def parse_stored_refs(value: object) -> ParsedRefs:
    """Read a stored `subject_refs` value tolerantly: unknown keys ignored, malformed elements counted."""
    if not isinstance(value, list):
        return ParsedRefs(refs=(), malformed=1)
    refs: list[MemorySubjectRef] = []
    malformed = 0
    for element in value:
        if not isinstance(element, dict):
            malformed += 1
            continue
        known = {k: element[k] for k in ("kind", "id", "label") if k in element}
        try:
            refs.append(MemorySubjectRef.model_validate(known))
        except ValidationError:
            malformed += 1
    return ParsedRefs(refs=tuple(refs), malformed=malformed)


class AgentMemory(BaseModel):
    """One stored revision of `agent.memories` (a head read from `agent.memory_heads` has the same shape)."""

    model_config = ConfigDict(frozen=True)

    id: UUID
    """The revision id."""
    organization_id: UUID
    """The tenancy."""
    definition_id: UUID
    """The agent definition that owns the chain."""
    scope: MemoryScope
    """`user` or `organization`."""
    user_id: UUID | None
    """The person of a user memory; None for organization scope."""
    scope_owner_id: UUID
    """The user for user scope, the organization for organization scope."""
    subject_key: str
    """`<kind>:<id>:<attribute>`, made by the service."""
    text: str | None
    """None for a tombstone."""
    subject_refs: Any
    """The stored JSON as it is; read it with `parse_stored_refs`, which never raises."""
    proposed_by_run_id: UUID | None
    """The run that wrote the revision."""
    supersedes_id: UUID | None
    """The revision this one follows; None for a chain's root."""
    forgotten_at: datetime | None
    """Set on a tombstone only."""
    created_at: datetime
    """When the revision was written."""
    expires_at: datetime | None = None
    """When the revision stops being live; None keeps it (a tombstone never has one)."""

    @property
    def is_tombstone(self) -> bool:
        """True when this revision forgets its chain."""
        return self.forgotten_at is not None

    def is_expired(self, now: datetime) -> bool:
        """True when the revision has an expiry at or before `now` (it is then no longer live)."""
        return self.expires_at is not None and self.expires_at <= now

    @property
    def attribute(self) -> str:
        """The attribute part of the subject key."""
        return attribute_of(self.subject_key)

    @classmethod
    def from_row(cls, row: Any) -> AgentMemory:
        """Build from a database record of `agent.memories` or `agent.memory_heads`."""
        return cls.model_validate(dict(row))


@dataclass(frozen=True)
class LiveMemory:
    """One row of `agent.live_memories`: the read path's own shape (no scope owner, no forgotten_at)."""

    id: UUID
    """The revision id, cited as `agent.memory <id>`."""
    organization_id: UUID
    """The tenancy."""
    definition_id: UUID
    """The agent definition that owns the chain."""
    scope: str
    """`user` or `organization`."""
    user_id: UUID | None
    """The person of a user memory; None for organization scope."""
    subject_key: str
    """The stored key, used as the item's subject key."""
    text: str
    """The memory itself."""
    subject_refs: object
    """The stored JSON as it is; the read guard parses it with `parse_stored_refs`."""
    proposed_by_run_id: UUID | None
    """The run that wrote the revision."""
    supersedes_id: UUID | None
    """The revision this one follows."""
    created_at: datetime
    """When the revision was written; the read order is (created_at DESC, id DESC)."""

    @property
    def attribute(self) -> str:
        """The attribute part of the subject key."""
        return attribute_of(self.subject_key)

    @classmethod
    def from_row(cls, row: Any) -> LiveMemory:
        """Build from a database record of `agent.live_memories`."""
        return cls(
            id=row["id"],
            organization_id=row["organization_id"],
            definition_id=row["definition_id"],
            scope=row["scope"],
            user_id=row["user_id"],
            subject_key=row["subject_key"],
            text=row["text"],
            subject_refs=row["subject_refs"],
            proposed_by_run_id=row["proposed_by_run_id"],
            supersedes_id=row["supersedes_id"],
            created_at=row["created_at"],
        )


@dataclass(frozen=True)
class RelevanceQuery:
    """What a relevance-ordered read scores against, with knowledge's fusion settings (the caller passes them)."""

    text: str
    """The question; its lexemes (knowledge's configuration) are BM25's query terms."""
    vector: list[float] | None
    """The question's vector under `model`; None ranks by BM25 alone."""
    model: str | None
    """The model of `vector` (the live one): only memory vectors of this model are compared."""
    dense_weight: float
    """The dense list's weight in the convex fusion."""
    lexical_weight: float
    """The BM25 list's weight in the convex fusion."""
    k1: float
    """BM25 term-frequency saturation."""
    b: float
    """BM25 length normalisation."""
    candidates_per_limit: int = 4
    """Candidates read from each list per row of the limit (knowledge reads four times its limit)."""
    lexical_depth: int = 200
    """Postings the lexical half reads of each query lexeme for each scope owner, best impact first (knowledge
    reads 200 too); the best partial candidates are then completed with the lexemes it cut."""
    walk_above: int = 2000
    """The owners' revisions with text from which the dense half walks the model's HNSW index instead of scoring
    every vector (when they hold a tenth of the index; migrations/0110): below, the exact scan is cheaper."""


@dataclass(frozen=True)
class RankedMemory:
    """A live memory of a relevance-ordered read, with its place and score."""

    memory: LiveMemory
    """The row."""
    rank: int
    """Its 1-based place in the read's order."""
    score: float | None
    """The fused score; None when neither half ranked it (it follows, newest first)."""
