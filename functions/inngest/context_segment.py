"""`context-segment-brief`: the brief of one agent segment, on `context/segment.brief.requested` or `step.invoke`.

Input: the run id, the segment number, whether a wait happened, the request and the frozen policy. The
build-or-reuse decision is `context.segments.decide_segment`; this function only wires it. A segment that
builds does so inside `step.run("build-brief")`, so a replay of a completed segment reads the memoized brief
and never calls the builder, while a retry of a failed segment may build again (the sources are read only).
The memoized step result is the brief itself, bounded by the policy's total budget: the one step result in
this project that is not a few ids and counts, because the spec wants no second store for it. It leaves
the process encrypted when `AC_CONTEXT_STEP_ENCRYPTION_KEYS` is set (`functions.inngest.encryption`). A memo that
cannot be read (no configured key decrypts it, or it is not a brief) is built again in a new step,
`rebuild-brief`, counted in `ac_context_segment_briefs_rebuilt_total{reason}`, so a dropped key costs a
build, never the run.

A build past the process's brief cap (`OverloadedError`) fails the step with `RetryAfterError`, so
Inngest retries it after the cap's `Retry-After`. A required source failure fails the step with the source
names (retryable); when the retries run out, the run's failure message keeps them. A request that does not
parse fails at once, without retries, with the paths and error types of its problems and never a value
of it (the failure body travels to Inngest in clear); a malformed entity in it is not a request that does
not parse: it is dropped, logged and counted in the brief. The
function never composes the system block: the runtime does, with `context.segments.compose_system_block`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any
from uuid import UUID

import inngest
from pydantic import ValidationError

from context.builder import ContextBuilder
from context.errors import PolicyPublishError
from context.models import ContextBrief
from context.registry import ContextSourceRegistry
from context.segments import decide_segment
from functions._brief_receipts import ReceiptRecorder, policy_name, receipt_of
from functions._briefs import build_brief
from functions._metrics import Metrics
from functions._wire import SegmentBriefInput, SegmentBriefOutput
from functions.errors import OverloadedError
from functions.event_routes import event_triggers
from functions.events import EVENT_SEGMENT_BRIEF
from functions.inngest.encryption import undecryptable
from state.brief_receipts import BriefKind
from state.replicas import parse_consistency_token, reading_after

__all__ = [
    "BUILD_STEP", "EVENT", "FUNCTION_ID", "REBUILD_STEP", "RETRIES", "make_context_segment_brief",
]  # fmt: skip

FUNCTION_ID = "context-segment-brief"
EVENT = EVENT_SEGMENT_BRIEF
BUILD_STEP = "build-brief"
REBUILD_STEP = "rebuild-brief"
"""The step that builds a brief again when the memo of `build-brief` cannot be read."""
RETRIES = 3
"""Retries of a failed build (a required source that timed out may answer the next time)."""
MAX_REBUILDS = 2
"""Rebuilds in one run before it fails: a rebuilt memo is encrypted with the current key, so one is enough."""
logger = logging.getLogger(__name__)

MAX_PROBLEMS = 10
"""Problems of an invalid request named in its failure (the count of the rest follows)."""

_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def _path(loc: Iterable[object], kind: str) -> str:
    """A problem's path with only list positions and schema-shaped names in it, never a value or a key."""
    parts = [str(p) if isinstance(p, int) or (isinstance(p, str) and _NAME.fullmatch(p)) else "…" for p in loc]
    if kind == "extra_forbidden" and parts:
        parts[-1] = "<unexpected key>"
    return ".".join(parts) or "<request>"


def describe_problems(problems: Iterable[Mapping[str, Any]]) -> str:
    """`path: error_type; …` of a request's problems: what a failure body may say about request text."""
    named = [f"{_path(p.get('loc', ()), str(p.get('type', '')))}: {p.get('type', 'invalid')}" for p in problems]
    more = f"; and {len(named) - MAX_PROBLEMS} more" if len(named) > MAX_PROBLEMS else ""
    return "; ".join(named[:MAX_PROBLEMS]) + more


def _memo_problem(memo: object) -> tuple[ContextBrief | None, str]:
    """The brief in a memo, or None and why it cannot be read (`undecryptable` or `invalid`)."""
    if undecryptable(memo):
        return None, "undecryptable"
    try:
        return ContextBrief.model_validate(memo), ""
    except ValidationError:
        return None, "invalid"


