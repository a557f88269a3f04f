"""`memory-expiry-sweep`: every hour (UTC), close each expired memory chain with its tombstone.

An expired memory already leaves every brief the moment its time passes (`agent.live_memories`); this
sweep makes the chain say so too, by the same insert `memory.forget` makes (`memory.expiry.sweep_expired`).
Each step closes at most `DEFAULT_SWEEP_LIMIT` chains and the function takes another step while a step
fills its limit, up to `MAX_STEPS`; what is left waits for the next hour. A singleton: a second sweep
never runs beside the first (it is skipped). Returns how many chains it closed. This function must never
write a revision itself or delete anything.
"""

from __future__ import annotations

from typing import Any

import inngest

from functions._services import ServiceSlot
from memory.expiry import DEFAULT_SWEEP_LIMIT, sweep_expired

__all__ = ["CRON", "FUNCTION_ID", "MAX_STEPS", "make_memory_expiry_sweep"]

FUNCTION_ID = "memory-expiry-sweep"
CRON = "TZ=UTC 30 * * * *"
"""At minute 30 of every hour, UTC: half an hour away from `knowledge-sweep-pending`, so the two never meet."""
MAX_STEPS = 20
"""Steps one run takes at most (20 × 500 chains); the rest waits an hour, so one run stays small."""


def make_memory_expiry_sweep(client: inngest.Inngest, slot: ServiceSlot) -> inngest.Function[Any]:
    """Create the hourly expiry sweep over the services in `slot`."""

    @client.create_function(
        fn_id=FUNCTION_ID,
        name="Memory: close expired memories",
        trigger=inngest.TriggerCron(cron=CRON),
        singleton=inngest.Singleton(mode="skip"),
        concurrency=[inngest.Concurrency(limit=1)],
        retries=2,
    )
    async def memory_expiry_sweep(ctx: inngest.Context) -> dict[str, Any]:
        async def sweep() -> int:
            return await sweep_expired(slot.get().db, limit=DEFAULT_SWEEP_LIMIT)

        total = 0
        for step in range(MAX_STEPS):
            closed = await ctx.step.run(f"sweep-{step}", sweep)
            total += closed
            if closed < DEFAULT_SWEEP_LIMIT:
                break
        return {"tombstoned": total}

    return memory_expiry_sweep
