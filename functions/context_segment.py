"""`context-segment-brief`: the brief of one agent segment, on `context/segment.brief.requested` or `step.invoke`.

Input: the run id, the segment number, whether a wait happened, the request and the frozen policy. The
build-or-reuse decision is `context.segments.decide_segment`; this function only wires it. A segment that
builds does so inside `step.run("build-brief")`, so a replay of a completed segment reads the memoized brief
and never calls the builder, while a retry of a failed segment may build again (the sources are read only).
The memoized step result is the brief itself, bounded by the policy's total budget: the one step result in
this project that is not a few ids and counts, because the spec wants no second store for it. It leaves
the process encrypted when `AC_CONTEXT_STEP_ENCRYPTION_KEYS` is set (`functions._encryption`).

A build past the process's brief cap (`OverloadedError`) fails the step with `RetryAfterError`, so
Inngest retries it after the cap's `Retry-After`. A required source failure fails the step with the source
names (retryable); when the retries run out, the run's failure message keeps them. A request that does not
parse fails at once, without retries; a malformed entity in it is not a request that does not parse: it is
dropped, logged and counted in the brief. The
function never composes the system block: the runtime does, with `context.segments.compose_system_block`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import inngest
from pydantic import ValidationError

from context.builder import ContextBuilder
from context.models import ContextBrief
from context.registry import ContextSourceRegistry
from context.segments import decide_segment
from functions._briefs import build_brief
from functions._metrics import Metrics
from functions._wire import SegmentBriefInput, SegmentBriefOutput
from functions.errors import OverloadedError

__all__ = ["BUILD_STEP", "EVENT", "FUNCTION_ID", "RETRIES", "make_context_segment_brief"]

FUNCTION_ID = "context-segment-brief"
EVENT = "context/segment.brief.requested"
BUILD_STEP = "build-brief"
RETRIES = 3
"""Retries of a failed build (a required source that timed out may answer the next time)."""


def make_context_segment_brief(
    client: inngest.Inngest,
    *,
    builder: Callable[[], ContextBuilder],
    metrics: Callable[[], Metrics | None] = lambda: None,
) -> inngest.Function[object]:
    """Create the `context-segment-brief` function; `builder` is called when a segment builds."""
    publishing = ContextSourceRegistry.for_publishing()

    @client.create_function(
        fn_id=FUNCTION_ID,
        name="Context: segment brief",
        trigger=inngest.TriggerEvent(event=EVENT),
        retries=RETRIES,
    )
    async def context_segment_brief(ctx: inngest.Context) -> object:
        try:
            request = SegmentBriefInput.model_validate(dict(ctx.event.data))
            publishing.validate(request.policy)
        except (ValidationError, ValueError) as exc:
            raise inngest.NonRetriableError(f"invalid segment brief request: {exc}") from exc

        decision = decide_segment(request.segment, waited=request.waited, policy=request.policy)
        answer = SegmentBriefOutput(
            run_id=request.run_id, segment=request.segment, action=decision.action.value, reason=decision.reason
        )
        if not decision.builds:
            return answer.model_dump(mode="json")

        async def build() -> dict[str, object]:
            # A malformed entity is dropped (logged with its position, counted in the brief), never the segment.
            core, dropped = request.request.normalized(source="segment event")
            try:
                brief = await build_brief(builder(), core, request.policy, metrics=metrics(), route="segment")
            except OverloadedError as exc:  # past the process cap: ask Inngest to come back, not to give up
                raise inngest.RetryAfterError(str(exc), timedelta(seconds=exc.retry_after_s)) from exc
            if dropped:
                brief = brief.model_copy(update={"dropped_entities": len(dropped)})
            return brief.model_dump(mode="json")

        memo = await ctx.step.run(BUILD_STEP, build)
        brief = ContextBrief.model_validate(memo)
        return answer.model_copy(update={"brief": brief}).model_dump(mode="json")

    return context_segment_brief
