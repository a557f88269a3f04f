"""The context builder: reads every enabled source concurrently and hands their items to the packer.

It schedules every enabled source before it waits for any, applies the timeout to each read on its own,
and collects the results in policy order whatever order they finish in. An exception, a timeout, a source
missing from the registry, and an item that names another source are each a failure of that source. A
required failure raises `RequiredContextSourceError` naming every failed required source, before any brief
is made; an optional failure is named in the brief. An outer cancellation cancels the reads still running
and makes no brief. A disabled source is never resolved and never read.

Each build is one span (`context_brief`) with a child per source read (`context_source <name>`) that says
how the read ended (`ac.outcome`: ok, timed_out, failed, not_registered) and, once packed, how many of its
items were kept and dropped and the tokens they spent (`state.telemetry`); no span holds the question or an
item's text, and a failure is recorded by its type only.

It must never call a model, write prose, read a tenancy filter from a spec, or retry a source.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from opentelemetry.trace import INVALID_SPAN, Span, Status, StatusCode, use_span
from opentelemetry.util.types import AttributeValue

from context._build_scope import one_embedding_per_build
from context.errors import RequiredContextSourceError, SourceItemMismatchError
from context.models import (
    BriefExplanation,
    ContextBrief,
    ContextItem,
    ContextPolicy,
    ContextRequest,
    ContextSource,
    ContextSourceSpec,
    CutCandidate,
    ExplainingContextSource,
)
from context.packer import ContextPacker
from context.registry import ContextSourceRegistry
from state import telemetry
from state.db import shared_sessions

__all__ = ["ContextBuilder", "DefaultContextBuilder", "RequiredContextSourceError"]

logger = logging.getLogger(__name__)


class ContextBuilder(Protocol):
    """Anything that builds a brief for a request under a policy."""

    async def build(self, request: ContextRequest, policy: ContextPolicy) -> ContextBrief:
        """Build the brief."""
        ...


ReadEnd = Literal["ok", "timed_out", "failed", "not_registered"]


@dataclass(frozen=True)
class _Outcome:
    """The answer of one read: its items, or the reason it failed."""

    items: list[ContextItem]
    failure: str | None = None
    cut: tuple[CutCandidate, ...] = ()
    end: ReadEnd = "ok"


@dataclass
class _SourceSpan:
    """A source read's span, left open until the pack says what the source kept."""

    name: str
    span: Span
    ended_ns: int = 0
    outcome: _Outcome | None = None
    done: bool = field(default=False)

    def ended(self, outcome: _Outcome) -> _Outcome:
        """Note how and when the read ended; answer `outcome`."""
        self.outcome, self.ended_ns = outcome, time.time_ns()
        return outcome


