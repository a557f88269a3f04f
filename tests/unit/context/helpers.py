"""Small builders for context tests: items, specs, policies and scripted sources."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from uuid import UUID

from pydantic import BaseModel

from context.models import (
    ContextItem,
    ContextKind,
    ContextPolicy,
    ContextRequest,
    ContextSourceSpec,
    ContextSubject,
    ResourceRef,
)
from context.options import EmptyOptions
from context.registry import PolicyPublishError


def publish_locs(err: PolicyPublishError) -> list[tuple[str | int, ...]]:
    """The path of every problem a failed publish check lists, in order."""
    return [tuple(e["loc"]) for e in err.errors]


ORG = UUID("00000000-0000-4000-8000-000000000001")
USER = UUID("00000000-0000-4000-8000-000000000002")


def item(
    source: str,
    title: str = "t",
    body: str = "b",
    *,
    kind: ContextKind | None = None,
    key: str | None = None,
    ref: ResourceRef | None = None,
    body_refs: list[ResourceRef] | None = None,
    tokens: int = 0,
    rank: int = 0,
) -> ContextItem:
    """An item of `source`; its kind defaults to the source name."""
    return ContextItem(
        source=source,
        kind=kind or source,  # type: ignore[arg-type]
        title=title,
        body=body,
        subject_key=key,
        ref=ref,
        body_refs=body_refs or [],
        tokens=tokens,
        rank_in_section=rank,
    )


def spec(name: str, budget: int = 1000, **kw: object) -> ContextSourceSpec:
    return ContextSourceSpec.model_validate({"name": name, "token_budget": budget, **kw})


def policy(*specs: ContextSourceSpec, total: int = 10_000, page_order: list[str] | None = None) -> ContextPolicy:
    return ContextPolicy.model_validate(
        {"sources": list(specs), "total_token_budget": total, "page_order": page_order or []}
    )


def request() -> ContextRequest:
    return ContextRequest(subject=ContextSubject.of_actor(ORG, USER), query="what now?", entities=[])


Reader = Callable[[ContextRequest, ContextSourceSpec], Awaitable[list[ContextItem]]]


@dataclass
class ScriptedSource:
    """A source whose read is a script; it records every call and whether it was cancelled."""

    name: str
    answer: list[ContextItem] = field(default_factory=list)
    delay: float = 0.0
    error: BaseException | None = None
    gate: asyncio.Event | None = None
    options_schema: type[BaseModel] = EmptyOptions
    calls: int = 0
    started: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: bool = False

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        self.calls += 1
        self.started.set()
        try:
            if self.gate is not None:
                await self.gate.wait()
            if self.delay:
                await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        if self.error is not None:
            raise self.error
        return list(self.answer)
