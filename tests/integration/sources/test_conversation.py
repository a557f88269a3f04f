"""The `conversation` source: summary and recent messages, newest spent first, rendered chronologically."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from context.builder import DefaultContextBuilder
from context.models import ContextPolicy, ContextSourceSpec
from context.packer import ContextPacker
from context.registry import ContextSourceRegistry
from context.sources.conversation import DEFAULT_MESSAGE_LIMIT, ConversationContextSource
from state.db import Database
from tests.integration.sources.helpers import AppFactory, request, spec
from tests.support import HANG_S


async def _thread(app: AppFactory, org: object, conversation: object, count: int) -> datetime:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    async with app.db.connection() as conn:
        await conn.executemany(
            "INSERT INTO conversation_messages (organization_id, conversation_id, role, content, created_at) "
            "VALUES ($1, $2, $3, $4, $5)",
            [
                (org, conversation, "user" if i % 2 == 0 else "assistant", f"message {i}", start + timedelta(minutes=i))
                for i in range(count)
            ],
        )
    return start


async def test_nothing_without_a_conversation_id(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    await app.conversation(org, summary="s")
    assert await ConversationContextSource(db).retrieve(request(org), spec("conversation")) == []


async def test_newest_first_summary_second_and_chronological_ranks(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    conversation = await app.conversation(org, summary="Talking about Contoso")
    await _thread(app, org, conversation, 4)
    items = await ConversationContextSource(db).retrieve(
        request(org, conversation_id=conversation), spec("conversation")
    )
    assert [i.body for i in items] == ["message 3", "Talking about Contoso", "message 2", "message 1", "message 0"]
    rendered = sorted(items, key=lambda i: i.rank_in_section)
    assert [i.body for i in rendered] == ["Talking about Contoso", "message 0", "message 1", "message 2", "message 3"]
    assert all(i.subject_key is None for i in items)


async def test_limit_caps_messages_and_none_uses_the_default(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    conversation = await app.conversation(org)
    await _thread(app, org, conversation, DEFAULT_MESSAGE_LIMIT + 5)
    source = ConversationContextSource(db)
    assert len(await source.retrieve(request(org, conversation_id=conversation), spec("conversation", limit=3))) == 3
    assert len(await source.retrieve(request(org, conversation_id=conversation), spec("conversation"))) == (
        DEFAULT_MESSAGE_LIMIT
    )
    assert await source.retrieve(request(org, conversation_id=conversation), spec("conversation", limit=0)) == []


async def test_a_conversation_with_500_messages_under_a_small_budget_keeps_the_newest(
    db: Database, app: AppFactory
) -> None:
    org = await app.organization()
    conversation = await app.conversation(org, summary="A very long negotiation " * 20)
    await _thread(app, org, conversation, 500)
    source = ConversationContextSource(db)
    policy = ContextPolicy(
        sources=[ContextSourceSpec(name="conversation", token_budget=40, limit=500)], total_token_budget=40
    )
    builder = DefaultContextBuilder(ContextSourceRegistry([source]), ContextPacker(), source_timeout_s=HANG_S)
    brief = await builder.build(request(org, conversation_id=conversation), policy)
    assert "message 499" in brief.text, "the newest message is never cut"
    assert "message 0" not in brief.text and brief.dropped["conversation"] > 400
    lines = [line for line in brief.text.splitlines() if line.startswith("- ")]
    numbers = [int(line.rsplit(" ", 1)[1]) for line in lines if "message" in line]
    assert numbers == sorted(numbers) and numbers[-1] == 499, "kept messages render oldest to newest"
