"""`state.ids`, canonical identity text (issue 21, item 6): one closed set of entity kinds, one spelling of a
UUID, and the run-input normalizer dropping every look-alike with the field it names."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest
from pydantic import BaseModel, ValidationError

from state.ids import (
    ENTITY_KINDS,
    CanonicalUuid,
    entity_ref_problem,
    is_canonical_uuid,
    kind_problem,
    parse_canonical_uuid,
)
from state.projections import SUPPORTED_REF_KINDS
from state.refs import ResourceRef, normalize_refs
from tests.unit.state.lookalikes import CANONICAL_KIND, LOOK_ALIKE_KINDS, look_alike_uuids

CANONICAL = "8f21c0de-0000-4000-8000-00000000000a"
LOOK_ALIKE_IDS = look_alike_uuids(CANONICAL)


def test_the_closed_kind_set_is_exactly_the_kinds_the_resolvers_own() -> None:
    assert ENTITY_KINDS == SUPPORTED_REF_KINDS
    assert {"crm.company", "crm.person", "crm.deal", "crm.activity", "crm.list", "prospect"} <= ENTITY_KINDS
    assert {"intelligence.company", "intelligence.person"} <= ENTITY_KINDS


def test_canonical_uuid_text_is_what_str_of_a_uuid_writes_and_nothing_else() -> None:
    for _ in range(50):
        value = str(uuid4())
        assert is_canonical_uuid(value) and parse_canonical_uuid(value) == UUID(value)
    for case, value in LOOK_ALIKE_IDS.items():
        assert not is_canonical_uuid(value), case
        with pytest.raises(ValueError, match="canonical form") as caught:
            parse_canonical_uuid(value)
        assert value not in str(caught.value), "a refusal never quotes the value"
    assert not is_canonical_uuid(UUID(CANONICAL)) and not is_canonical_uuid(None)


@pytest.mark.parametrize("case", list(LOOK_ALIKE_KINDS))
def test_a_look_alike_kind_is_not_an_entity_kind(case: str) -> None:
    assert kind_problem(LOOK_ALIKE_KINDS[case]) is not None
    assert entity_ref_problem(LOOK_ALIKE_KINDS[case], CANONICAL) == ("kind", kind_problem(LOOK_ALIKE_KINDS[case]))
    assert kind_problem(CANONICAL_KIND) is None and entity_ref_problem(CANONICAL_KIND, CANONICAL) is None


class _Body(BaseModel):
    organization_id: CanonicalUuid


def test_the_canonical_uuid_type_refuses_each_spelling_at_its_field_and_takes_a_uuid_object() -> None:
    assert _Body.model_validate_json(f'{{"organization_id": "{CANONICAL}"}}').organization_id == UUID(CANONICAL)
    assert _Body(organization_id=UUID(CANONICAL)).organization_id == UUID(CANONICAL)
    for case, value in LOOK_ALIKE_IDS.items():
        with pytest.raises(ValidationError) as caught:
            _Body.model_validate({"organization_id": value})
        [error] = caught.value.errors()
        assert (error["loc"], error["type"]) == (("organization_id",), "uuid_not_canonical"), case


def test_the_normalizer_drops_every_look_alike_entity_naming_the_field_and_keeps_the_canonical_one() -> None:
    kinds = list(LOOK_ALIKE_KINDS.values())
    ids = list(LOOK_ALIKE_IDS.values())
    entries = [
        {"kind": CANONICAL_KIND, "id": CANONICAL},
        *({"kind": kind, "id": CANONICAL} for kind in kinds),
        *({"kind": CANONICAL_KIND, "id": ident} for ident in ids),
        ResourceRef(kind=CANONICAL_KIND, id=CANONICAL.upper()),
        {"kind": "agent.run", "id": CANONICAL},  # a kind no source resolves from the entities
    ]
    parsed = normalize_refs(entries, source="test")
    assert parsed.refs == [ResourceRef(kind=CANONICAL_KIND, id=CANONICAL)]
    fields = [d.reason.split()[0] for d in parsed.dropped]
    assert fields == ["kind"] * len(kinds) + ["id"] * (len(ids) + 1) + ["kind"]
    assert [d.position for d in parsed.dropped] == list(range(1, len(entries)))
