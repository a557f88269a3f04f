"""The demo tenant: the fixed ids and application rows `ac-context demo` writes, written idempotently.

`seed_demo_tenant` writes the organization, its user, CRM rows, a conversation and the demo agent's
definition; `seed_demo_sources` adds the rows the application-state sources read (the dossier, an
Intelligence company behind a prospect, an outreach sequence with its enrollment and thread, two earlier
runs); `start_demo_run`, `finish_demo_run` and `read_demo_memory_chain` serve the memory chapter. Ids are
fixed, so running the demo twice duplicates nothing; the two earlier runs refresh their `created_at` so they
stay inside the demo's lookback however old the database is. Statements are the `demo_*` blocks of
`state/queries.sql`.

This module must never write outside the demo tenant (and the one shared Intelligence row its prospect
names), and never write `agent.memories`: the memory chapter writes memory through the memory tools only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from uuid import UUID

import asyncpg

from state.db import Database
from state.queries import load_queries

__all__ = [
    "DEMO",
    "DemoTenant",
    "finish_demo_run",
    "read_demo_memory_chain",
    "seed_demo_sources",
    "seed_demo_tenant",
    "start_demo_run",
]

QUERIES = load_queries(__file__)


def _extra(suffix: str) -> UUID:
    """An id of the rows `seed_demo_sources` writes (all under `…0000000a…`)."""
    return UUID(f"00000000-0000-4000-8000-0000000a{suffix}")


@dataclass(frozen=True)
class DemoTenant:
    """The fixed ids of the demo tenant."""

    organization_id: UUID = field(default_factory=lambda: UUID("00000000-0000-4000-8000-00000000d001"))
    user_id: UUID = field(default_factory=lambda: UUID("00000000-0000-4000-8000-00000000d002"))
    definition_id: UUID = field(default_factory=lambda: UUID("00000000-0000-4000-8000-00000000d003"))
    conversation_id: UUID = field(default_factory=lambda: UUID("00000000-0000-4000-8000-00000000d004"))
    company_ids: tuple[UUID, ...] = field(
        default_factory=lambda: tuple(UUID(f"00000000-0000-4000-8000-0000000c000{i}") for i in (1, 2, 3))
    )
    person_ids: tuple[UUID, ...] = field(
        default_factory=lambda: tuple(UUID(f"00000000-0000-4000-8000-0000000e000{i}") for i in (1, 2))
    )
    deal_id: UUID = field(default_factory=lambda: UUID("00000000-0000-4000-8000-0000000f0001"))
    intel_company_id: UUID = field(default_factory=lambda: _extra("0001"))
    """The shared Intelligence company the demo prospect points at."""
    prospect_id: UUID = field(default_factory=lambda: _extra("0002"))


DEMO = DemoTenant()

_COMPANIES = [
    ("Northwind Traders", "northwind.example", "Wholesale food distribution", "customer"),
    ("Contoso Robotics", "contoso.example", "Warehouse automation", "opportunity"),
    ("Fabrikam Health", "fabrikam.example", "Clinic scheduling software", "lead"),
]
_PEOPLE = [("Ada Lovelace", "VP Operations", 0), ("Grace Hopper", "Head of Engineering", 1)]

_SEQUENCE = _extra("0003")
_ENROLLMENT = _extra("0004")
_MESSAGES = (_extra("0005"), _extra("0006"), _extra("0007"))
_RUNS = (_extra("0008"), _extra("0009"))
_SERVICE, _ICP, _OFFER, _DOC = _extra("000a"), _extra("000b"), _extra("000c"), _extra("000d")

_ORGANIZATION_ROWS: tuple[tuple[str, tuple[object, ...]], ...] = (
    ("demo_insert_company_profile", ()),
    ("demo_insert_service", (_SERVICE,)),
    ("demo_insert_ideal_customer_profile", (_ICP,)),
    ("demo_insert_offer", (_OFFER,)),
    ("demo_insert_document", (_DOC,)),
    ("demo_insert_prospect", (DEMO.prospect_id, DEMO.intel_company_id)),
    ("demo_insert_sequence", (_SEQUENCE,)),
    ("demo_insert_enrollment", (_ENROLLMENT, _SEQUENCE, DEMO.person_ids[1])),
)
"""The rows of the demo organization each statement writes, after the organization id (its `$1`)."""


async def seed_demo_tenant(db: Database) -> dict[str, int]:
    """Write the demo organization, its user, CRM rows, a conversation and a definition; return counts."""
    d = DEMO
    async with db.connection() as conn, conn.transaction():
        await conn.execute(QUERIES["demo_insert_organization"], d.organization_id)
        await conn.execute(QUERIES["demo_insert_user"], d.user_id, d.organization_id)
        for cid, (name, domain, desc, stage) in zip(d.company_ids, _COMPANIES, strict=True):
            await conn.execute(QUERIES["demo_insert_company"], cid, d.organization_id, name, domain, desc, stage)
        for pid, (name, title, company) in zip(d.person_ids, _PEOPLE, strict=True):
            await conn.execute(
                QUERIES["demo_insert_person"], pid, d.organization_id, d.company_ids[company], name, title
            )
        await conn.execute(QUERIES["demo_insert_deal"], d.deal_id, d.organization_id, d.company_ids[1])
        await conn.execute(QUERIES["demo_insert_definition"], d.definition_id, d.organization_id)
        await conn.execute(QUERIES["demo_insert_conversation"], d.conversation_id, d.organization_id, d.user_id)
        if not await conn.fetchval(QUERIES["demo_count_conversation_messages"], d.conversation_id):
            await conn.execute(QUERIES["demo_insert_first_message"], d.organization_id, d.conversation_id)
        counts = await conn.fetchrow(QUERIES["demo_count_crm_rows"], d.organization_id)
    assert counts is not None  # a SELECT of three scalar subqueries always answers one row
    return {name: int(counts[name]) for name in ("companies", "people", "deals")}


async def seed_demo_sources(db: Database) -> None:
    """Write the extra demo rows the application-state sources read, idempotently under fixed ids."""
    d = DEMO
    now = datetime.now(UTC)
    thread = (
        ("outbound", "Grace, a pilot for Contoso's warehouses?", now - timedelta(days=3)),
        ("inbound", "Interesting. What would the pilot cost?", now - timedelta(days=2)),
        ("outbound", "Sending the pilot playbook now.", now - timedelta(days=1)),
    )
    runs = (
        (
            {
                "summary": "Researched Contoso's warehouse footprint",
                "refs": [{"kind": "crm.company", "id": str(d.company_ids[1])}],
            },
            "succeeded",
        ),
        ({"summary": "Drafted the pilot proposal", "refs": [{"kind": "crm.deal", "id": str(d.deal_id)}]}, "waiting"),
    )
    async with db.connection() as conn, conn.transaction():
        await conn.execute(QUERIES["demo_insert_intel_company"], d.intel_company_id)
        for name, args in _ORGANIZATION_ROWS:
            await conn.execute(QUERIES[name], d.organization_id, *args)
        for message_id, (direction, body, sent_at) in zip(_MESSAGES, thread, strict=True):
            await conn.execute(
                QUERIES["demo_insert_outreach_message"],
                message_id,
                d.organization_id,
                _ENROLLMENT,
                d.person_ids[1],
                direction,
                body,
                sent_at,
            )
        for index, (run_id, (result, status)) in enumerate(zip(_RUNS, runs, strict=True)):
            await conn.execute(
                QUERIES["demo_upsert_run"],
                run_id,
                d.organization_id,
                d.user_id,
                d.definition_id,
                status,
                result,
                "approval of the proposal" if status == "waiting" else None,
                now - timedelta(hours=2 + index),
            )


async def start_demo_run(db: Database) -> UUID:
    """Open a new running run of the demo agent (each memory chapter gets its own) and return its id."""
    async with db.connection() as conn:
        run: UUID = await conn.fetchval(
            QUERIES["demo_start_memory_run"], DEMO.organization_id, DEMO.definition_id, DEMO.user_id
        )
    return run


async def finish_demo_run(db: Database, run: UUID) -> None:
    """Mark a demo run succeeded."""
    async with db.connection() as conn:
        await conn.execute(QUERIES["demo_finish_run"], run)


async def read_demo_memory_chain(db: Database, subject_key: str) -> Sequence[asyncpg.Record]:
    """Every revision of the demo agent's chain under `subject_key` (unordered: walk `supersedes_id`)."""
    async with db.connection() as conn:
        rows: list[asyncpg.Record] = await conn.fetch(
            QUERIES["demo_memory_chain"], DEMO.organization_id, DEMO.definition_id, subject_key
        )
    return rows