class DefaultContextBuilder:
    """Concurrent, per-read-timed retrieval through a registry, then one pack."""

    def __init__(
        self,
        registry: ContextSourceRegistry,
        packer: ContextPacker,
        *,
        source_timeout_s: float = 1.0,
    ) -> None:
        if (
            isinstance(source_timeout_s, bool)
            or not isinstance(source_timeout_s, int | float)
            or not math.isfinite(source_timeout_s)
            or source_timeout_s <= 0
        ):
            raise ValueError(f"source_timeout_s must be a positive, finite number, not {source_timeout_s!r}")
        self._registry = registry
        self._packer = packer
        self._timeout = float(source_timeout_s)

    async def build(self, request: ContextRequest, policy: ContextPolicy) -> ContextBrief:
        """Read the enabled sources of `policy` for `request` and pack their items into one brief."""
        with _BriefTrace(request) as traced:
            gathered = await self._gather(request, policy, explain=False, traced=traced)
            if gathered is None:
                return traced.packed(ContextBrief.empty())
            items, failed, _ = gathered
            return traced.packed(self._packer.pack(items, policy, failed_sources=failed))

    async def build_explained(
        self, request: ContextRequest, policy: ContextPolicy
    ) -> tuple[ContextBrief, BriefExplanation]:
        """Build like `build`, with the packer's explanation of every item it was given (the same one pack).

        A source that can say what it cut before the packer (`ExplainingContextSource`) is read through
        `retrieve_explained`, and its cuts join the explanation's `cut`; the brief is the one `build` makes.
        """
        with _BriefTrace(request) as traced:
            gathered = await self._gather(request, policy, explain=True, traced=traced)
            if gathered is None:
                return traced.packed(ContextBrief.empty()), BriefExplanation.empty(policy.total_token_budget)
            items, failed, cut = gathered
            brief, explanation = self._packer.pack_explained(items, policy, failed_sources=failed)
            return traced.packed(brief), explanation.model_copy(update={"cut": cut}) if cut else explanation

    async def _gather(
        self, request: ContextRequest, policy: ContextPolicy, *, explain: bool, traced: _BriefTrace
    ) -> tuple[list[ContextItem], list[str], list[CutCandidate]] | None:
        """Every answering source's items, the failed sources' names and (explaining) the cuts; None if none."""
        specs: list[ContextSourceSpec] = []
        for spec in policy.sources:
            if spec.enabled and all(spec.name != s.name for s in specs):
                specs.append(spec)  # a name the publish check let through twice is read once
        if not specs:
            return None

        reads: list[asyncio.Task[_Outcome] | _Outcome] = []
        # The reads share one connection per session (state.db) and one embedding of the question per model.
        with one_embedding_per_build():
            async with shared_sessions():
                for spec in specs:
                    source = self._registry.find(spec.name)
                    traced_read = traced.source(spec)
                    if source is None:
                        reads.append(
                            traced_read.ended(_Outcome([], "not in the process registry", end="not_registered"))
                        )
                    else:
                        reads.append(
                            asyncio.create_task(
                                self._traced_read(traced_read, source, request, spec, explain),
                                name=f"context:{spec.name}",
                            )
                        )
                tasks = [read for read in reads if isinstance(read, asyncio.Task)]
                try:
                    if tasks:
                        await asyncio.gather(*tasks)
                except BaseException:
                    for task in tasks:
                        task.cancel()
                    await asyncio.wait(tasks)
                    raise
        outcomes = [read.result() if isinstance(read, asyncio.Task) else read for read in reads]

        failed: list[str] = []
        required_failed: list[str] = []
        items: list[ContextItem] = []
        cut: list[CutCandidate] = []
        for spec, outcome in zip(specs, outcomes, strict=True):
            if outcome.failure is not None:
                logger.warning("context source %s failed: %s", spec.name, outcome.failure)
                failed.append(spec.name)
                if spec.required:
                    required_failed.append(spec.name)
            else:
                items.extend(outcome.items)
                cut.extend(outcome.cut)
        if required_failed:
            raise RequiredContextSourceError(required_failed)
        return items, failed, cut

    async def _traced_read(
        self,
        traced: _SourceSpan,
        source: ContextSource,
        request: ContextRequest,
        spec: ContextSourceSpec,
        explain: bool,
    ) -> _Outcome:
        """`_read` under the source's span (current for the read, so its statements are its children)."""
        if traced.span is INVALID_SPAN:  # a bench's baseline: no span at all
            return traced.ended(await self._read(source, request, spec, explain))
        with use_span(traced.span, end_on_exit=False):
            return traced.ended(await self._read(source, request, spec, explain))

    async def _read(
        self, source: ContextSource, request: ContextRequest, spec: ContextSourceSpec, explain: bool
    ) -> _Outcome:
        """One read under its own timeout; every exception but an outer cancellation is a failure."""
        try:
            async with asyncio.timeout(self._timeout):
                if explain and isinstance(source, ExplainingContextSource):
                    answer, cut = await source.retrieve_explained(request, spec)
                    return _Outcome(_checked(answer, spec.name), cut=_checked_cut(cut, spec.name))
                answer = await source.retrieve(request, spec)
            return _Outcome(_checked(answer, spec.name))
        except TimeoutError:
            return _Outcome([], f"timed out after {self._timeout:g} s", end="timed_out")
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            return _Outcome([], "the read cancelled itself", end="failed")
        except Exception as exc:
            return _Outcome([], f"{type(exc).__name__}: {exc}", end="failed")


