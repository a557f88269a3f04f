"""The outreach sources: the thread with the person in scope and that person's enrollment state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from context.sources.outreach import OutreachContextSource
from context.sources.outreach_thread import OutreachThreadContextSource
from state.db import Database
from tests.integration.sources.helpers import AppFactory, ref, request, spec


async def test_thread_spends_the_newest_reply_first_and_renders_in_order(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    person = await app.person(org)
    other = await app.person(org)
    start = datetime(2025, 3, 1, tzinfo=UTC)
    await app.outreach_message(org, person, "first pitch", sent_at=start)
    await app.outreach_message(org, person, "sounds good, call me", direction="inbound", sent_at=start + timedelta(1))
    await app.outreach_message(org, person, "booked", sent_at=start + timedelta(2))
    await app.outreach_message(org, other, "someone else", sent_at=start)
    items = await OutreachThreadContextSource(db).retrieve(
        request(org, ref("crm.person", person)), spec("outreach_thread")
    )
    assert [i.body for i in items] == ["sounds good, call me", "booked", "first pitch"], "newest reply spent first"
    assert [i.body for i in sorted(items, key=lambda i: i.rank_in_section)] == [
        "first pitch",
        "sounds good, call me",
        "booked",
    ]
    assert items[0].title == "inbound email"
    assert await OutreachThreadContextSource(db).retrieve(request(org), spec("outreach_thread")) == []


async def test_enrollment_state_names_sequence_step_status_and_next_action(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    person = await app.person(org)
    sequence = await app.sequence(org, "Q3 opener", step_count=4)
    when = datetime(2025, 3, 5, 9, tzinfo=UTC)
    await app.enrollment(org, sequence, person, current_step=2, next_action="send follow-up", next_step_at=when)
    [item] = await OutreachContextSource(db).retrieve(request(org, ref("crm.person", person)), spec("outreach"))
    assert item.title == "Enrollment Q3 opener"
    assert (
        item.body == f"sequence Q3 opener; step 2 of 4; status active; next action send follow-up at {when.isoformat()}"
    )
    assert (
        await OutreachContextSource(db).retrieve(request(org, ref("crm.person", person)), spec("outreach", limit=0))
        == []
    )
