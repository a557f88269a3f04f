"""The person an Outreach planner brief is about, and the one read both outreach sources make of them.

The person in scope is the first `crm.person` ref of the request whose id is a UUID. `PersonRowsSource`
is the retrieve both outreach sources share: no person or a zero limit reads nothing; otherwise the
source's own statement runs once inside `scoped_db` for the subject's organization, capped by `spec.limit`
(the source's `default_limit` when None), and the source turns the rows into items.

This module must never name a table or a column: each source says what it reads and how an item reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

from context.models import ContextItem, ContextRequest, ContextSourceSpec
from context.sources._base import DatabaseSource
from state.scoped import OrgScopedClient, scoped_db

__all__ = ["PERSON_KIND", "PersonRowsSource", "person_in_scope"]

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


class PersonRowsSource(DatabaseSource):
    """A source that reads the person in scope's rows for the organization, capped, and itemizes them."""

    default_limit: int
    """The rows read when the policy sets no limit."""

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        """The items of the person in scope's rows; none without a person or with a zero limit."""
        person_id = person_in_scope(request)
        if person_id is None or spec.limit == 0:
            return []
        limit = self.default_limit if spec.limit is None else spec.limit
        async with scoped_db(self._db, request.subject.organization_id) as client:
            rows = await self._read(client, person_id, limit)
        return self._items(rows)

    async def _read(self, client: OrgScopedClient, person_id: UUID, limit: int) -> list[asyncpg.Record]:
        raise NotImplementedError

    def _items(self, rows: Sequence[asyncpg.Record]) -> list[ContextItem]:
        raise NotImplementedError