def _checked(answer: object, name: str) -> list[ContextItem]:
    """The items of a read, or SourceItemMismatchError when one is not an item of this source."""
    if not isinstance(answer, list):
        raise SourceItemMismatchError(f"source {name!r} returned {type(answer).__name__}, not a list")
    for item in answer:
        if not isinstance(item, ContextItem):
            raise SourceItemMismatchError(f"source {name!r} returned a {type(item).__name__}, not an item")
        if item.source != name:
            raise SourceItemMismatchError(f"source {name!r} returned an item that names {item.source!r}")
    return list(answer)


def _checked_cut(cut: object, name: str) -> tuple[CutCandidate, ...]:
    """The cut candidates of an explained read, or SourceItemMismatchError when one is not this source's."""
    if not isinstance(cut, list) or not all(isinstance(c, CutCandidate) and c.source == name for c in cut):
        raise SourceItemMismatchError(f"source {name!r} returned cut candidates that are not its own")
    return tuple(cut)


class _BriefTrace:
    """The build's span and its sources' spans; each source span ends when the pack says what it kept."""

    def __init__(self, request: ContextRequest) -> None:
        self._attributes: dict[str, AttributeValue] = {
            "ac.organization.id": str(request.subject.organization_id),
            "ac.context.entities": len(request.entities),
        }
        self._sources: list[_SourceSpan] = []
        self._started = 0.0
        self._span: Span = INVALID_SPAN
        self._scope: AbstractContextManager[Span] | None = None
        self._off = telemetry.bypassed()

    def __enter__(self) -> _BriefTrace:
        if self._off:
            return self
        self._started = time.perf_counter()
        self._scope = telemetry.span("context_brief", self._attributes)
        self._span = self._scope.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if self._off:
            return
        try:
            self._close_sources(None)
            outcome = "ok" if exc is None else type(exc).__name__
            telemetry.instruments().brief_duration.record(time.perf_counter() - self._started, {"ac.outcome": outcome})
        finally:
            if self._scope is not None:
                self._scope.__exit__(kind, exc, tb)

    def source(self, spec: ContextSourceSpec) -> _SourceSpan:
        """The open span of one source read, a child of the build's span."""
        if self._off:
            return _SourceSpan(spec.name, INVALID_SPAN, done=True)
        span = telemetry.tracer().start_span(
            f"context_source {spec.name}",
            attributes={"ac.context.source": spec.name, "ac.context.required": spec.required},
        )
        traced = _SourceSpan(spec.name, span)
        self._sources.append(traced)
        return traced

    def packed(self, brief: ContextBrief) -> ContextBrief:
        """Close every source span with what the brief kept of it, and note the brief's size; answer `brief`."""
        if self._off:
            return brief
        self._span.set_attributes(
            {
                "ac.brief.tokens": brief.tokens,
                "ac.brief.items": len(brief.items),
                "ac.brief.failed_sources": len(brief.failed_sources),
                "ac.context.sources": len(self._sources),
            }
        )
        self._close_sources(brief)
        return brief

    def _close_sources(self, brief: ContextBrief | None) -> None:
        counter = telemetry.instruments().source_outcomes
        for traced in self._sources:
            if traced.done:
                continue
            traced.done = True
            outcome = traced.outcome
            end = "cancelled" if outcome is None else outcome.end
            retrieved = 0 if outcome is None else len(outcome.items)
            attributes: dict[str, AttributeValue] = {"ac.outcome": end, "ac.context.retrieved": retrieved}
            if brief is not None and outcome is not None and outcome.end == "ok":
                dropped = brief.dropped.get(traced.name, 0)
                attributes["ac.context.kept"] = max(retrieved - dropped, 0)
                attributes["ac.context.dropped"] = dropped
                attributes["ac.context.tokens"] = brief.per_source_tokens.get(traced.name, 0)
            if end != "ok":
                traced.span.set_status(Status(StatusCode.ERROR))
            traced.span.set_attributes(attributes)
            traced.span.end(end_time=traced.ended_ns or None)
            counter.add(1, {"ac.context.source": traced.name, "ac.outcome": end})
