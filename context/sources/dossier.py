"""The `dossier` source: the Company dossier of the organization, one fact per item.

`read_dossier` reads the dossier of one organization through `scoped_db`, and `dossier_facts` turns it into
facts in the spec's order: the company, the services, one per ideal customer profile, one per offer, the
user section, one per active document (newest first), then one stating the total count of active
documents, which does not depend on how many document facts a budget keeps. `render_dossier_text` is the
text a person reads (HTTP API, CLI, Settings page), built from the very facts the model reads.

The source's options are `include_user` (default false; a subject with no user reads no user section) and
`include_documents` (default true). `spec.limit` caps the document facts only (default 20); a zero limit
returns no item and reads nothing. The organization part is cached for 60 seconds per process and evicted
in every process by a write (see `_dossier_cache`). Items carry no ref and no subject key.

It must never read another organization's dossier, never be marked required, and never write prose beyond
the one-line facts.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from pydantic import BaseModel

from context.models import ContextItem, ContextRequest, ContextSourceSpec
from context.options import DossierOptions
from context.sources._app_common import APP_QUERIES, item_tokens, value_text
from context.sources._dossier_cache import DEFAULT_DOSSIER_TTL_S, DossierCache
from state.db import Database
from state.scoped import OrgScopedClient, scoped_db

__all__ = [
    "DEFAULT_DOCUMENT_LIMIT",
    "Dossier",
    "DossierContextSource",
    "DossierFact",
    "OrganizationDossier",
    "dossier_facts",
    "read_dossier",
    "render_dossier_text",
]

DEFAULT_DOCUMENT_LIMIT = 20
"""The document facts read when the policy sets no limit."""


@dataclass(frozen=True)
class DossierFact:
    """One fact of the dossier: a title and a one-line body."""

    title: str
    """What the fact is about."""
    body: str
    """The fact."""
    recorded_at: datetime | None = None
    """When the fact was last written, where the row says."""


@dataclass(frozen=True)
class OrganizationDossier:
    """The organization part of a dossier (the part the cache holds), as facts in spec order."""

    company: DossierFact | None
    services: DossierFact | None
    profiles: tuple[DossierFact, ...]
    offers: tuple[DossierFact, ...]
    documents: tuple[DossierFact, ...] | None
    """The newest active documents, or None when documents were not asked for."""
    document_total: int
    """The total count of active documents, whatever the document cap kept."""


@dataclass(frozen=True)
class Dossier:
    """The whole dossier of one subject: the organization part and the optional user section."""

    organization: OrganizationDossier
    user: DossierFact | None = None


def _pairs(*pairs: tuple[str, object]) -> str:
    return "; ".join(f"{name} {value_text(value)}" for name, value in pairs if value not in (None, ""))


async def _read_organization(
    client: OrgScopedClient, *, include_documents: bool, document_limit: int
) -> OrganizationDossier:
    org_order = ["position", "id"]
    profile = await client.select(
        "org_company_profiles", ["company_name", "website", "industry", "headquarters", "description", "updated_at"]
    )
    services = await client.select("org_services", ["name", "description"], order_by=org_order)
    icps = await client.select(
        "org_ideal_customer_profiles", ["name", "description", "criteria", "created_at"], order_by=org_order
    )
    offers = await client.select("org_offers", ["name", "description", "price_text", "created_at"], order_by=org_order)
    company = None
    if profile:
        p = profile[0]
        company = DossierFact(
            "Company",
            _pairs(
                ("name", p["company_name"]),
                ("website", p["website"]),
                ("industry", p["industry"]),
                ("headquarters", p["headquarters"]),
                ("description", p["description"]),
            ),
            p["updated_at"],
        )
    services_fact = None
    if services:
        services_fact = DossierFact(
            "Services",
            "; ".join(f"{s['name']} ({s['description']})" if s["description"] else str(s["name"]) for s in services),
        )
    profiles = tuple(
        DossierFact(
            f"Ideal customer profile {r['name']}",
            _pairs(("description", r["description"]), ("criteria", r["criteria"])),
            r["created_at"],
        )
        for r in icps
    )
    offer_facts = tuple(
        DossierFact(
            f"Offer {r['name']}", _pairs(("description", r["description"]), ("price", r["price_text"])), r["created_at"]
        )
        for r in offers
    )
    documents: tuple[DossierFact, ...] | None = None
    total = 0
    if include_documents:
        rows = await client.fetch_named(APP_QUERIES["dossier_documents"], document_limit, table="org_documents")
        documents = tuple(
            DossierFact(f"Document {r['title']}", _pairs(("summary", r["summary"])), r["created_at"]) for r in rows
        )
        if rows:
            total = int(rows[0]["total"])
        elif document_limit > 0:
            total = 0
        else:
            counted = await client.fetch_named(APP_QUERIES["dossier_document_count"], table="org_documents")
            total = int(counted[0]["total"])
    return OrganizationDossier(company, services_fact, profiles, offer_facts, documents, total)


async def _read_user(client: OrgScopedClient, user_id: UUID) -> DossierFact | None:
    rows = await client.select("users", ["display_name", "job_title", "timezone"], where={"id": user_id})
    if not rows:
        return None
    r = rows[0]
    body = _pairs(("name", r["display_name"]), ("job title", r["job_title"]), ("timezone", r["timezone"]))
    return DossierFact("User", body) if body else None


async def read_dossier(
    db: Database,
    organization_id: UUID,
    *,
    user_id: UUID | None = None,
    include_user: bool = False,
    include_documents: bool = True,
    document_limit: int = DEFAULT_DOCUMENT_LIMIT,
    cache: DossierCache[OrganizationDossier] | None = None,
) -> Dossier:
    """Read the dossier of one organization (and its user section when asked and a user exists)."""
    variant: Hashable = (include_documents, document_limit)
    organization = cache.get(organization_id, variant) if cache is not None else None
    generation = cache.generation(organization_id) if cache is not None else (0, 0)
    want_user = include_user and user_id is not None
    if organization is not None and not want_user:
        return Dossier(organization)
    async with scoped_db(db, organization_id) as client:
        if organization is None:
            organization = await _read_organization(
                client, include_documents=include_documents, document_limit=document_limit
            )
            if cache is not None:
                cache.put(organization_id, variant, organization, generation=generation)
        user = await _read_user(client, user_id) if want_user and user_id is not None else None
    return Dossier(organization, user)


def dossier_facts(dossier: Dossier) -> list[DossierFact]:
    """The facts in spec order: company, services, profiles, offers, user, documents, document count."""
    org = dossier.organization
    facts: list[DossierFact] = []
    if org.company is not None:
        facts.append(org.company)
    if org.services is not None:
        facts.append(org.services)
    facts.extend(org.profiles)
    facts.extend(org.offers)
    if dossier.user is not None:
        facts.append(dossier.user)
    if org.documents is not None:
        facts.extend(org.documents)
        noun = "document" if org.document_total == 1 else "documents"
        # Says what it counts: the dossier's own documents table, never the knowledge sources.
        facts.append(
            DossierFact("Documents", f"{org.document_total} active Company dossier {noun} (not knowledge sources)")
        )
    return facts


def render_dossier_text(dossier: Dossier) -> str:
    """The dossier as a person reads it: one `title: body` line per fact, the same facts the model reads."""
    return "\n".join(f"{f.title}: {f.body}" if f.body else f.title for f in dossier_facts(dossier))


class DossierContextSource:
    """The organization's Company dossier, one fact per item, cached per process for 60 seconds."""

    name = "dossier"
    options_schema: type[BaseModel] = DossierOptions

    def __init__(self, db: Database, *, ttl_s: float = DEFAULT_DOSSIER_TTL_S) -> None:
        self._db = db
        self.cache: DossierCache[OrganizationDossier] = DossierCache(ttl_s=ttl_s)

    async def aclose(self) -> None:
        """Stop listening for dossier writes."""
        await self.cache.close()

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        """One item per dossier fact, in spec order."""
        if spec.limit == 0:
            return []
        options = DossierOptions.model_validate(spec.options)
        listening = await self.cache.start(self._db.url)
        dossier = await read_dossier(
            self._db,
            request.subject.organization_id,
            user_id=request.subject.user_id,
            include_user=options.include_user,
            include_documents=options.include_documents,
            document_limit=DEFAULT_DOCUMENT_LIMIT if spec.limit is None else spec.limit,
            cache=self.cache if listening else None,
        )
        return [
            ContextItem(
                source=self.name,
                kind="dossier",
                title=fact.title,
                body=fact.body,
                recorded_at=fact.recorded_at,
                tokens=item_tokens(fact.body),
            )
            for fact in dossier_facts(dossier)
        ]
