"""Shared helpers of the application-state source tests: requests, specs and extra row factories."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from context.models import ContextRequest, ContextSourceSpec, ContextSubject, ResourceRef
from tests.factories import Factory


def ref(kind: str, ident: UUID | str, label: str | None = None) -> ResourceRef:
    return ResourceRef(kind=kind, id=str(ident), label=label)


def request(
    org: UUID,
    *entities: ResourceRef,
    user: UUID | None = None,
    trigger: UUID | None = None,
    run_id: UUID | None = None,
    conversation_id: UUID | None = None,
    query: str = "",
) -> ContextRequest:
    return ContextRequest(
        subject=ContextSubject(organization_id=org, user_id=user, trigger_id=trigger),
        query=query,
        entities=list(entities),
        run_id=run_id,
        conversation_id=conversation_id,
    )


def spec(name: str, *, limit: int | None = None, budget: int = 4000, **options: Any) -> ContextSourceSpec:
    return ContextSourceSpec(name=name, token_budget=budget, limit=limit, options=options)


class AppFactory(Factory):
    """The shared factory plus the dossier and outreach rows these tests need."""

    async def run_result(self, org: UUID, result: object, *, created_at: datetime | None = None, **values: Any) -> UUID:
        """A run whose `result` is stored as a JSON object (the shared factory stores dicts as JSON strings)."""
        values.setdefault("status", "succeeded")
        if created_at is not None:
            values["created_at"] = created_at
        cols = ["organization_id", "result", *values]
        params = ", ".join(f"${i + 1}" for i in range(len(cols)))
        async with self.db.connection() as conn:
            run_id = await conn.fetchval(
                f"INSERT INTO agent.runs ({', '.join(cols)}) VALUES ({params}) RETURNING id",
                org,
                result,
                *values.values(),
            )
        return UUID(str(run_id))

    async def company_profile(self, org: UUID, **values: Any) -> None:
        values.setdefault("company_name", "Acme")
        await self.insert("public.org_company_profiles", organization_id=org, **values)

    async def service(self, org: UUID, name: str, **values: Any) -> UUID:
        return await self.insert_id("public.org_services", organization_id=org, name=name, **values)

    async def icp(self, org: UUID, name: str, **values: Any) -> UUID:
        return await self.insert_id("public.org_ideal_customer_profiles", organization_id=org, name=name, **values)

    async def offer(self, org: UUID, name: str, **values: Any) -> UUID:
        return await self.insert_id("public.org_offers", organization_id=org, name=name, **values)

    async def document(self, org: UUID, title: str, *, created_at: datetime | None = None, **values: Any) -> UUID:
        if created_at is not None:
            values["created_at"] = created_at
        return await self.insert_id("public.org_documents", organization_id=org, title=title, **values)

    async def sequence(self, org: UUID, name: str, step_count: int = 3) -> UUID:
        return await self.insert_id("public.outreach_sequences", organization_id=org, name=name, step_count=step_count)

    async def enrollment(self, org: UUID, sequence_id: UUID, person_id: UUID, **values: Any) -> UUID:
        values.setdefault("state", "active")
        return await self.insert_id(
            "public.outreach_enrollments",
            organization_id=org,
            sequence_id=sequence_id,
            person_id=person_id,
            **values,
        )

    async def outreach_message(
        self, org: UUID, person_id: UUID, body: str, *, direction: str = "outbound", **values: Any
    ) -> UUID:
        return await self.insert_id(
            "public.outreach_messages",
            organization_id=org,
            person_id=person_id,
            body=body,
            direction=direction,
            **values,
        )
