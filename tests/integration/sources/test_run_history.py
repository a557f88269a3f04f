"""The `run_history` source: the spec's filters, order, body and citable refs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest
from pydantic import ValidationError

from context.options import RunHistoryOptions
from context.sources.run_history import RunHistoryContextSource, parse_run_result
from state.db import Database
from tests.integration.sources.helpers import AppFactory, ref, request, spec


async def test_filters_by_user_trigger_entity_window_and_current_run(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    user = await app.user(org)
    other_user = await app.user(org)
    company = await app.company(org)
    trigger = uuid4()
    now = datetime.now(UTC)
    mine = await app.run_result(org, {"summary": "mine"}, user_id=user, created_at=now - timedelta(hours=1))
    by_trigger = await app.run_result(org, {}, trigger_id=trigger, created_at=now - timedelta(hours=2))
    about = await app.run_result(
        org,
        {"refs": [{"kind": "crm.company", "id": str(company)}]},
        user_id=other_user,
        created_at=now - timedelta(hours=3),
    )
    current = await app.run_result(org, {}, user_id=user, created_at=now - timedelta(minutes=1))
    await app.run_result(org, {}, user_id=user, created_at=now - timedelta(hours=30))  # outside 24 h
    await app.run_result(org, {}, user_id=other_user, created_at=now - timedelta(hours=1))  # unrelated
    req = request(org, ref("crm.company", company), user=user, trigger=trigger, run_id=current)
    items = await RunHistoryContextSource(db).retrieve(req, spec("run_history"))
    assert [i.ref.id for i in items if i.ref] == [str(mine), str(by_trigger), str(about)]
    wide = await RunHistoryContextSource(db).retrieve(req, spec("run_history", lookback_hours=48))
    assert len(wide) == 4, "lookback_hours widens the window"


async def test_order_is_created_at_then_id_descending_and_default_limit_is_five(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    user = await app.user(org)
    at = datetime.now(UTC) - timedelta(hours=1)
    ids = [await app.run_result(org, {}, user_id=user, created_at=at) for _ in range(7)]
    items = await RunHistoryContextSource(db).retrieve(request(org, user=user), spec("run_history"))
    assert [i.ref.id for i in items if i.ref] == sorted(map(str, ids), reverse=True)[:5]
    assert await RunHistoryContextSource(db).retrieve(request(org, user=user), spec("run_history", limit=0)) == []


async def test_body_names_status_parent_summary_refs_then_reason(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    user = await app.user(org)
    parent = await app.run_result(org, {}, user_id=user, created_at=datetime.now(UTC) - timedelta(hours=2))
    company, deal = uuid4(), uuid4()
    child = await app.run_result(
        org,
        {
            "summary": "Drafted the proposal",
            "refs": [{"kind": "crm.company", "id": str(company)}, {"kind": "crm.deal", "id": str(deal)}],
        },
        status="failed",
        user_id=user,
        parent_run_id=parent,
        failure_reason="mail provider down",
        waiting_reason="ignored unless waiting",
    )
    items = await RunHistoryContextSource(db).retrieve(request(org, user=user), spec("run_history"))
    item = next(i for i in items if i.ref and i.ref.id == str(child))
    assert item.title == "Run failed"
    assert item.body == (
        f"status failed; parent run {parent}; summary Drafted the proposal; "
        f"refs company {company}, deal {deal}; failed reason mail provider down"
    )
    assert [(r.kind, r.id) for r in item.body_refs] == [("crm.company", str(company)), ("crm.deal", str(deal))]
    assert item.ref is not None and item.ref.kind == "agent.run" and item.recorded_at is not None


def test_an_invalid_summary_and_malformed_refs_are_skipped() -> None:
    parsed = parse_run_result({"summary": 42, "refs": [{"kind": "crm.company"}, "x", {"kind": "prospect", "id": "p"}]})
    assert parsed.summary is None
    assert [(r.kind, r.id) for r in parsed.refs] == [("prospect", "p")]
    assert parse_run_result(None).refs == () and parse_run_result(["no"]).summary is None


def test_lookback_hours_is_bounded() -> None:
    for bad in (0, 721, "24"):
        with pytest.raises(ValidationError):
            RunHistoryOptions.model_validate({"lookback_hours": bad})
