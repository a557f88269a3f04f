"""One way to build a brief from the functions layer: build, record the metrics, and return the brief.

The front door endpoint, the segment function and the CLI all build through `build_brief`, so the metrics
see every brief. `BriefSlots` is the process's count of briefs in flight, capped at
`AC_CONTEXT_MAX_CONCURRENT_BRIEFS`: past the cap a brief is refused at once with `OverloadedError` (503
`overloaded` with `Retry-After` over HTTP, a retried step in a function) instead of starting a build whose
sources would time out on a saturated loop and answer with holes. The HTTP edge takes a front door
request's slot from its headers alone, before its body is read, and holds it until the answer is sent; a
build inside that request runs on that slot (a context variable says so), and any other build (a segment
step, the CLI) takes its own slot in `LimitedBuilder`. A brief whose sources failed because the database is
down is not a brief: it raises `DatabaseUnavailableError` (503 `database_unavailable`).

This module must never write prose, change a policy or catch a required source failure: it records the
failure and re-raises it for the caller (a retryable step, or an HTTP 503).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import TypeVar, cast

from context.builder import ContextBuilder
from context.errors import ContextMisuseError, RequiredContextSourceError
from context.models import BriefExplanation, ContextBrief, ContextPolicy, ContextRequest
from functions._metrics import Metrics
from functions.errors import OverloadedError
from state.db import Database
from state.errors import DatabaseUnavailableError

__all__ = ["BriefSlots", "LimitedBuilder", "build_brief", "build_explained_brief"]

T = TypeVar("T")


_HOLDING: ContextVar[BriefSlots | None] = ContextVar("ac_context_brief_slot_held", default=None)
"""The slots whose one slot the current request or build holds already, if any."""


class BriefSlots:
    """The briefs this process has in flight, at most `capacity`; a refusal is counted in `metrics`."""

    def __init__(self, capacity: int, *, retry_after_s: int = 1, metrics: Metrics | None = None) -> None:
        self.capacity = capacity
        self.retry_after_s = retry_after_s
        self.metrics = metrics
        self.active = 0
        """Slots held now."""

    def refusal(self) -> OverloadedError:
        """The `overloaded` error of a full process, counted once in `briefs_overloaded`."""
        if self.metrics is not None:
            self.metrics.briefs_overloaded.inc()
        return OverloadedError(
            f"this process is building {self.capacity} briefs already; retry in {self.retry_after_s} s",
            retry_after_s=self.retry_after_s,
        )

    def try_acquire(self) -> Token[BriefSlots | None] | None:
        """Take a slot for the current context (None when every slot is taken); give it back with `release`."""
        if self.active >= self.capacity:
            return None
        self.active += 1
        return _HOLDING.set(self)

    def release(self, token: Token[BriefSlots | None]) -> None:
        """Give back the slot `try_acquire` took."""
        _HOLDING.reset(token)
        self.active -= 1

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Run inside a slot: the one this context holds already, else a new one, else raise the refusal."""
        if _HOLDING.get() is self:
            yield
            return
        token = self.try_acquire()
        if token is None:
            raise self.refusal()
        try:
            yield
        finally:
            self.release(token)


class LimitedBuilder:
    """A builder that refuses, at once, a build past the process's brief slots (see the module docstring)."""

    def __init__(
        self,
        inner: ContextBuilder,
        *,
        max_concurrent: int,
        retry_after_s: int = 1,
        metrics: Metrics | None = None,
        slots: BriefSlots | None = None,
    ) -> None:
        self.inner = inner
        self.slots = slots or BriefSlots(max_concurrent, retry_after_s=retry_after_s, metrics=metrics)
        """The slots this builder's builds run in; the HTTP edge admits the front door through the same."""
        self.db: Database | None = None
        """The database whose standbys a build reads on (`Database.on_standby`); None reads on the primary."""
        self.database_probe: Callable[[], Awaitable[bool]] | None = None
        """Asked when a brief comes back with failed sources: False means the database is down, and the
        build answers `DatabaseUnavailableError` rather than a brief with holes."""

    async def build(self, request: ContextRequest, policy: ContextPolicy) -> ContextBrief:
        """Build through the inner builder, or raise `OverloadedError` when no slot is free."""
        return await self._guarded(request, lambda: self.inner.build(request, policy), lambda brief: brief)

    async def build_explained(
        self, request: ContextRequest, policy: ContextPolicy
    ) -> tuple[ContextBrief, BriefExplanation]:
        """Build with the packer's explanation, under the same cap and the same outage check as `build`."""
        explained = _explainer_of(self.inner)
        return await self._guarded(request, lambda: explained(request, policy), lambda pair: pair[0])

    async def _guarded(
        self, request: ContextRequest, call: Callable[[], Awaitable[T]], brief_of: Callable[[T], ContextBrief]
    ) -> T:
        with self.slots.hold():
            if self.db is None:
                result = await call()
            else:  # a brief with a failed source on a standby is built again on the primary
                organization = request.subject.organization_id
                result = await self.db.on_standby(organization, call, failed=lambda r: bool(brief_of(r).failed_sources))
        if brief_of(result).failed_sources and self.database_probe is not None and not await self.database_probe():
            raise DatabaseUnavailableError("the database is unreachable, so the brief's sources could not be read")
        return result


def _explainer_of(
    builder: ContextBuilder,
) -> Callable[[ContextRequest, ContextPolicy], Awaitable[tuple[ContextBrief, BriefExplanation]]]:
    """The builder's `build_explained`, or `ContextMisuseError` for a builder that cannot explain."""
    build_explained = getattr(builder, "build_explained", None)
    if build_explained is None:
        raise ContextMisuseError(f"the builder {type(builder).__name__} cannot explain a brief")
    return cast(
        Callable[[ContextRequest, ContextPolicy], Awaitable[tuple[ContextBrief, BriefExplanation]]], build_explained
    )


async def build_brief(
    builder: ContextBuilder,
    request: ContextRequest,
    policy: ContextPolicy,
    *,
    metrics: Metrics | None = None,
    route: str,
) -> ContextBrief:
    """Build the brief of `request` under `policy`, recording its pressure in `metrics`."""
    return await _recorded(lambda: builder.build(request, policy), lambda brief: brief, metrics=metrics, route=route)


async def build_explained_brief(
    builder: ContextBuilder,
    request: ContextRequest,
    policy: ContextPolicy,
    *,
    metrics: Metrics | None = None,
    route: str,
) -> tuple[ContextBrief, BriefExplanation]:
    """Build like `build_brief`, with the packer's explanation of every item (one pack, never stored)."""
    explained = _explainer_of(builder)
    return await _recorded(lambda: explained(request, policy), lambda pair: pair[0], metrics=metrics, route=route)


async def _recorded(
    call: Callable[[], Awaitable[T]], brief_of: Callable[[T], ContextBrief], *, metrics: Metrics | None, route: str
) -> T:
    """Run one build, recording a required failure or the brief's pressure in `metrics`."""
    try:
        result = await call()
    except RequiredContextSourceError as exc:
        if metrics is not None:
            metrics.observe_required_failure(exc.sources)
        raise
    if metrics is not None:
        metrics.observe_brief(brief_of(result), route=route)
    return result
