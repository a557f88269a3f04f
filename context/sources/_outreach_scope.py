"""The person an Outreach planner brief is about: the first `crm.person` ref of the request.

This module must never read the database; it only picks the person in scope from the request.
"""

from __future__ import annotations

from uuid import UUID

from context.models import ContextRequest

__all__ = ["PERSON_KIND", "person_in_scope"]

PERSON_KIND = "crm.person"
"""The ref kind that names the person an outreach brief is about."""


def person_in_scope(request: ContextRequest) -> UUID | None:
    """The id of the first `crm.person` ref of `request.entities` that is a UUID, else None."""
    for ref in request.entities:
        if ref.kind != PERSON_KIND:
            continue
        try:
            return UUID(ref.id)
        except ValueError:
            continue
    return None
