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

from pydantic import BaseModel

from context.models import ContextItem, ContextRequest, ContextSourceSpec
from context.options import EmptyOptions
from context.sources._app_common import APP_QUERIES, item_tokens, value_text
from context.sources._outreach_scope import person_in_scope
from state.db import Database
from state.refs import ResourceRef
from state.scoped import scoped_db

__all__ = ["DEFAULT_ENROLLMENT_LIMIT", "OUTREACH_ENROLLMENT_KIND", "OutreachContextSource"]

DEFAULT_ENROLLMENT_LIMIT = 10
"""The enrollments read when the policy sets no limit."""

OUTREACH_ENROLLMENT_KIND = "outreach.enrollment"
"""The kind of an enrollment ref."""


class OutreachContextSource:
    """Where the person in scope stands in the organization's outreach sequences."""

    name = "outreach"
    options_schema: type[BaseModel] = EmptyOptions

    def __init__(self, db: Database) -> None:
        self._db = db

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        """One item per enrollment of the person in scope, most recently updated first."""
        person_id = person_in_scope(request)
        if person_id is None or spec.limit == 0:
            return []
        limit = DEFAULT_ENROLLMENT_LIMIT if spec.limit is None else spec.limit
        async with scoped_db(self._db, request.subject.organization_id) as client:
            rows = await client.fetch_named(
                APP_QUERIES["outreach_enrollments"], person_id, limit, table="outreach_enrollments"
            )
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