def make_context_segment_brief(
    client: inngest.Inngest,
    *,
    builder: Callable[[], ContextBuilder],
    metrics: Callable[[], Metrics | None] = lambda: None,
    receipts: Callable[[], ReceiptRecorder | None] | None = None,
) -> inngest.Function[object]:
    """Create the `context-segment-brief` function; `builder` is called when a segment builds.

    With a `receipts` recorder, a segment leaves a receipt (`functions._brief_receipts`): a build or a rebuild
    records inside its own step, so a replay that reads the memo records nothing; their keys hold the
    Inngest run id (a dashboard rerun builds again, and records that build). A memo hit (a segment that
    reuses the stored block) takes no step: its key is the agent run and segment, so it is written once
    per segment however often the run is replayed.
    """
    publishing = ContextSourceRegistry.for_publishing()

    @client.create_function(
        fn_id=FUNCTION_ID,
        name="Context: segment brief",
        trigger=[inngest.TriggerEvent(event=e) for e in event_triggers(FUNCTION_ID)],
        retries=RETRIES,
    )
    async def context_segment_brief(ctx: inngest.Context) -> object:
        try:
            request = SegmentBriefInput.model_validate(dict(ctx.event.data))
            publishing.validate(request.policy)
        except ValidationError as exc:
            problems = describe_problems(exc.errors(include_url=False, include_context=False, include_input=False))
            raise inngest.NonRetriableError(f"invalid segment brief request: {problems}") from None
        except PolicyPublishError as exc:
            problems = describe_problems(exc.errors)
            raise inngest.NonRetriableError(f"invalid segment brief request: policy: {problems}") from None
        except ValueError:
            raise inngest.NonRetriableError("invalid segment brief request") from None

        decision = decide_segment(request.segment, waited=request.waited, policy=request.policy)
        answer = SegmentBriefOutput(
            run_id=request.run_id, segment=request.segment, action=decision.action.value, reason=decision.reason
        )

        async def record(brief: ContextBrief, kind: BriefKind, key: str) -> None:
            # A receipt is a record, never the brief: a failure to write one is logged and counted, not raised.
            recorder = None
            try:
                recorder = None if receipts is None else receipts()
                if recorder is not None:
                    organization = UUID(str(request.request.subject.organization_id))
                    await recorder.write_now(receipt_of(
                        brief, organization_id=organization, face="segment", kind=kind,
                        policy=policy_name(request.policy), run_id=request.run_id, segment=request.segment,
                        dedupe_key=key,
                    ))  # fmt: skip
            except Exception as exc:
                logger.warning("could not record a segment brief receipt: %s", type(exc).__name__)
                if recorder is not None:
                    recorder.count_dropped("error", 1)

        if not decision.builds:  # a memo hit: recorded once per segment (its key), however often it is replayed
            await record(ContextBrief.empty(), "memo_hit", f"memo_hit:{request.run_id}:{request.segment}")
            return answer.model_dump(mode="json")

        def build(kind: BriefKind, key: str) -> Callable[[], Awaitable[dict[str, object]]]:
            async def step() -> dict[str, object]:
                # A malformed entity is dropped (logged with its position, counted in the brief), never the segment.
                core, dropped = request.request.normalized(source="segment event")
                after = 0 if request.consistency_token is None else parse_consistency_token(request.consistency_token)
                try:
                    with reading_after(after):  # the turn's own writes are in its brief (state.replicas)
                        brief = await build_brief(builder(), core, request.policy, metrics=metrics(), route="segment")
                except OverloadedError as exc:  # past the process cap: ask Inngest to come back, not to give up
                    raise inngest.RetryAfterError(str(exc), timedelta(seconds=exc.retry_after_s)) from exc
                if dropped:
                    brief = brief.model_copy(update={"dropped_entities": len(dropped)})
                await record(brief, kind, key)  # inside the step: a replay reads the memo and records nothing
                return brief.model_dump(mode="json")

            return step

        def rebuild(reason: str, n: int) -> Callable[[], Awaitable[dict[str, object]]]:
            again = build("rebuild", f"rebuild{n}:{ctx.run_id}:{request.run_id}:{request.segment}")

            async def step() -> dict[str, object]:
                sink = metrics()
                if sink is not None:  # counted when the rebuild runs, not on every replay that passes it
                    sink.segment_briefs_rebuilt.labels(reason=reason).inc()
                return await again()

            return step

        first = build("build", f"build:{ctx.run_id}:{request.run_id}:{request.segment}")
        brief, reason = _memo_problem(await ctx.step.run(BUILD_STEP, first))
        for n in range(MAX_REBUILDS):
            if brief is not None:
                break
            brief, reason = _memo_problem(await ctx.step.run(REBUILD_STEP, rebuild(reason, n)))
        if brief is None:
            raise inngest.NonRetriableError(f"the segment's brief could not be read after {MAX_REBUILDS} rebuilds")
        return answer.model_copy(update={"brief": brief}).model_dump(mode="json")

    return context_segment_brief
