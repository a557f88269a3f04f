"""Deliver the event outbox (`state.outbox`) to Inngest: inline after a request, and by a drainer after that.

A route writes its events to the outbox in the transaction of its state change, then calls
`EventOutbox.deliver(ids)`: the rows are claimed and sent at once, each as an `inngest.Event` whose id is
the row's id (so a resend is deduplicated by Inngest). When the send fails the rows stay, with their
error and a backoff, and the drainer the service runs (`start`/`stop`, in the app's lifespan) sends them
when the Inngest server answers again; the route answers 202 with the event `queued`, never 502, and the
source keeps its state. Two service processes never send one row at once (the claim is a lease).

Each row goes on its own schedule: a batch the event API refuses (one oversized or malformed event fails
the whole request) is sent again one row at a time, so the good rows leave now and only the bad one waits
its own backoff. In-process runs hold a short lease renewed by a heartbeat while they run, and a starting
process takes over at once the rows of a dead holder on this machine (`functions.outbox.holders`).

This module must never hold a business rule: it moves rows from the outbox to Inngest and records how.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from uuid import UUID

import inngest

from functions._services import ServiceSlot
from functions.event_routes import InProcessRunner
from functions.outbox.holders import holder_alive, host_prefix, this_holder
from state import outbox
from state.outbox import OutboxEntry

__all__ = ["Delivery", "EventOutbox", "describe_send_error", "inngest_reachable"]

logger = logging.getLogger("functions.outbox")

BATCH = 50
"""Rows claimed and sent in one request to the event API."""
IN_PROCESS_LEASE_S = 60.0
"""How long an in-process run's lease lasts past its last heartbeat (another worker may take it then)."""
HEARTBEAT_S = 15.0
"""How often a running in-process run renews its lease."""
ALONE_FAILURES = 2
"""After a refused batch, this many rows refused alone with none sent means the endpoint refuses them all."""
IN_PROCESS_ATTEMPTS = 5
"""In-process runs of one row before it is given up (its error kept on the row and in the log)."""
MIN_AGE_S = 1.0
"""The drainer leaves a row this long to the request that wrote it, which sends it inline first."""


def describe_send_error(exc: BaseException) -> str:
    """One line saying why a send failed: the error type and its first line."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


def describe_run_error(exc: BaseException) -> str:
    """One line naming why an in-process run failed: the error's code (ours) and type, never its message."""
    code = getattr(exc, "code", None)
    return f"{code}: {type(exc).__name__}" if isinstance(code, str) and code else type(exc).__name__


@dataclass(frozen=True, slots=True)
class Delivery:
    """What an inline delivery achieved: `sent` (with the event ids) or `queued` (with the error)."""

    status: str
    """`sent` when every event left, `queued` when some wait in the outbox for the drainer."""
    event_ids: tuple[str, ...]
    """The ids of the events (the outbox row ids), sent or waiting."""
    error: str | None = None
    """Why the send failed, when it did."""


