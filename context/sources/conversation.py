"""The `conversation` source: the summary and recent messages of the request's conversation.

It reads `request.conversation_id` for the subject's organization through `scoped_db`, the summary and the
recent messages in one statement (`conversation_with_messages`; nothing without a conversation id, nothing
for a conversation of another organization). The newest message is returned
first, so the packer spends it first and never cuts it; then the summary; then the older recent messages,
newest to oldest, so a tight budget drops the oldest. `rank_in_section` lays the section out in
chronological order: the summary on top, then the messages oldest to newest. `spec.limit` caps the
messages (default `DEFAULT_MESSAGE_LIMIT`); a zero limit reads nothing. Items carry no subject key.

It must never read another organization's conversation and never write prose.
"""

from __future__ import annotations

from context.models import ContextItem, ContextRequest, ContextSourceSpec
from context.options import ConversationOptions
from context.sources._app_common import APP_QUERIES, item_tokens
from context.sources._base import DatabaseSource
from state.scoped import scoped_db

__all__ = ["DEFAULT_MESSAGE_LIMIT", "ConversationContextSource"]

DEFAULT_MESSAGE_LIMIT = 20
"""The recent messages read when the policy sets no limit."""

_SUMMARY_RANK = -1
"""The summary renders above every message."""


class ConversationContextSource(DatabaseSource):
    """The working memory of one conversation: its summary and its recent messages."""

    name = "conversation"
    options_schema = ConversationOptions

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        """The newest message first, the summary, then older messages; chronological by rank."""
        if request.conversation_id is None or spec.limit == 0:
            return []
        options = ConversationOptions.model_validate(spec.options)
        limit = DEFAULT_MESSAGE_LIMIT if spec.limit is None else spec.limit
        async with scoped_db(self._db, request.subject.organization_id) as client:
            rows = await client.fetch_named(
                APP_QUERIES["conversation_with_messages"], request.conversation_id, limit, table="conversations"
            )
        if not rows:
            return []
        messages = [row for row in rows if row["message_id"] is not None]
        count = len(messages)
        message_items = [
            ContextItem(
                source=self.name,
                kind="conversation",
                title=str(row["role"]),
                body=str(row["content"]),
                recorded_at=row["created_at"],
                tokens=item_tokens(str(row["content"])),
                rank_in_section=count - 1 - index,  # newest renders last
            )
            for index, row in enumerate(messages)
        ]
        summary = rows[0]["summary"]
        summary_items: list[ContextItem] = []
        if options.include_summary and isinstance(summary, str) and summary.strip():
            summary_items.append(
                ContextItem(
                    source=self.name,
                    kind="conversation",
                    title="Summary",
                    body=summary,
                    recorded_at=rows[0]["summary_updated_at"],
                    tokens=item_tokens(summary),
                    rank_in_section=_SUMMARY_RANK,
                )
            )
        return [*message_items[:1], *summary_items, *message_items[1:]]
