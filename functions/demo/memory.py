"""The memory chapter of `ac-context demo`: remember, supersede, refuse, forget, and read back one brief.

For the demo tenant (`state.demo_tenant.DEMO`), a new run of the demo agent calls the two memory tools
exactly as a model would: it remembers a language preference, supersedes it, re-observes it unchanged (a
refusal, no row), remembers and then forgets a second preference, and records an observation about a CRM
company. It then prints the revision chain of the preference and a brief built over the `personal_memory`,
`application` and `memory` sources, which holds only the current revision. Running it again appends to the
chains (memory is append only) and never forks them.

This module must never write `agent.memories` except through `MemoryTools`, and holds no SQL: the run rows
and the chain it prints are read and written by `state.demo_tenant`.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from context.builder import DefaultContextBuilder
from context.models import (
    ContextPolicy,
    ContextRequest,
    ContextSource,
    ContextSourceSpec,
    ContextSubject,
    ResourceRef,
)
from context.packer import ContextPacker
from context.registry import ContextSourceRegistry
from context.sources.application import ApplicationContextSource
from context.sources.memory import MemoryContextSource
from context.sources.personal_memory import PersonalMemoryContextSource
from functions._services import configured_memory_service, default_embedders
from memory.errors import MemoryRefusedError
from memory.models import ToolInvocation
from memory.tools import FORGET_TOOL, REMEMBER_TOOL, MemoryTools
from state.db import Database
from state.demo_tenant import DEMO, finish_demo_run, read_demo_memory_chain, start_demo_run
from state.settings import get_settings

__all__ = ["DEMO_MEMORY_POLICY", "demo_memory"]

DEMO_MEMORY_POLICY = ContextPolicy(
    sources=[
        ContextSourceSpec(name="personal_memory", token_budget=400),
        ContextSourceSpec(name="application", token_budget=600, limit=20),
        ContextSourceSpec(name="memory", token_budget=500, limit=20),
    ],
    total_token_budget=2000,
)
"""The sources the demo brief reads: the person's instructions, the Contoso row, and memory."""


async def _call(console: Console, tools: MemoryTools, inv: ToolInvocation, name: str, args: dict[str, Any]) -> Any:
    shown = args.get("text") or args.get("memory_id")
    try:
        result = await tools.call(name, inv, args)
    except MemoryRefusedError as refused:
        console.print(f"  {name}({escape(repr(shown))}) -> [yellow]refused[/] ({refused.code}): {escape(str(refused))}")
        return None
    verb = "tombstone" if result["forgotten"] else "revision"
    after = f" after {result['supersedes_id']}" if result["supersedes_id"] else " (a new chain)"
    console.print(f"  {name}({escape(repr(shown))}) -> {verb} {result['memory_id']}{after}")
    return result


async def _chain_table(db: Database, subject_key: str) -> Table:
    rows = await read_demo_memory_chain(db, subject_key)
    by_parent = {r["supersedes_id"]: r for r in rows}
    ordered, node = [], by_parent.get(None)
    while node is not None:  # walk the chain from its root: lineage, never a time sort
        ordered.append(node)
        node = by_parent.get(node["id"])
    table = Table("revision", "supersedes", "text", "state", title=subject_key)
    for row in ordered:
        state = "head" if row["is_head"] else "superseded"
        if row["forgotten_at"] is not None:
            state += ", tombstone"
        table.add_row(str(row["id"])[:8], str(row["supersedes_id"] or "-")[:8], Text(row["text"] or "-"), state)
    return table


async def demo_memory(db: Database, console: Console) -> None:
    """Remember, supersede, refuse and forget through the memory tools, then show the brief they produce."""
    run = await start_demo_run(db)
    inv = ToolInvocation(
        organization_id=DEMO.organization_id, definition_id=DEMO.definition_id, run_id=run, user_id=DEMO.user_id
    )
    tools = MemoryTools(configured_memory_service(db, get_settings(), default_embedders))  # the service's own
    contoso = str(DEMO.company_ids[1])
    console.print(f"run {run} of the demo agent calls the memory tools:")
    language = {"attribute": "preference.language", "scope": "user"}
    await _call(console, tools, inv, REMEMBER_TOOL, {**language, "text": "Write in British English"})
    await _call(console, tools, inv, REMEMBER_TOOL, {**language, "text": "Write in American English"})
    await _call(console, tools, inv, REMEMBER_TOOL, {**language, "text": "Write in American English"})
    meetings = await _call(
        console,
        tools,
        inv,
        REMEMBER_TOOL,
        {"attribute": "preference.meeting_time", "scope": "user", "text": "Book calls before 10:00"},
    )
    if meetings is not None:
        await _call(console, tools, inv, FORGET_TOOL, {"memory_id": meetings["memory_id"]})
    await _call(
        console,
        tools,
        inv,
        REMEMBER_TOOL,
        {
            "attribute": "observation.buying_process",
            "scope": "organization",
            "text": "Pilot purchases go through the procurement committee",
            "subject_refs": [{"kind": "crm.company", "id": contoso, "label": "Contoso Robotics"}],
        },
    )
    await finish_demo_run(db, run)

    console.print(await _chain_table(db, f"user:{DEMO.user_id}:preference.language"))
    console.print(await _chain_table(db, f"user:{DEMO.user_id}:preference.meeting_time"))

    sources: list[ContextSource] = [
        PersonalMemoryContextSource(db),
        ApplicationContextSource(db),
        MemoryContextSource(db),
    ]
    builder = DefaultContextBuilder(ContextSourceRegistry(sources), ContextPacker())
    subject = ContextSubject.for_run(
        organization_id=DEMO.organization_id, definition_id=DEMO.definition_id, user_id=DEMO.user_id
    )
    request = ContextRequest(
        subject=subject,
        query="Draft the Contoso pilot follow-up",
        entities=[ResourceRef(kind="crm.company", id=contoso)],
    )
    brief = await builder.build(request, DEMO_MEMORY_POLICY)
    console.print("the brief of the next run holds the current revision only:")
    console.print(brief.text, markup=False, highlight=False)
    console.print(f"tokens {brief.tokens}, per source {brief.per_source_tokens}, dropped {brief.dropped}")
