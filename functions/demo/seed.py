"""The demo tenant: a small, fixed organization whose rows `ac-context demo` writes idempotently.

Ids are fixed so running the demo twice updates nothing and duplicates nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from state.db import Database

__all__ = ["DEMO", "DemoTenant", "seed_demo_tenant"]


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


DEMO = DemoTenant()

_COMPANIES = [
    ("Northwind Traders", "northwind.example", "Wholesale food distribution", "customer"),
    ("Contoso Robotics", "contoso.example", "Warehouse automation", "opportunity"),
    ("Fabrikam Health", "fabrikam.example", "Clinic scheduling software", "lead"),
]
_PEOPLE = [("Ada Lovelace", "VP Operations", 0), ("Grace Hopper", "Head of Engineering", 1)]


async def seed_demo_tenant(db: Database) -> dict[str, int]:
    """Write the demo organization, its user, CRM rows, a conversation and a definition; return counts."""
    d = DEMO
    async with db.connection() as conn, conn.transaction():
        await conn.execute(
            "INSERT INTO organizations (id, name) VALUES ($1, 'Acme Demo') ON CONFLICT (id) DO NOTHING",
            d.organization_id,
        )
        await conn.execute(
            "INSERT INTO users (id, organization_id, email, display_name, job_title) "
            "VALUES ($1, $2, 'demo@acme.example', 'Dana Demo', 'Account Executive') ON CONFLICT (id) DO NOTHING",
            d.user_id,
            d.organization_id,
        )
        for cid, (name, domain, desc, stage) in zip(d.company_ids, _COMPANIES, strict=True):
            await conn.execute(
                "INSERT INTO crm_companies (id, organization_id, name, domain, description, lifecycle_stage) "
                "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
                cid,
                d.organization_id,
                name,
                domain,
                desc,
                stage,
            )
        for pid, (name, title, company) in zip(d.person_ids, _PEOPLE, strict=True):
            await conn.execute(
                "INSERT INTO crm_people (id, organization_id, company_id, full_name, current_title) "
                "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
                pid,
                d.organization_id,
                d.company_ids[company],
                name,
                title,
            )
        await conn.execute(
            "INSERT INTO crm_deals (id, organization_id, name, stage, status, amount, currency, company_id) "
            "VALUES ($1, $2, 'Contoso pilot', 'proposal', 'open', 48000, 'EUR', $3) ON CONFLICT (id) DO NOTHING",
            d.deal_id,
            d.organization_id,
            d.company_ids[1],
        )
        await conn.execute(
            "INSERT INTO agent.definitions (id, organization_id, definition_kind, name, status, safe_summary) "
            "VALUES ($1, $2, 'agent', 'Account researcher', 'published', "
            "'Researches an account and drafts a short brief for the account executive.') "
            "ON CONFLICT (id) DO NOTHING",
            d.definition_id,
            d.organization_id,
        )
        await conn.execute(
            "INSERT INTO conversations (id, organization_id, user_id, title, summary) VALUES "
            "($1, $2, $3, 'Contoso follow-up', 'Dana is preparing the Contoso pilot proposal.') "
            "ON CONFLICT (id) DO NOTHING",
            d.conversation_id,
            d.organization_id,
            d.user_id,
        )
        if not await conn.fetchval(
            "SELECT count(*) FROM conversation_messages WHERE conversation_id = $1", d.conversation_id
        ):
            await conn.execute(
                "INSERT INTO conversation_messages (organization_id, conversation_id, role, content, created_at) "
                "VALUES ($1, $2, 'user', 'What stage is the Contoso deal in, and who is our contact?', now())",
                d.organization_id,
                d.conversation_id,
            )
        counts = {
            "companies": await conn.fetchval(
                "SELECT count(*) FROM crm_companies WHERE organization_id = $1", d.organization_id
            ),
            "people": await conn.fetchval(
                "SELECT count(*) FROM crm_people WHERE organization_id = $1", d.organization_id
            ),
            "deals": await conn.fetchval(
                "SELECT count(*) FROM crm_deals WHERE organization_id = $1", d.organization_id
            ),
        }
    return {k: int(v) for k, v in counts.items()}
