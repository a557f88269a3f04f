"""Which outbox events are stuck (state/queries.sql `outbox_backlog`, read by `/readyz` in functions/api/ops.py).

The rule, as `Backlog.stuck` and `/readyz` say it: an event is stuck when it has waited `stuck_after_s` or
more *with a send error*. An event a worker leased long ago and still holds, with no send error, is in
flight, not stuck: two such events, with none delivered meanwhile, leave `/readyz` ready with `stuck: 0`.
The same events once their sends fail are stuck, and then `/readyz` answers 503 `events_undeliverable`.
"""

from __future__ import annotations

from uuid import UUID

from state import outbox
from state.outbox import OutboxEvent
from tests.integration.functions.conftest import Service

HOUR_AGO = "now() - interval '1 hour'"


async def _held_long_ago(service: Service) -> list[UUID]:
    """Two events written an hour ago and leased then, for an hour more, by a worker that is still at it."""
    async with service.db.connection() as conn, conn.transaction():
        ids = await outbox.enqueue(conn, [OutboxEvent("test/held", {"n": 1}), OutboxEvent("test/held", {"n": 2})])
    claimed = await outbox.claim(service.db, limit=10, lease_s=3600, ids=ids, holder="elsewhere:1:worker")
    assert sorted(e.id for e in claimed) == sorted(ids)
    async with service.db.connection() as conn:
        await conn.execute(
            f"UPDATE agent.event_outbox SET created_at = {HOUR_AGO}, heartbeat_at = {HOUR_AGO} WHERE id = ANY ($1)",
            ids,
        )
    return ids


async def test_an_event_leased_long_ago_without_a_send_error_is_not_stuck(service: Service) -> None:
    ids = await _held_long_ago(service)
    waiting = await outbox.backlog(service.db, stuck_after_s=300)
    assert (waiting.waiting, waiting.stuck, waiting.stuck_error) == (2, 0, None), waiting
    assert waiting.oldest_s >= 3500 and not waiting.delivered_recently
    ready = await service.http.get("/readyz")
    assert ready.status_code == 200, f"a leased event without a send error fails no readiness: {ready.text}"
    assert ready.json()["outbox"]["stuck"] == 0 and ready.json()["events"]["waiting"] == 2, ready.json()

    await outbox.mark_failed(service.db, ids, error="SendEventsError: Event key not found", retry_in_s=3600)
    stuck = await outbox.backlog(service.db, stuck_after_s=300)
    assert (stuck.stuck, stuck.stuck_error) == (2, "SendEventsError: Event key not found"), stuck
    failing = await service.http.get("/readyz")
    assert failing.status_code == 503 and failing.json()["error"]["code"] == "events_undeliverable", failing.text
