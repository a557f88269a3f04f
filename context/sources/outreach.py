"""The `outreach` source: the enrollment state of the person in scope, for the Outreach planner.

The person in scope is the first `crm.person` ref of `request.entities` (none, no item). It reads that
person's `outreach_enrollments` with their `outreach_sequences` in one statement (`outreach_enrollments`
in `app_queries.sql`), both filtered by the subject's organization, most recently updated first, capped by
`spec.limit` (default `DEFAULT_ENROLLMENT_LIMIT`; a zero limit reads nothing). One item per enrollment:
the sequence, the step out of the sequence's steps, the status and the next action with its time.

It must never read another organization's enrollments, never read message bodies (the thread is the
`outreach_thread` source), and never write prose.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

from context.models import ContextItem
from context.sources._app_common import APP_QUERIES, item_tokens, value_text
from context.sources._outreach_scope import PersonRowsSource
from state.refs import ResourceRef
from state.scoped import OrgScopedClient

__all__ = ["DEFAULT_ENROLLMENT_LIMIT", "OUTREACH_ENROLLMENT_KIND", "OutreachContextSource"]

DEFAULT_ENROLLMENT_LIMIT = 10
"""The enrollments read when the policy sets no limit."""

OUTREACH_ENROLLMENT_KIND = "outreach.enrollment"
"""The kind of an enrollment ref."""


class OutreachContextSource(PersonRowsSource):
    """Where the person in scope stands in the organization's outreach sequences."""

    name = "outreach"
    default_limit = DEFAULT_ENROLLMENT_LIMIT

    async def _read(self, client: OrgScopedClient, person_id: UUID, limit: int) -> list[asyncpg.Record]:
        return await client.fetch_named(
            APP_QUERIES["outreach_enrollments"], person_id, limit, table="outreach_enrollments"
        )

    def _items(self, rows: Sequence[asyncpg.Record]) -> list[ContextItem]:
        """One item per enrollment, most recently updated first."""
        items: list[ContextItem] = []
        for row in rows:
            parts = [
                f"sequence {row['sequence_name']}",
                f"step {row['current_step']} of {row['step_count']}",
                f"status {row['state']}",
            ]
            if row["next_action"]:
                when = f" at {value_text(row['next_step_at'])}" if row["next_step_at"] is not None else ""
                parts.append(f"next action {row['next_action']}{when}")
            body = "; ".join(parts)
            items.append(
                ContextItem(
                    source=self.name,
                    kind="outreach",
                    title=f"Enrollment {row['sequence_name']}",
                    body=body,
                    ref=ResourceRef(kind=OUTREACH_ENROLLMENT_KIND, id=str(row["id"])),
                    recorded_at=row["updated_at"],
                    tokens=item_tokens(body),
                )
            )
        return items
