from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import get_args
from uuid import uuid4

import pytest
from pydantic import ValidationError

import context
import context.models as models
from context.models import (
    CLASS_ORDER,
    MAX_CONTEXT_ITEM_LIMIT,
    ContextBrief,
    ContextItem,
    ContextKind,
    ContextPolicy,
    ContextRequest,
    ContextSourceSpec,
    ContextSubject,
    ResourceRef,
    make_subject_key,
)
from context.policies import FRONT_DOOR, OUTREACH_PLANNER
from state import refs


def test_resource_ref_is_the_state_ref_not_a_copy() -> None:
    assert models.ResourceRef is refs.ResourceRef


def test_the_ten_kinds_are_the_class_order() -> None:
    assert len(CLASS_ORDER) == 10
    assert set(get_args(ContextKind)) == set(CLASS_ORDER)
    assert CLASS_ORDER[0] == "conversation" and CLASS_ORDER[-1] == "run_history"


def test_the_item_limit_ceiling_is_max_rows_minus_one() -> None:
    assert MAX_CONTEXT_ITEM_LIMIT == 999
    for ok in (None, 0, 999):
        assert ContextSourceSpec(name="memory", token_budget=1, limit=ok).limit == ok
    for bad in (-1, 1000):
        with pytest.raises(ValidationError):
            ContextSourceSpec(name="memory", token_budget=1, limit=bad)


@pytest.mark.parametrize("value", ["5", 5.0, True, None, -1])
def test_budgets_are_strict_non_negative_integers(value: object) -> None:
    with pytest.raises(ValidationError):
        ContextSourceSpec.model_validate({"name": "memory", "token_budget": value})
    with pytest.raises(ValidationError):
        ContextPolicy.model_validate({"sources": [], "total_token_budget": value})


@pytest.mark.parametrize("value", ["5", 5.0, True])
def test_limit_is_a_strict_integer(value: object) -> None:
    with pytest.raises(ValidationError):
        ContextSourceSpec.model_validate({"name": "memory", "token_budget": 1, "limit": value})


@pytest.mark.parametrize("field", ["enabled", "required"])
def test_switches_do_not_accept_integers(field: str) -> None:
    with pytest.raises(ValidationError):
        ContextSourceSpec.model_validate({"name": "memory", "token_budget": 1, field: 1})


def test_a_spec_and_a_policy_refuse_undeclared_fields() -> None:
    with pytest.raises(ValidationError):
        ContextSourceSpec.model_validate({"name": "memory", "token_budget": 1, "user_id": "u"})
    with pytest.raises(ValidationError):
        ContextPolicy.model_validate({"sources": [], "name": "front_door"})


def test_page_order_names_no_kind_twice_and_only_kinds() -> None:
    ContextPolicy(sources=[], page_order=["memory", "conversation"])
    with pytest.raises(ValidationError, match="twice"):
        ContextPolicy(sources=[], page_order=["memory", "knowledge", "memory"])
    with pytest.raises(ValidationError):
        ContextPolicy.model_validate({"sources": [], "page_order": ["crm"]})


@pytest.mark.parametrize("pol", [FRONT_DOOR, OUTREACH_PLANNER], ids=["front_door", "outreach_planner"])
def test_a_policy_round_trips_through_json(pol: ContextPolicy) -> None:
    assert ContextPolicy.model_validate(pol.model_dump(mode="json")) == pol
    assert ContextPolicy.model_validate_json(pol.model_dump_json()) == pol


def test_a_brief_round_trips_through_json() -> None:
    brief = ContextBrief(
        text="## Memory\n- note: x",
        items=[ResourceRef(kind="crm.company", id="c1", label="Acme")],
        tokens=9,
        per_source_tokens={"memory": 5},
        dropped={"memory": 1},
        failed_sources=["knowledge"],
        dropped_citations=2,
    )
    assert ContextBrief.model_validate(brief.model_dump(mode="json")) == brief
    assert ContextBrief.model_validate_json(brief.model_dump_json()) == brief


def test_an_item_round_trips_through_json() -> None:
    it = ContextItem(
        source="memory",
        kind="memory",
        title="t",
        body="b",
        subject_key="user:1:preference.language",
        recorded_at=datetime(2025, 1, 2, tzinfo=UTC),
        tokens=3,
    )
    assert ContextItem.model_validate(it.model_dump(mode="json")) == it


def test_an_item_states_non_negative_strict_tokens() -> None:
    for bad in (-1, True, "3"):
        with pytest.raises(ValidationError):
            ContextItem.model_validate({"source": "m", "kind": "memory", "title": "", "body": "", "tokens": bad})


@pytest.mark.parametrize("kind", ["conversation", "run_history"])
def test_keyless_kinds_refuse_a_subject_key_but_accept_an_empty_one(kind: ContextKind) -> None:
    with pytest.raises(ValidationError):
        ContextItem(source=kind, kind=kind, title="", body="", subject_key="a:b:c")
    assert ContextItem(source=kind, kind=kind, title="", body="", subject_key="").subject_key == ""


def test_of_actor_is_a_turn_with_no_definition_and_no_trigger() -> None:
    org, user = uuid4(), uuid4()
    subject = ContextSubject.of_actor(org, user)
    assert subject == ContextSubject(organization_id=org, user_id=user, trigger_id=None, definition_id=None)


def test_for_run_requires_a_definition() -> None:
    org, definition, trigger = uuid4(), uuid4(), uuid4()
    subject = ContextSubject.for_run(organization_id=org, definition_id=definition, trigger_id=trigger)
    assert (subject.definition_id, subject.trigger_id, subject.user_id) == (definition, trigger, None)
    with pytest.raises(TypeError):
        ContextSubject.for_run(organization_id=org)  # type: ignore[call-arg]


def test_subject_and_request_are_frozen() -> None:
    subject = ContextSubject.of_actor(uuid4(), None)
    req = ContextRequest(subject=subject, query="q", entities=[])
    with pytest.raises(dataclasses.FrozenInstanceError):
        subject.user_id = uuid4()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.query = "other"  # type: ignore[misc]


def test_make_subject_key_from_a_ref_or_the_scope_owner() -> None:
    company = ResourceRef(kind="crm.company", id="8f21", label="Acme: the label holds a colon")
    owner = ResourceRef(kind="organization", id="o1")
    assert make_subject_key(company, "lifecycle_stage") == "crm.company:8f21:lifecycle_stage"
    assert make_subject_key(None, "preference.language", owner=owner) == "organization:o1:preference.language"
    assert make_subject_key(company, "x", owner=owner) == "crm.company:8f21:x"
    assert make_subject_key(None, None, owner=owner) is None


@pytest.mark.parametrize("attribute", ["", " ", "\u00a0", "a:b", "a\x00b"])
def test_make_subject_key_refuses_bad_attributes(attribute: str) -> None:
    with pytest.raises(ValueError):
        make_subject_key(ResourceRef(kind="crm.company", id="1"), attribute)


def test_the_package_exports_what_it_declares() -> None:
    for name in context.__all__:
        assert hasattr(context, name), name
    for fixed in ("DefaultContextBuilder", "ContextPacker", "ContextSourceRegistry", "make_subject_key"):
        assert fixed in context.__all__
    for name in models.__all__:
        assert hasattr(models, name), name
