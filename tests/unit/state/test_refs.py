from __future__ import annotations

import pytest
from pydantic import ValidationError

from state.refs import ResourceRef, capability_ref_kind, distinct_refs, normalize_run_input_refs

C1, P1, PR1 = (f"8f21c0de-0000-4000-8000-00000000000{n}" for n in (1, 2, 3))


def test_the_normalizer_keeps_valid_refs_in_order_and_drops_each_kind_of_malformed_entry() -> None:
    stored = {
        "refs": [
            {"kind": "crm.company", "id": C1},
            {"id": "missing-kind"},
            {"kind": "crm.person"},
            {"kind": 7, "id": "x"},
            {"kind": "crm.deal", "id": 42},
            {"kind": "crm.deal", "id": "d1", "label": ["not", "text"]},
            "crm.company:c2",
            None,
            ["crm.company", "c3"],
            {"kind": "  ", "id": "blank-kind"},
            {"kind": "crm.person", "id": ""},
            {"kind": "crm.person", "id": P1, "label": "Ada"},
            {"kind": "prospect", "id": PR1, "extra": "ignored"},
        ]
    }
    before = repr(stored)
    refs = normalize_run_input_refs(stored)
    assert refs == [
        ResourceRef(kind="crm.company", id=C1),
        ResourceRef(kind="crm.person", id=P1, label="Ada"),
        ResourceRef(kind="prospect", id=PR1),
    ]
    assert repr(stored) == before  # the stored input is never changed


@pytest.mark.parametrize("run_input", [None, {}, {"refs": None}, {"refs": "c1"}, {"refs": {"kind": "a", "id": "b"}}])
def test_the_normalizer_answers_no_refs_for_a_missing_or_non_list_field(run_input: object) -> None:
    assert normalize_run_input_refs(run_input) == []  # type: ignore[arg-type]


def test_a_ref_is_strict_and_frozen() -> None:
    with pytest.raises(ValidationError):
        ResourceRef(kind="crm.company", id=5)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ResourceRef(kind="", id="x")
    ref = ResourceRef(kind="crm.company", id="x")
    with pytest.raises(ValidationError):
        ref.id = "y"  # type: ignore[misc]


def test_distinct_refs_match_on_kind_and_id_and_keep_the_first_label() -> None:
    refs = [
        ResourceRef(kind="crm.company", id="1", label="First"),
        ResourceRef(kind="crm.company", id="1", label="Second"),
        ResourceRef(kind="crm.person", id="1"),
    ]
    assert distinct_refs(refs) == [refs[0], refs[2]]


def test_capability_ref_kind_maps_stored_kinds_and_passes_unknown_ones_through() -> None:
    assert capability_ref_kind("crm.company") == "company"
    assert capability_ref_kind("crm.people") == "person"
    assert capability_ref_kind("something.else") == "something.else"
