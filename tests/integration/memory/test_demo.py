"""The memory chapter of the demo: run twice on the demo tenant, the brief holds the current revision only."""

from __future__ import annotations

import io

from rich.console import Console

from functions.demo.memory import demo_memory
from state.db import Database
from state.demo_tenant import DEMO, seed_demo_tenant


async def test_the_demo_brief_holds_only_the_current_revision_and_reruns_append_without_forks(db: Database) -> None:
    await seed_demo_tenant(db)
    outputs = []
    for _ in range(2):
        out = io.StringIO()
        await demo_memory(db, Console(file=out, width=200, color_system=None))
        outputs.append(out.getvalue())
    brief = outputs[-1].split("holds the current revision only:")[1]
    assert "Write in American English" in brief and "British" not in brief
    assert "Book calls before 10:00" not in brief  # forgotten
    # The CRM row about the lifecycle and the memory about the buying process are both kept.
    assert "lifecycle_stage: opportunity" in brief and "procurement committee" in brief
    assert "refused (memory_duplicate)" in outputs[0]
    async with db.connection() as conn:
        heads = await conn.fetchval(
            "SELECT count(*) FROM agent.memory_heads WHERE organization_id = $1 AND subject_key = $2",
            DEMO.organization_id,
            f"user:{DEMO.user_id}:preference.language",
        )
    assert heads == 1
