"""The Inngest side of the ingestion core: a driver that runs its sequences as durable steps.

`knowledge.ingestion.core` holds the sequences (their step names, what each step does, which errors fail a
document) as generators of steps; `drive` runs each yielded step as `ctx.step.run`, so each is memoized
and retried on its own, and the step's code is entered from here, never through a callback the core
holds. A step reads the services of the process that runs it; a `SourceFailedError` (the core marked
the source, or its model, failed) becomes `RunFailedError` and counts one `failed` outcome; any other
error becomes `StepFaultError`, which Inngest retries. `InngestRunner` runs the switchover's steps
(`knowledge.switchover`), a knowledge error that fails for good made a `RunFailedError`.

What leaves for Inngest is only a code and the source id: Inngest's run history keeps an error's message
and stack after the source is deleted or its organization erased, and the SDK would send the whole
traceback (the server's paths, and a parser's exception quoting the document through `__cause__`). So
neither error carries a stack, and the log line of a step's error names its code, the source and the
exception's type, never its message. This module must never hold ingestion logic: it translates, and
builds the `Ingestion` of a step.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast
from uuid import UUID

import inngest

from functions._services import ServiceSlot
from knowledge.errors import KnowledgeError
from knowledge.ingestion.core import Ingestion, Step, Steps, step_span
from knowledge.ingestion.failures import SourceFailedError, code_of, fails_document, reason_of

__all__ = ["InngestRunner", "RunFailedError", "StepFaultError", "drive", "ingestion_of", "run_error", "source_id_of"]

logger = logging.getLogger("functions.inngest")


def run_error(code: str, subject: object | None = None) -> str:
    """The message of an error sent to Inngest: a code and the source id (or what the run is about), no more."""
    return code if subject is None else f"{code}: source {subject}"


class RunFailedError(inngest.NonRetriableError):
    """The run fails for good; its message is `run_error(...)` and Inngest receives no stack with it."""

    include_stack = False


class StepFaultError(inngest.StepError):
    """A step failed in a way a retry may mend; Inngest receives the code and source, no stack, and retries."""

    is_retriable = True

    def __init__(self, exc: BaseException, subject: object | None) -> None:
        super().__init__(run_error(_code(exc), subject), type(exc).__name__, None)


def _code(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) and code.isidentifier() else "unexpected_error"


T = TypeVar("T")
R = TypeVar("R")


def source_id_of(data: object) -> UUID:
    """The `source_id` of an event's data, or a `NonRetriableError` (a bad event never becomes good)."""
    try:
        return UUID(str(data["source_id"]))  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        raise RunFailedError(run_error("event_invalid")) from None


def ingestion_of(slot: ServiceSlot) -> Callable[[], Ingestion]:
    """The `Ingestion` a step reads when it runs: the services' database, store, embedders and bounds."""

    def read() -> Ingestion:
        return slot.get().ingestion

    return read


async def drive(
    ctx: inngest.Context, steps: Steps[R], slot: ServiceSlot, *, subject: object, count_failed: bool = True
) -> R:
    """Run a core sequence as durable steps: each `Step` becomes `ctx.step.run(step.name, ...)`.

    The step reads the `Ingestion` of the services here, then enters the core; a `SourceFailedError`
    becomes `RunFailedError` with the stored reason's code and `subject` (the source), counted as a
    `failed` outcome when `count_failed`; any other error a `StepFaultError`, retried.
    """
    try:
        step = next(steps)
        while True:
            step = steps.send(await ctx.step.run(step.name, _durable(step, slot, count_failed, subject)))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    finally:
        steps.close()


def _durable(step: Step, slot: ServiceSlot, count_failed: bool, subject: object) -> Callable[[], Awaitable[Any]]:
    async def run() -> Any:
        kit = ingestion_of(slot)()
        try:
            with step_span(step.name) as span:
                span.set_attribute("ac.subject", str(subject))
                return await step.fn(kit)
        except SourceFailedError as exc:
            if count_failed:
                slot.get().metrics.ingestion_outcomes.labels(outcome="failed").inc()
            raise RunFailedError(run_error(code_of(exc.message), subject)) from None
        except inngest.NonRetriableError:
            raise
        except Exception as exc:
            logger.warning("step %r of %s failed with %s (%s)", step.name, subject, _code(exc), type(exc).__name__)
            raise StepFaultError(exc, subject) from None

    return run


class InngestRunner:
    """Runs the switchover's steps as durable Inngest steps, a failing knowledge error made non-retriable."""

    durable = True

    def __init__(self, ctx: inngest.Context) -> None:
        self.ctx = ctx

    async def run(self, name: str, fn: Callable[[], Awaitable[T]]) -> T:
        """`ctx.step.run(name, ...)` over `fn`."""

        async def step() -> Any:
            try:
                return await fn()
            except KnowledgeError as exc:
                if not fails_document(exc):
                    raise StepFaultError(exc, None) from None
                raise RunFailedError(run_error(code_of(reason_of(exc)))) from None

        return cast(T, await self.ctx.step.run(name, step))
