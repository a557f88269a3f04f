"""The memory models: the key-part type, the tolerant parser, the strict candidate and the invocation."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import pytest
from pydantic import ValidationError

from context.models import make_subject_key
from memory.models import MemoryCandidate, MemorySubjectRef, ToolInvocation, parse_stored_refs
from tests.unit.memory.cases import ELEMENT_CASES


def _model_accepts(element: Any) -> bool:
    if not isinstance(element, dict):
        return False
    known = {k: element[k] for k in ("kind", "id", "label") if k in element}
    try:
        MemorySubjectRef(**known)
    except (ValidationError, TypeError):
        return False
    return True


def _parser_accepts(element: Any) -> bool:
    parsed = parse_stored_refs([element])
    return parsed.malformed == 0 and len(parsed.refs) == 1


@pytest.mark.parametrize(("name", "element", "accepted"), ELEMENT_CASES, ids=[c[0] for c in ELEMENT_CASES])
def test_the_parser_and_the_model_type_agree_on_every_element(name: str, element: Any, accepted: bool) -> None:
    assert _parser_accepts(element) is accepted, f"parse_stored_refs disagrees on {name}"
    assert _model_accepts(element) is accepted, f"MemorySubjectRef disagrees on {name}"


@pytest.mark.parametrize(("name", "element", "accepted"), ELEMENT_CASES, ids=[c[0] for c in ELEMENT_CASES])
def test_every_accepted_element_forms_a_subject_key(name: str, element: Any, accepted: bool) -> None:
    if not accepted:
        return
    ref = MemorySubjectRef(**{k: element[k] for k in ("kind", "id", "label") if k in element})
    assert make_subject_key(ref.as_resource_ref(), "observation.x") == f"{ref.kind}:{ref.id}:observation.x"


def test_the_parser_ignores_unknown_keys_counts_malformed_elements_and_never_raises() -> None:
    good = {"kind": "crm.company", "id": "1", "relation": "owner"}
    parsed = parse_stored_refs([good, {"kind": "crm.company"}, 7, good])
    assert [r.id for r in parsed.refs] == ["1", "1"] and parsed.malformed == 2
    assert parse_stored_refs({"kind": "crm.company", "id": "1"}).malformed == 1  # not an array
    assert parse_stored_refs(None).malformed == 1
    assert parse_stored_refs([]).refs == () and parse_stored_refs([]).malformed == 0


def test_a_key_part_refuses_the_null_byte() -> None:
    with pytest.raises(ValidationError, match="null byte"):
        MemorySubjectRef(kind="crm.company", id="a\x00b")
    with pytest.raises(ValidationError, match="null byte"):
        MemorySubjectRef(kind="crm.company", id="a", label="x\x00")


def _candidate(**values: Any) -> MemoryCandidate:
    base: dict[str, Any] = {"attribute": "preference.language", "text": "British English", "scope": "user"}
    return MemoryCandidate.model_validate({**base, **values})


@pytest.mark.parametrize(
    "attribute",
    [
        "lifecycle_stage",
        "preference",
        "preference.",
        "Preference.language",
        "preferences.language",
        "observation.buying process",
        "observation.a:b",
        "preference.language\n",
        "note.x",
    ],
)
def test_an_attribute_outside_the_two_namespaces_is_refused(attribute: str) -> None:
    with pytest.raises(ValidationError, match="attribute"):
        _candidate(attribute=attribute)


def test_namespaced_attributes_are_accepted() -> None:
    for attribute in ("preference.language", "observation.buying_process", "observation.crm.lifecycle_note"):
        assert _candidate(attribute=attribute).attribute == attribute


def test_the_candidate_is_strict_and_refuses_a_subject_key_or_a_second_ref() -> None:
    with pytest.raises(ValidationError, match="subject_key"):
        _candidate(subject_key="user:1:preference.language")
    with pytest.raises(ValidationError):
        _candidate(scope="team")
    with pytest.raises(ValidationError):
        _candidate(text=5)
    two = [{"kind": "crm.company", "id": "1"}, {"kind": "crm.company", "id": "2"}]
    with pytest.raises(ValidationError, match="at most 1"):
        _candidate(subject_refs=two)


def test_the_text_is_trimmed_of_blank_characters_and_never_blank() -> None:
    assert _candidate(text="\u00a0 British English\u2028").text == "British English"
    for blank in ("", " ", "\u00a0\u200b"):
        with pytest.raises(ValidationError, match="blank"):
            _candidate(text=blank)
    with pytest.raises(ValidationError, match="null byte"):
        _candidate(text="a\x00")


def test_an_invocation_names_exactly_one_of_a_user_and_a_trigger() -> None:
    ids = {"organization_id": uuid4(), "definition_id": uuid4(), "run_id": uuid4()}
    ToolInvocation(**ids, user_id=uuid4())
    ToolInvocation(**ids, trigger_id=uuid4())
    with pytest.raises(ValueError, match="exactly one"):
        ToolInvocation(**ids)
    with pytest.raises(ValueError, match="exactly one"):
        ToolInvocation(**ids, user_id=uuid4(), trigger_id=uuid4())
