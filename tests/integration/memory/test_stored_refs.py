"""The table CHECK agrees with `parse_stored_refs` and `MemorySubjectRef` on the shared table of elements."""

from __future__ import annotations

import json
from typing import Any

import asyncpg

from state.db import Database
from tests.integration.memory.helpers import World
from tests.unit.memory.cases import ELEMENT_CASES
from tests.unit.memory.test_models import _model_accepts, _parser_accepts


def _key_for(element: Any, attribute: str) -> str:
    """The key the service would make when the element could form one, else any well-shaped key."""
    if isinstance(element, dict):
        kind, ident = element.get("kind"), element.get("id")
        if isinstance(kind, str) and isinstance(ident, str) and kind and ident and ":" not in kind + ident:
            return f"{kind}:{ident}:{attribute}"
    return f"k:i:{attribute}"


async def test_the_check_the_parser_and_the_model_type_agree_on_every_element(db: Database, world: World) -> None:
    verdicts: list[tuple[str, bool, bool, bool, bool]] = []
    async with db.connection() as conn:
        for n, (name, element, expected) in enumerate(ELEMENT_CASES):
            attribute = f"observation.case_{n}"
            try:
                await conn.execute(
                    "INSERT INTO agent.memories (organization_id, definition_id, scope, scope_owner_id, subject_key,"
                    " text, subject_refs) VALUES ($1, $2, 'organization', $1, $3, 'x', $4::text::jsonb)",
                    world.org,
                    world.definition,
                    _key_for(element, attribute),
                    json.dumps([element]),
                )
                check = True
            except asyncpg.CheckViolationError as exc:
                assert exc.constraint_name == "memories_subject_ref_elements_well_formed", (name, str(exc))
                check = False
            verdicts.append((name, expected, check, _parser_accepts(element), _model_accepts(element)))
    disagreements = [v for v in verdicts if len(set(v[1:])) != 1]
    assert disagreements == [], "(case, expected, CHECK, parse_stored_refs, MemorySubjectRef)"
