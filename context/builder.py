"""The context builder: reads every enabled source concurrently and hands their items to the packer.

It schedules every enabled source before it waits for any, applies the timeout to each read on its own,
and collects the results in policy order whatever order they finish in. An exception, a timeout, a source
missing from the registry, and an item that names another source are each a failure of that source. A
required failure raises `RequiredContextSourceError` naming every failed required source, before any brief
is made; an optional failure is named in the brief. An outer cancellation cancels the reads still running
and makes no brief. A disabled source is never resolved and never read.

It must never call a model, write prose, read a tenancy filter from a spec, or retry a source.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass
from typing import Protocol

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
from state.db import shared_sessions

__all__ = ["ContextBuilder", "DefaultContextBuilder", "RequiredContextSourceError"]

logger = logging.getLogger(__name__)


class ContextBuilder(Protocol):
    """Anything that builds a brief for a request under a policy."""

    async def build(self, request: ContextRequest, policy: ContextPolicy) -> ContextBrief:
        """Build the brief."""
        ...


@dataclass(frozen=True)
class _Outcome:
    """The answer of one read: its items, or the reason it failed."""

    items: list[ContextItem]
    failure: str | None = None
    cut: tuple[CutCandidate, ...] = ()


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
        gathered = await self._gather(request, policy, explain=False)
        if gathered is None:
            return ContextBrief.empty()
        items, failed, _ = gathered
        return self._packer.pack(items, policy, failed_sources=failed)

    async def build_explained(
        self, request: ContextRequest, policy: ContextPolicy
    ) -> tuple[ContextBrief, BriefExplanation]:
        """Build like `build`, with the packer's explanation of every item it was given (the same one pack).

        A source that can say what it cut before the packer (`ExplainingContextSource`) is read through
        `retrieve_explained`, and its cuts join the explanation's `cut`; the brief is the one `build` makes.
        """
        gathered = await self._gather(request, policy, explain=True)
        if gathered is None:
            return ContextBrief.empty(), BriefExplanation.empty(policy.total_token_budget)
        items, failed, cut = gathered
        brief, explanation = self._packer.pack_explained(items, policy, failed_sources=failed)
        return brief, explanation.model_copy(update={"cut": cut}) if cut else explanation

    async def _gather(
        self, request: ContextRequest, policy: ContextPolicy, *, explain: bool
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
                    if source is None:
                        reads.append(_Outcome([], "not in the process registry"))
                    else:
                        reads.append(
                            asyncio.create_task(self._read(source, request, spec, explain), name=f"context:{spec.name}")
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
            return _Outcome([], f"timed out after {self._timeout:g} s")
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            return _Outcome([], "the read cancelled itself")
        except Exception as exc:
            return _Outcome([], f"{type(exc).__name__}: {exc}")


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
