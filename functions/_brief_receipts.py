"""Recording brief receipts off the brief's path: a bounded in-process buffer flushed in batches.

`ReceiptRecorder.record` is called after a brief is built and costs an append to a deque (no I/O, no await):
a front door brief may have been built on a standby, and a receipt is a write, which goes to the primary. A
background task, started on the first record and stopped by `aclose` (the services' closers, so the app's
lifespan and the CLI's services own it), writes what the buffer holds every `interval_s` or as soon as
`batch` receipts wait, in one statement per batch (`state.brief_receipts.insert_receipts`).

What can be lost, and how it is counted (docs/operations.md, `AC_CONTEXT_BRIEF_RECEIPTS`): a crash loses the
receipts not yet written (at most one interval's, or `capacity`); a full buffer drops the new receipt and a
failed flush drops its batch, each counted in `ac_context_brief_receipts_dropped_total{reason}`. A receipt is a
record, never the brief's truth: losing one never fails a brief. A segment records inside its own Inngest step
with `write_now`, so a replay finds the step memoized and records nothing twice (a memo hit, which has no
step, is kept to once by its key).

This module must never store a brief's text, query, item title or body: `receipt_of` takes ids and counts.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from datetime import UTC, datetime
from uuid import UUID

from context.models import ContextBrief, ContextPolicy
from context.policies import NAMED_POLICIES
from functions._metrics import Metrics
from state.brief_receipts import BriefFace, BriefKind, BriefReceipt, SourceCounts, insert_receipts
from state.db import Database

__all__ = ["FACES", "ReceiptRecorder", "policy_name", "receipt_of"]

logger = logging.getLogger(__name__)

FACES: dict[str, BriefFace] = {"front_door": "http", "cli": "cli", "mcp": "mcp", "console": "console"}
"""The face of a front door build, by the route label its metrics carry."""


def policy_name(policy: ContextPolicy) -> str:
    """The name a receipt gives a frozen policy: a named platform policy's, else `run_snapshot`."""
    return next((name for name, named in NAMED_POLICIES.items() if named == policy), "run_snapshot")


def receipt_of(
    brief: ContextBrief,
    *,
    organization_id: UUID,
    face: BriefFace,
    kind: BriefKind,
    policy: str,
    run_id: UUID | None = None,
    segment: int | None = None,
    dedupe_key: str | None = None,
) -> BriefReceipt:
    """The receipt of one brief: its counts and its cited refs' kinds and ids, nothing it says."""
    names = set(brief.per_source_tokens) | set(brief.dropped) | set(brief.failed_sources)
    sources = {
        name: SourceCounts(
            tokens=brief.per_source_tokens.get(name, 0),
            dropped=brief.dropped.get(name, 0),
            failed=name in brief.failed_sources,
        )
        for name in names
    }
    cited = tuple(dict.fromkeys((ref.kind, ref.id) for ref in brief.items))
    return BriefReceipt(
        organization_id=organization_id, built_at=datetime.now(UTC), face=face, kind=kind, policy=policy,
        tokens=brief.tokens, sources=sources, cited=cited, run_id=run_id, segment=segment, dedupe_key=dedupe_key,
    )  # fmt: skip


class ReceiptRecorder:
    """The process's unwritten receipts and the task that writes them (see the module docstring)."""

    def __init__(
        self,
        db: Database,
        *,
        metrics: Metrics | None = None,
        capacity: int = 10_000,
        batch: int = 200,
        interval_s: float = 1.0,
        enabled: bool = True,
    ) -> None:
        self.db = db
        self.metrics = metrics
        self.capacity = capacity
        self.batch = batch
        self.interval_s = interval_s
        self.enabled = enabled
        """False records nothing (`AC_CONTEXT_BRIEF_RECEIPTS=false`, and the bench's "off" side)."""
        self._pending: deque[BriefReceipt] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def pending(self) -> int:
        """Receipts waiting for the next flush."""
        return len(self._pending)

    def record(self, receipt: BriefReceipt) -> None:
        """Queue a receipt for the background flush; a full buffer drops it, counted. Never raises, never waits."""
        if not self.enabled:
            return
        if len(self._pending) >= self.capacity or self._closed:
            self.count_dropped("overflow", 1)
            return
        self._pending.append(receipt)
        if len(self._pending) >= self.batch:
            self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="ac-context-brief-receipts")

    async def write_now(self, receipt: BriefReceipt) -> None:
        """Write one receipt at once (a segment's record step: idempotent through its dedupe key)."""
        if not self.enabled:
            return
        async with self.db.connection() as conn:
            written, _ = await insert_receipts(conn, [receipt])
        if self.metrics is not None and written:
            self.metrics.brief_receipts_written.inc(written)

    async def flush(self) -> int:
        """Write everything queued now, batch by batch; answers the receipts written."""
        written = 0
        while self._pending:
            batch = [self._pending.popleft() for _ in range(min(self.batch, len(self._pending)))]
            try:
                async with self.db.connection() as conn:
                    n, _ = await insert_receipts(conn, batch)
            except Exception as exc:  # a receipt is a record, never the brief: count the loss and go on
                logger.warning("could not write %d brief receipts: %s", len(batch), type(exc).__name__)
                self.count_dropped("error", len(batch))
                continue
            written += n
            if self.metrics is not None and n:
                self.metrics.brief_receipts_written.inc(n)
        return written

    async def _run(self) -> None:
        while not self._closed:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.interval_s)
            except TimeoutError:
                pass
            self._wake.clear()
            await self.flush()

    async def aclose(self) -> None:
        """Stop the task and write what is left (the services' shutdown)."""
        self._closed = True
        if self._task is not None:
            self._wake.set()
            task, self._task = self._task, None
            try:
                await task
            except asyncio.CancelledError:
                pass
        await self.flush()

    def count_dropped(self, reason: str, n: int) -> None:
        """Count `n` receipts not written (`overflow` or `error`) in `ac_context_brief_receipts_dropped_total`."""
        if self.metrics is not None:
            self.metrics.brief_receipts_dropped.labels(reason=reason).inc(n)
