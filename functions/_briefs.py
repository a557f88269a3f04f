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

from context.builder import ContextBuilder
from context.errors import RequiredContextSourceError
from context.models import ContextBrief, ContextPolicy, ContextRequest
from functions._metrics import Metrics
from functions.errors import OverloadedError
from state.errors import DatabaseUnavailableError

__all__ = ["LimitedBuilder", "build_brief"]


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
        if self.active >= self.max_concurrent:
            if self.metrics is not None:
                self.metrics.briefs_overloaded.inc()
            raise OverloadedError(
                f"this process is building {self.max_concurrent} briefs already; retry in {self.retry_after_s} s",
                retry_after_s=self.retry_after_s,
            )
        self.active += 1
        try:
            brief = await self.inner.build(request, policy)
        finally:
            self.active -= 1
        if brief.failed_sources and self.database_probe is not None and not await self.database_probe():
            raise DatabaseUnavailableError("the database is unreachable, so the brief's sources could not be read")
        return brief


async def build_brief(
    builder: ContextBuilder,
    request: ContextRequest,
    policy: ContextPolicy,
    *,
    metrics: Metrics | None = None,
    route: str,
) -> ContextBrief:
    """Build the brief of `request` under `policy`, recording its pressure in `metrics`."""
    try:
        brief = await builder.build(request, policy)
    except RequiredContextSourceError as exc:
        if metrics is not None:
            metrics.observe_required_failure(exc.sources)
        raise
    if metrics is not None:
        metrics.observe_brief(brief, route=route)
    return brief
