"""One way to build a brief from the functions layer: build, record the metrics, and return the brief.

The front door endpoint, the segment function and the CLI all build through `build_brief`, so the metrics
see every brief. `LimitedBuilder` caps the briefs one process builds at once
(`AC_CONTEXT_MAX_CONCURRENT_BRIEFS`): past the cap a build raises `OverloadedError` at once (503
`overloaded` with `Retry-After` over HTTP, a retried step in a function) instead of starting a build whose
sources would time out on a saturated loop and answer with holes. A brief whose sources failed because
the database is down is not a brief: it raises `DatabaseUnavailableError` (503 `database_unavailable`).

This module must never write prose, change a policy or catch a required source failure: it records the
failure and re-raises it for the caller (a retryable step, or an HTTP 503).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar, cast

from context.builder import ContextBuilder
from context.errors import ContextMisuseError, RequiredContextSourceError
from context.models import BriefExplanation, ContextBrief, ContextPolicy, ContextRequest
from functions._metrics import Metrics
from functions.errors import OverloadedError
from state.errors import DatabaseUnavailableError

__all__ = ["LimitedBuilder", "build_brief", "build_explained_brief"]

T = TypeVar("T")


class LimitedBuilder:
    """A builder that refuses, at once, a build past `max_concurrent` builds running in this process."""

    def __init__(
        self, inner: ContextBuilder, *, max_concurrent: int, retry_after_s: int = 1, metrics: Metrics | None = None
    ) -> None:
        self.inner = inner
        self.max_concurrent = max_concurrent
        self.retry_after_s = retry_after_s
        self.metrics = metrics
        self.active = 0
        """Builds running now."""
        self.database_probe: Callable[[], Awaitable[bool]] | None = None
        """Asked when a brief comes back with failed sources: False means the database is down, and the
        build answers `DatabaseUnavailableError` rather than a brief with holes."""

    async def build(self, request: ContextRequest, policy: ContextPolicy) -> ContextBrief:
        """Build through the inner builder, or raise `OverloadedError` when the cap is reached."""
        return await self._guarded(lambda: self.inner.build(request, policy), lambda brief: brief)

    async def build_explained(
        self, request: ContextRequest, policy: ContextPolicy
    ) -> tuple[ContextBrief, BriefExplanation]:
        """Build with the packer's explanation, under the same cap and the same outage check as `build`."""
        explained = _explainer_of(self.inner)
        return await self._guarded(lambda: explained(request, policy), lambda pair: pair[0])

    async def _guarded(self, call: Callable[[], Awaitable[T]], brief_of: Callable[[T], ContextBrief]) -> T:
        if self.active >= self.max_concurrent:
            if self.metrics is not None:
                self.metrics.briefs_overloaded.inc()
            raise OverloadedError(
                f"this process is building {self.max_concurrent} briefs already; retry in {self.retry_after_s} s",
                retry_after_s=self.retry_after_s,
            )
        self.active += 1
        try:
            result = await call()
        finally:
            self.active -= 1
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
