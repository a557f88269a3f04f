"""One way to build a brief from the functions layer: build, record the metrics, and return the brief.

The front door endpoint, the segment function and the CLI all build through `build_brief`, so the metrics
see every brief. This module must never write prose, change a policy or catch a required source failure:
it records the failure and re-raises it for the caller (a retryable step, or an HTTP 503).
"""

from __future__ import annotations

from context.builder import ContextBuilder
from context.errors import ContextMisuseError, RequiredContextSourceError
from context.models import BriefExplanation, ContextBrief, ContextPolicy, ContextRequest
from functions._metrics import Metrics

__all__ = ["build_brief", "build_explained_brief"]


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


async def build_explained_brief(
    builder: ContextBuilder,
    request: ContextRequest,
    policy: ContextPolicy,
    *,
    metrics: Metrics | None = None,
    route: str,
) -> tuple[ContextBrief, BriefExplanation]:
    """Build like `build_brief`, with the packer's explanation of every item (one pack, never stored)."""
    build_explained = getattr(builder, "build_explained", None)
    if build_explained is None:
        raise ContextMisuseError(f"the builder {type(builder).__name__} cannot explain a brief")
    try:
        brief, explanation = await build_explained(request, policy)
    except RequiredContextSourceError as exc:
        if metrics is not None:
            metrics.observe_required_failure(exc.sources)
        raise
    if metrics is not None:
        metrics.observe_brief(brief, route=route)
    return brief, explanation
