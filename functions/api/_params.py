"""The query and path parameters the `/v1/` routes share, each with the description OpenAPI shows.

A route declares `organization_id: ScopeOrganization = None` instead of `UUID | None = None`: the same
parameter, parsed the same way, now described. This module must never validate beyond the parameter's type.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import Path, Query

from state.ids import OrganizationId

__all__ = [
    "ListedOrganization",
    "NamedOrganization",
    "PlatformScope",
    "ReceiptIdPath",
    "ScopeOrganization",
    "SourceIdPath",
]

ScopeOrganization = Annotated[
    UUID | None,
    Query(description="The organization whose data this is (an organization key names its own); omit it and "
          "set `platform=true` for the platform's documents."),
]  # fmt: skip
"""The organization of an organization-or-platform route."""
PlatformScope = Annotated[
    bool, Query(description="True for the platform's documents (shared by every organization), with no organization.")
]
"""The platform flag of an organization-or-platform route (an organization key may send only false)."""
NamedOrganization = Annotated[
    OrganizationId | None,
    Query(description="The organization to read (an organization key: its own, which it may omit); an operator "
          "omits it for every organization."),
]  # fmt: skip
"""An optional organization filter of a route an operator may also read across organizations."""
ListedOrganization = Annotated[
    UUID | None, Query(description="Only the keys of this organization; omit it for every key.")
]
"""The organization filter of the key list."""
SourceIdPath = Annotated[UUID, Path(description="The knowledge source's id.")]
"""A knowledge source in the path."""
ReceiptIdPath = Annotated[UUID, Path(description="The receipt's id.")]
"""A receipt in the path."""
