"""The `outreach_thread` source: the message thread with the person in scope, for the Outreach planner.

The person in scope is the first `crm.person` ref of `request.entities` (none, no item). It reads
`outreach_messages` of that person for the subject's organization through `scoped_db`, newest first,
capped by `spec.limit` (default `DEFAULT_THREAD_LIMIT`; a zero limit reads nothing). The newest inbound
message (the newest reply) is returned first, so it is spent first and a budget never cuts it before an
older message; the rest follow newest first, so a tight budget drops the oldest. `rank_in_section` lays the
thread out in chronological order. Items carry the message as `ref` and no subject key.

It must never read another organization's messages and never write prose.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg

from context.models import ContextItem
from context.sources._app_common import item_tokens
from context.sources._outreach_scope import PersonRowsSource
from state.refs import ResourceRef
from state.scoped import OrgScopedClient

__all__ = ["DEFAULT_THREAD_LIMIT", "OUTREACH_MESSAGE_KIND", "OutreachThreadContextSource"]

DEFAULT_THREAD_LIMIT = 20
"""The messages read when the policy sets no limit."""

OUTREACH_MESSAGE_KIND = "outreach.message"
"""The kind of an outreach message ref."""


class OutreachThreadContextSource(PersonRowsSource):
    """The outreach messages exchanged with the person in scope."""

    name = "outreach_thread"
    default_limit = DEFAULT_THREAD_LIMIT

    async def _read(self, client: OrgScopedClient, person_id: UUID, limit: int) -> list[asyncpg.Record]:
        return await client.select(
            "outreach_messages",
            ["id", "direction", "channel", "subject", "body", "sent_at"],
            where={"person_id": person_id},
            order_by=["sent_at DESC", "id DESC"],
            limit=limit,
        )

    def _items(self, rows: Sequence[asyncpg.Record]) -> list[ContextItem]:
        """The newest reply first, then the thread newest first; chronological by rank."""
        count = len(rows)
        items: list[ContextItem] = []
        for index, row in enumerate(rows):
            subject = row["subject"]
            body = f"subject {subject}; {row['body']}" if subject else str(row["body"])
            items.append(
                ContextItem(
                    source=self.name,
                    kind="outreach_thread",
                    title=f"{row['direction']} {row['channel']}",
                    body=body,
                    ref=ResourceRef(kind=OUTREACH_MESSAGE_KIND, id=str(row["id"])),
                    recorded_at=row["sent_at"],
                    tokens=item_tokens(body),
                    rank_in_section=count - 1 - index,  # oldest renders first, newest last
                )
            )
        reply = next((i for i, row in enumerate(rows) if row["direction"] == "inbound"), None)
        if reply is not None and reply > 0:
            items.insert(0, items.pop(reply))
        return items
