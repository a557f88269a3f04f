"""The projections of application rows: which columns of which table answer each supported ref kind.

A projection is what the context layer (the `application` source, the memory subject guard) and any
internal tool handler may read of a row: the scalar fields of the named row only, in a fixed order, with
nothing joined. Deal and activity projections carry owner, state, timing and relationship ids, never the
related rows. The intelligence projections are read as an embed of the tenant's bridge row, never from the
global table directly.

This module must never read the database and never derive a column list from request text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from state.refs import ResourceRef

__all__ = [
    "PROJECTIONS",
    "SUPPORTED_REF_KINDS",
    "KindProjection",
    "Projection",
]


@dataclass(frozen=True)
class Projection:
    """One resolved row: its ref (with a display label) and its non-null projected fields in order."""

    ref: ResourceRef
    """Kind and id as requested; label is the row's display name where one exists, else the input label."""
    fields: tuple[tuple[str, object], ...]
    """`(column, value)` pairs in projection order, non-null values only."""


@dataclass(frozen=True)
class KindProjection:
    """How one ref kind is read: the scoped table, the id column, the projected columns and the label."""

    table: str
    """The organization-scoped table the scoped client reads (the bridge for intelligence kinds)."""
    id_column: str
    """The column the ref id is matched against (the bridge foreign key for intelligence kinds)."""
    columns: tuple[str, ...]
    """The projected columns, in projection order."""
    label_column: str | None
    """The column that holds the row's display name, or None (the input label stays)."""
    embed_via: str | None = None
    """For an intelligence kind: the bridge foreign key whose global row is embedded."""


PROJECTIONS: Mapping[str, KindProjection] = MappingProxyType(
    {
        # The CRM company projection is the intelligence company projection with lifecycle_stage (a
        # tenant judgement) and without domain (the identity key of the shared row): spec, "The tenancy
        # rule of a global Intelligence ref".
        "crm.company": KindProjection(
            table="crm_companies",
            id_column="id",
            columns=(
                "name",
                "website",
                "description",
                "industry",
                "country",
                "linkedin_url",
                "employee_count_band",
                "lifecycle_stage",
            ),
            label_column="name",
        ),
        "crm.person": KindProjection(
            table="crm_people",
            id_column="id",
            columns=("full_name", "current_title", "email", "phone", "linkedin_url", "country"),
            label_column="full_name",
        ),
        "crm.deal": KindProjection(
            table="crm_deals",
            id_column="id",
            columns=(
                "name",
                "stage",
                "status",
                "amount",
                "currency",
                "expected_close_date",
                "owner_user_id",
                "company_id",
                "primary_person_id",
            ),
            label_column="name",
        ),
        "crm.activity": KindProjection(
            table="crm_activities",
            id_column="id",
            columns=(
                "activity_type",
                "subject",
                "status",
                "occurred_at",
                "due_at",
                "owner_user_id",
                "company_id",
                "person_id",
                "deal_id",
            ),
            label_column="subject",
        ),
        "crm.list": KindProjection(
            table="crm_lists",
            id_column="id",
            columns=("name", "description", "entity_kind"),
            label_column="name",
        ),
        "prospect": KindProjection(
            table="prospects",
            id_column="id",
            columns=(
                "review_state",
                "opportunity_score",
                "opportunity_reason",
                "recommended_action",
                "people_state",
                "people_state_reason",
            ),
            label_column=None,
        ),
        "intelligence.company": KindProjection(
            table="prospects",
            id_column="intel_company_id",
            columns=(
                "name",
                "domain",
                "website",
                "description",
                "industry",
                "country",
                "linkedin_url",
                "employee_count_band",
            ),
            label_column="name",
            embed_via="intel_company_id",
        ),
        "intelligence.person": KindProjection(
            table="prospect_people",
            id_column="intel_person_id",
            columns=("full_name", "current_title", "current_company_text", "email", "linkedin_url", "country"),
            label_column="full_name",
            embed_via="intel_person_id",
        ),
    }
)
"""Every supported ref kind and how it is read; a kind outside this map resolves to nothing."""

SUPPORTED_REF_KINDS: frozenset[str] = frozenset(PROJECTIONS)
"""The ref kinds a resolver owns."""