async def inngest_reachable(client: inngest.Inngest, *, timeout_s: float = 0.5) -> bool:
    """Whether anything answers HTTP at the client's event API origin (the dev server, in dev mode)."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=timeout_s) as http:
            await http.get(client.event_api_origin)
    except httpx.HTTPError:
        return False
    return True


class EventOutbox:
    """Sends outbox rows to Inngest: `deliver(ids)` inline, and a drainer task for what is left."""

    def __init__(
        self,
        slot: ServiceSlot,
        client: Callable[[], inngest.Inngest],
        *,
        poll_s: float = 5.0,
        lease_s: float = 60.0,
        max_backoff_s: float = 300.0,
        in_process_lease_s: float = IN_PROCESS_LEASE_S,
        heartbeat_s: float = HEARTBEAT_S,
    ) -> None:
        self.slot = slot
        self.client = client
        self.poll_s = poll_s
        self.lease_s = lease_s
        self.max_backoff_s = max_backoff_s
        self.in_process_lease_s = in_process_lease_s
        self.heartbeat_s = heartbeat_s
        self.last_error: str | None = None
        self.runner: InProcessRunner | None = None
        """Set in dev mode with no Inngest server: the rows' work runs here instead of being sent."""
        self._kick = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._taken_over = False

    async def deliver(self, ids: Sequence[UUID]) -> Delivery:
        """Send the rows `ids` now; what fails stays in the outbox for the drainer."""
        event_ids = tuple(str(i) for i in ids)
        if not ids:
            return Delivery("sent", ())
        if self.runner is not None:  # the work runs in the drainer, not in the request
            self._kick.set()
            return Delivery("in_process", event_ids)
        db = self.slot.get().db
        claimed = await outbox.claim(db, limit=len(ids), lease_s=self.lease_s, ids=ids, holder=this_holder())
        sent, error = await self._send(claimed) if claimed else ([], None)
        if len(sent) == len(ids):
            return Delivery("sent", event_ids)
        self._kick.set()
        return Delivery("queued", event_ids, error or "another worker is sending them")

    async def drain_once(self) -> int:
        """Send every due row once; how many left."""
        sent = 0
        while True:
            db = self.slot.get().db
            if self.runner is not None:
                claimed = await outbox.claim(db, limit=1, lease_s=self.in_process_lease_s, holder=this_holder())
                if not claimed:
                    return sent
                sent += await self._run_here(claimed[0])
                continue
            claimed = await outbox.claim(
                db, limit=BATCH, lease_s=self.lease_s, min_age_s=MIN_AGE_S, holder=this_holder()
            )
            if not claimed:
                return sent
            went, _ = await self._send(claimed)
            if not went:  # every row waits its backoff: the endpoint refuses them now
                return sent
            sent += len(went)

    async def take_over_dead_holders(self) -> int:
        """End now the leases held by dead processes of this machine, so their rows run again; how many."""
        db = self.slot.get().db
        released = 0
        for row_id, holder in await outbox.held_on(db, host_prefix()):
            if not holder_alive(holder) and await outbox.release(db, row_id, holder=holder):
                logger.warning("outbox: took over the event %s of %s, which is gone", row_id, holder)
                released += 1
        return released

    async def _run_here(self, entry: OutboxEntry) -> int:
        assert self.runner is not None
        db = self.slot.get().db
        if entry.attempts >= IN_PROCESS_ATTEMPTS:  # interrupted that often (its run kills the process, say)
            error = entry.last_error or "interrupted"
            await outbox.mark_sent(db, [entry.id], by="given-up", error=error)
            await self._fail_sources(entry, f"ingestion failed after its retries: {error}")
            return 0
        heartbeat = asyncio.create_task(self._heartbeat(entry), name=f"outbox-heartbeat-{entry.id}")
        try:
            await self.runner.run(entry)
        except Exception as exc:  # the source is not lost: the row waits and runs again after its backoff
            error = describe_run_error(exc)  # a run's error may quote a document: its code and type only
            self.last_error = error
            logger.warning("outbox: the in-process run of %s failed: %s", entry.name, error)
            if entry.attempts + 1 >= IN_PROCESS_ATTEMPTS:
                await outbox.mark_sent(db, [entry.id], by="given-up", error=error)
                await self._fail_sources(entry, f"ingestion failed after its retries: {error}")
            else:
                await outbox.mark_failed(
                    db, [entry.id], error=error, retry_in_s=min(self.max_backoff_s, 2.0**entry.attempts)
                )
            return 0
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        await outbox.mark_sent(db, [entry.id], by="in-process")
        return 1

    async def _heartbeat(self, entry: OutboxEntry) -> None:
        """Renew the run's lease every `heartbeat_s` while it runs, until the row is no longer ours."""
        while True:
            await asyncio.sleep(self.heartbeat_s)
            try:
                ours = await outbox.renew(
                    self.slot.get().db, entry.id, holder=this_holder(), lease_s=self.in_process_lease_s
                )
            except Exception as exc:  # the database away for a moment: the lease still has its minute
                logger.warning("outbox: could not renew the lease of %s: %s", entry.id, describe_send_error(exc))
                continue
            if not ours:
                return

    async def _fail_sources(self, entry: OutboxEntry, reason: str) -> None:
        from knowledge.ingestion.steps import mark_failed

        ids = entry.data.get("source_ids") or [entry.data.get("source_id")]
        for source_id in ids:
            if source_id is not None:
                await mark_failed(self.slot.get().db, UUID(str(source_id)), reason)

    async def _send(self, entries: Sequence[OutboxEntry]) -> tuple[list[UUID], str | None]:
        """Send `entries`, each on its own schedule: (the ids that left, the first error)."""
        try:
            await self._post(entries)
        except Exception as exc:  # any failure of the send: split it, or the row waits with why
            error = describe_send_error(exc)
        else:
            await self._sent(entries)
            return [e.id for e in entries], None
        if len(entries) == 1:
            await self._failed(entries, error)
            return [], error
        sent: list[UUID] = []
        refused = 0
        # rows that never failed first, in random order among equals: two poisoned rows cannot stand first
        # at every drain and hold the others back through the stop below
        ordered = sorted(random.sample(list(entries), len(entries)), key=lambda e: e.attempts)
        for n, entry in enumerate(ordered):
            if not sent and refused >= ALONE_FAILURES:  # the endpoint refuses every row, not one
                await self._failed(ordered[n:], error)
                break
            try:
                await self._post([entry])
            except Exception as exc:  # this row alone is refused: it waits its own backoff
                refused += 1
                await self._failed([entry], describe_send_error(exc))
            else:
                await self._sent([entry])
                sent.append(entry.id)
        self.last_error = error
        return sent, error

    async def _post(self, entries: Sequence[OutboxEntry]) -> None:
        """One request to the event API with `entries`."""
        await self.client().send([inngest.Event(name=e.name, data=dict(e.data), id=str(e.id)) for e in entries])

    async def _sent(self, entries: Sequence[OutboxEntry]) -> None:
        self.last_error = None
        await outbox.mark_sent(self.slot.get().db, [e.id for e in entries], by="inngest")

    async def _failed(self, entries: Sequence[OutboxEntry], error: str) -> None:
        """Record a refused send of `entries`, each with its own attempts and backoff."""
        self.last_error = error
        db = self.slot.get().db
        for entry in entries:
            backoff = min(self.max_backoff_s, 2.0 ** min(entry.attempts, 10))
            await outbox.mark_failed(db, [entry.id], error=error, retry_in_s=backoff)
        logger.warning("outbox: %d event(s) wait, the send failed: %s", len(entries), error)

    async def start(self) -> None:
        """Start the drainer task."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="event-outbox-drainer")

    async def stop(self) -> None:
        """Stop the drainer task."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll_s):
                    await self._kick.wait()
            self._kick.clear()
            if not self.slot.ready:
                continue
            try:
                if not self._taken_over:
                    await self.take_over_dead_holders()
                    self._taken_over = True
                await self.drain_once()
            except Exception as exc:  # the database away, say: try again at the next poll
                logger.warning("outbox: the drainer could not read the outbox: %s", describe_send_error(exc))
