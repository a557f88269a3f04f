"""`state.refs.normalize_refs`, the one path every entry point takes entities through (issue 14, issue 12):
a malformed entry is dropped with its position and reason and logged without its value; valid ones keep
their order; an id that cannot form a subject key is malformed."""

from __future__ import annotations

import logging

import pytest

from state.refs import ResourceRef, key_part_problem, make_subject_key, normalize_refs

UUID_TEXT = "8f21c0de-0000-4000-8000-000000000001"
P1, D1 = "8f21c0de-0000-4000-8000-000000000002", "8f21c0de-0000-4000-8000-000000000003"


def test_an_id_that_cannot_form_a_subject_key_is_dropped_with_its_position_and_the_rest_keep_their_order(
    caplog: pytest.LogCaptureFixture,
) -> None:
    entries = [
        {"kind": "crm.company", "id": UUID_TEXT},
        {"kind": "crm.company", "id": f"urn:uuid:{UUID_TEXT}"},
        {"kind": "crm:company", "id": "c1"},
        {"kind": "crm.company", "id": "a\x00b"},
        {"kind": "crm.company", "id": " \t"},
        ResourceRef(kind="crm.person", id="urn:x"),
        ResourceRef(kind="crm.person", id=P1, label="Ada: CTO"),
        {"kind": "crm.deal", "id": D1, "label": "Deal: renewal"},
    ]
    with caplog.at_level(logging.WARNING, logger="state.refs"):
        parsed = normalize_refs(entries, source="test body")
    assert parsed.refs == [
        ResourceRef(kind="crm.company", id=UUID_TEXT),
        ResourceRef(kind="crm.person", id=P1, label="Ada: CTO"),  # a label joins no key: a colon is fine
        ResourceRef(kind="crm.deal", id=D1, label="Deal: renewal"),
    ]
    assert [d.position for d in parsed.dropped] == [1, 2, 3, 4, 5]
    assert [d.reason.split()[0] for d in parsed.dropped] == ["id", "kind", "id", "id", "id"]
    assert "cannot form a subject key" in parsed.dropped[0].reason
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == "test body entity 1 dropped: id holds ':' or a null byte, so it cannot form a subject key"
    assert len(messages) == 5 and not any(UUID_TEXT in m for m in messages), "logged by position, never by value"
    for ref in parsed.refs:
        assert make_subject_key(ref, "name") is not None, "every kept ref forms a key"


@pytest.mark.parametrize("entries", [None, "crm.company:c1", {"kind": "a", "id": "b"}, 7])
def test_anything_but_a_list_holds_no_ref_and_no_drop(entries: object) -> None:
    parsed = normalize_refs(entries)
    assert parsed.refs == [] and parsed.dropped == []


def test_the_key_part_rule_is_the_one_make_subject_key_applies() -> None:
    for value in ["", "  ", "a:b", "a\x00", 5, None]:
        assert key_part_problem(value) is not None
        if isinstance(value, str):
            with pytest.raises(ValueError):
                make_subject_key(ResourceRef(kind="crm.company", id="x"), value)
    assert key_part_problem("8f21") is None
