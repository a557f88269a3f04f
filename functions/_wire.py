"""The JSON shapes that cross the functions layer: a context request, a segment brief request and answer.

`ContextRequest` and `ContextSubject` are frozen dataclasses in the core; these pydantic models are their
JSON form for Inngest events, `step.invoke` payloads and HTTP bodies, and convert both ways. An event or a
body that does not parse is bad input (a `NonRetriableError` in a function, a 422 on HTTP), never retried.
Every HTTP model is strict at the edge: no string-to-int or string-to-bool coercion (`StrictInt`,
`StrictBool` fields), and no text holding a NUL byte or a lone surrogate (`CleanText`, and `CleanJson` for
free-form objects such as a policy or tool arguments), refused with 422 `text_invalid` before any query.
This module must never read a database or decide anything: it only parses and converts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from context.models import ContextBrief, ContextPolicy, ContextRequest, ContextSubject
from state.ids import OrganizationId
from state.refs import DroppedRef, normalize_refs

if TYPE_CHECKING:
    from state.api_keys import ApiKey

__all__ = [
    "CleanJson",
    "CleanText",
    "RequestIn",
    "SegmentBriefInput",
    "SegmentBriefOutput",
    "SubjectIn",
    "key_json",
    "refuse_bad_text",
]

_MAX_DEPTH = 64


def _bad_text(value: str) -> str | None:
    if "\x00" in value:
        return "text must not contain a NUL byte"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "text must be valid Unicode (a lone surrogate is not)"
    return None


def refuse_bad_text(value: Any, depth: int = 0) -> Any:
    """Return `value` (any JSON value) unchanged, or raise `text_invalid` for a NUL byte or a lone surrogate."""
    if depth > _MAX_DEPTH:
        raise PydanticCustomError("json_too_deep", "JSON nested deeper than {depth} levels", {"depth": _MAX_DEPTH})
    if isinstance(value, str):
        problem = _bad_text(value)
        if problem is not None:
            raise PydanticCustomError("text_invalid", problem)
    elif isinstance(value, dict):
        for key, item in value.items():
            refuse_bad_text(key, depth + 1)
            refuse_bad_text(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            refuse_bad_text(item, depth + 1)
    return value


CleanText = Annotated[str, AfterValidator(refuse_bad_text)]
"""A string with no NUL byte and no lone surrogate (PostgreSQL refuses both)."""
CleanJson = Annotated[dict[str, Any], AfterValidator(refuse_bad_text)]
"""A free-form JSON object whose every key and string is `CleanText`, at most 64 levels deep."""


class SubjectIn(BaseModel):
    """The JSON form of `ContextSubject`."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    organization_id: OrganizationId
    """The tenancy every source filters by, in canonical UUID text."""
    user_id: UUID | None = None
    """The person who asks."""
    trigger_id: UUID | None = None
    """The trigger that started the run."""
    definition_id: UUID | None = None
    """The definition of the run; None for a front door turn."""

    def to_subject(self) -> ContextSubject:
        """The core subject."""
        return ContextSubject(
            organization_id=self.organization_id,
            user_id=self.user_id,
            trigger_id=self.trigger_id,
            definition_id=self.definition_id,
        )


class RequestIn(BaseModel):
    """The JSON form of `ContextRequest`."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    subject: SubjectIn
    """Every source filters through this."""
    query: CleanText = Field(default="", max_length=20_000)
    """The user text, or the run input summary."""
    entities: list[Any] = Field(default_factory=list, max_length=500)
    """What is already in scope, as sent: `state.refs.normalize_refs` drops a malformed entry, never the request."""
    run_id: UUID | None = None
    """The current run."""
    conversation_id: UUID | None = None
    """The conversation of the turn."""

    def to_request(self) -> ContextRequest:
        """The core request (malformed entities dropped)."""
        return self.normalized(source="request")[0]

    def normalized(self, *, source: str) -> tuple[ContextRequest, list[DroppedRef]]:
        """The core request with the valid entities in order, and the malformed entries it dropped (logged)."""
        entities = normalize_refs(self.entities, source=source)
        request = ContextRequest(
            subject=self.subject.to_subject(),
            query=self.query,
            entities=entities.refs,
            run_id=self.run_id,
            conversation_id=self.conversation_id,
        )
        return request, entities.dropped

    @classmethod
    def of(cls, request: ContextRequest) -> RequestIn:
        """The JSON form of a core request."""
        s = request.subject
        return cls(
            subject=SubjectIn(
                organization_id=s.organization_id,
                user_id=s.user_id,
                trigger_id=s.trigger_id,
                definition_id=s.definition_id,
            ),
            query=request.query,
            entities=[ref.model_dump(mode="json", exclude_none=True) for ref in request.entities],
            run_id=request.run_id,
            conversation_id=request.conversation_id,
        )


class SegmentBriefInput(BaseModel):
    """The data of `context/segment.brief.requested` (or of a `step.invoke` of `context-segment-brief`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    run_id: UUID
    """The agent run the segment belongs to."""
    segment: int = Field(ge=0, strict=True)
    """The segment number; 0 is the first."""
    waited: bool = Field(strict=True)
    """Whether a wait (approval, sleep, event) happened before this segment."""
    request: RequestIn
    """What the brief is built for."""
    policy: ContextPolicy
    """The policy frozen in the run snapshot."""
    consistency_token: str | None = Field(default=None, pattern=r"^lsn:[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$")
    """The `AC-Consistency-Token` of the turn's last write: a standby builds the brief only once it has it."""


class SegmentBriefOutput(BaseModel):
    """The answer: build (with the brief) or reuse (the runtime keeps its stored system block)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    run_id: UUID
    """The agent run."""
    segment: int
    """The segment number."""
    action: Literal["build", "reuse"]
    """`build`: replace the system block with `brief`; `reuse`: keep the stored block."""
    reason: str
    """Why, in a few words."""
    brief: ContextBrief | None = None
    """The new brief when `action` is `build`."""


def key_json(key: ApiKey) -> dict[str, Any]:
    """An API key as JSON, without its secret: the one shape `/v1/keys` and `ac-context keys` answer with."""
    return {
        "id": key.id,
        "scope": key.scope,
        "organization_id": None if key.organization_id is None else str(key.organization_id),
        "name": key.name,
        "created_at": key.created_at.isoformat(),
        "revoked_at": None if key.revoked_at is None else key.revoked_at.isoformat(),
    }
