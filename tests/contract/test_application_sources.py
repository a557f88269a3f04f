"""The spec's minimum contract tests that the application-state sources answer, one test per bullet."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import pytest
from pydantic import ValidationError

from context.models import ContextRequest, ContextSourceSpec, ContextSubject, ResourceRef
from context.sources._app_common import MAX_REF_ID_CHARS
from context.sources.application import ApplicationContextSource
from context.sources.run_history import RunHistoryContextSource
from state.db import Database
from state.refs import normalize_run_input_refs
from state.scoped import record_queries
from tests.factories import Factory
from tests.integration.sources.helpers import AppFactory


def _ref(kind: str, ident: UUID | str, label: str | None = None) -> ResourceRef:
    return ResourceRef(kind=kind, id=str(ident), label=label)


def _request(org: UUID, *entities: ResourceRef, user: UUID | None = None, query: str = "") -> ContextRequest:
    return ContextRequest(
        subject=ContextSubject(organization_id=org, user_id=user), query=query, entities=list(entities)
    )


def _spec(name: str, limit: int | None = None) -> ContextSourceSpec:
    return ContextSourceSpec(name=name, token_budget=4000, limit=limit)


async def test_a_result_ref_whose_id_bounded_text_shortened_reaches_no_body_refs(
    db: Database, factory: Factory
) -> None:
    org = await factory.organization()
    user = await factory.user(org)
    short = str(uuid4())
    long_id = "x" * (MAX_REF_ID_CHARS + 10)
    await AppFactory(db).run_result(
        org,
        user_id=user,
        result={
            "summary": "found two",
            "refs": [{"kind": "crm.company", "id": short}, {"kind": "crm.company", "id": long_id}],
        },
    )
    [item] = await RunHistoryContextSource(db).retrieve(_request(org, user=user), _spec("run_history"))
    assert item.body_refs == [ResourceRef(kind="crm.company", id=short)], "a shortened id must not be citable"
    assert long_id not in item.body, "the bounded-text rule shortens an over-long id in the body"
    assert "company " + "x" * (MAX_REF_ID_CHARS - 1) + "…" in item.body


async def test_malformed_run_input_refs_are_dropped_and_valid_refs_reach_context_request_entities(
    db: Database, factory: Factory
) -> None:
    org = await factory.organization()
    company = await factory.company(org, name="Valid Co")
    run_input = {
        "refs": [
            {"kind": "crm.company", "id": str(company), "label": "Valid Co"},
            {"kind": "crm.company"},
            {"id": str(uuid4())},
            "crm.company:abc",
            {"kind": " ", "id": "x"},
            {"kind": "crm.person", "id": 7},
            {"kind": "crm.company", "id": f"urn:uuid:{company}"},  # cannot form a subject key
        ]
    }
    stored = {"refs": list(run_input["refs"])}
    entities = normalize_run_input_refs(run_input)
    assert entities == [_ref("crm.company", company, "Valid Co")], "only the well-formed ref survives"
    assert run_input == stored, "the stored run input is never changed"
    items = await ApplicationContextSource(db).retrieve(_request(org, *entities), _spec("application"))
    assert {i.ref for i in items} == {_ref("crm.company", company, "Valid Co")}


async def test_application_state_reads_only_explicit_distinct_supported_refs(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    asked = await factory.company(org, name="Asked")
    await factory.company(org, name="Named only in the query")
    request = _request(
        org,
        _ref("crm.company", asked),
        _ref("crm.company", asked),
        _ref("agent.run", uuid4()),
        _ref("knowledge.documents.chunk", uuid4()),
        query="Named only in the query",
    )
    with record_queries() as log:
        items = await ApplicationContextSource(db).retrieve(request, _spec("application"))
    assert {i.ref.id for i in items if i.ref} == {str(asked)}, "the query is never searched"
    assert log.tables() == ["crm_companies"], "a duplicate ref and unsupported kinds cost no extra read"
    assert [i.subject_key for i in items] == [f"crm.company:{asked}:name"], "the exact column name keys the item"


async def test_two_refs_with_the_same_kind_and_id_and_different_labels_keep_the_first_ref(
    db: Database, factory: Factory
) -> None:
    org = await factory.organization()
    prospect = await factory.prospect(org, review_state="new")
    items = await ApplicationContextSource(db).retrieve(
        _request(org, _ref("prospect", prospect, "first label"), _ref("prospect", prospect, "second label")),
        _spec("application"),
    )
    assert [i.ref for i in items] == [_ref("prospect", prospect, "first label")], "the first occurrence wins"


async def test_a_missing_deleted_or_cross_organization_crm_ref_returns_no_item(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    other = await factory.organization()
    deleted = await factory.company(org)
    foreign = await factory.company(other)
    foreign_person = await factory.person(other)
    async with db.connection() as conn:
        await conn.execute("UPDATE crm_companies SET deleted_at = now() WHERE id = $1", deleted)
    items = await ApplicationContextSource(db).retrieve(
        _request(
            org,
            _ref("crm.company", uuid4()),
            _ref("crm.company", deleted),
            _ref("crm.company", foreign),
            _ref("crm.person", foreign_person),
        ),
        _spec("application"),
    )
    assert items == []


async def test_application_state_uses_at_most_one_subject_scoped_query_per_supported_kind(
    db: Database, factory: Factory
) -> None:
    t = await factory.tenant(companies=5, people=5)
    deal = await factory.deal(t.id)
    activity = await factory.activity(t.id)
    crm_list = await factory.crm_list(t.id)
    prospect = await factory.prospect(t.id)
    refs = [
        *(_ref("crm.company", c) for c in t.companies),
        *(_ref("crm.person", p) for p in t.people),
        _ref("crm.deal", deal),
        _ref("crm.activity", activity),
        _ref("crm.list", crm_list),
        _ref("prospect", prospect),
        _ref("intelligence.company", uuid4()),
        _ref("intelligence.person", uuid4()),
    ]
    with record_queries() as log:
        await ApplicationContextSource(db).retrieve(_request(t.id, *refs), _spec("application"))
    tables = log.tables()
    assert len(tables) == 8, "one query per supported kind, whatever its ref count"
    for table in ("crm_companies", "crm_people", "crm_deals", "crm_activities", "crm_lists", "prospect_people"):
        assert tables.count(table) == 1
    assert tables.count("prospects") == 2, "prospect and intelligence.company each read their own batch once"


async def test_the_application_item_cap_keeps_deterministic_ref_and_projection_order(
    db: Database, factory: Factory
) -> None:
    org = await factory.organization()
    first = await factory.company(org, name="First", website="https://first.test", lifecycle_stage="lead")
    second = await factory.person(org, full_name="Second", current_title="CTO")
    request = _request(org, _ref("crm.person", second), _ref("crm.company", first))
    source = ApplicationContextSource(db)
    items = await source.retrieve(request, _spec("application", limit=3))
    keys = [i.subject_key for i in items]
    assert keys == [
        f"crm.person:{second}:full_name",
        f"crm.person:{second}:current_title",
        f"crm.company:{first}:name",
    ], "ref order first, then projection order, cut at the cap"
    again = await source.retrieve(request, _spec("application", limit=3))
    assert [i.subject_key for i in again] == keys, "the same request answers the same items"


async def test_a_zero_item_cap_reads_no_row_a_negative_cap_fails_validation_and_none_applies_no_item_count_cap(
    db: Database, factory: Factory
) -> None:
    t = await factory.tenant(companies=30)
    request = _request(t.id, *(_ref("crm.company", c) for c in t.companies))
    source = ApplicationContextSource(db)
    with record_queries() as log:
        assert await source.retrieve(request, _spec("application", limit=0)) == []
    assert log.entries == [], "a zero cap must not read the database"
    with pytest.raises(ValidationError):
        ContextSourceSpec(name="application", token_budget=100, limit=-1)
    items = await source.retrieve(request, _spec("application", limit=None))
    assert len(items) == 30 * 2, "None caps nothing: name and lifecycle_stage of every company"


async def test_a_run_history_item_creates_no_subject_key(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    user = await factory.user(org)
    company = await factory.company(org)
    now = datetime.now(UTC)
    runs = AppFactory(db)
    await runs.run_result(org, {"summary": "s"}, user_id=user, created_at=now - timedelta(hours=1))
    await runs.run_result(
        org, {"refs": [{"kind": "crm.company", "id": str(company)}]}, created_at=now - timedelta(hours=2)
    )
    items = await RunHistoryContextSource(db).retrieve(
        _request(org, _ref("crm.company", company), user=user), _spec("run_history")
    )
    assert len(items) == 2
    assert all(i.subject_key is None for i in items), "run history is the weakest claim and never wins a key"
