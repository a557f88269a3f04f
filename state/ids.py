"""Canonical identity text: the one rule for how a UUID and an entity kind are written where they name a row.

A UUID enters as text in many places: an HTTP path, query or body, a CLI `--org`, a tool argument, a run
input ref. Python's `UUID()` and pydantic both accept many spellings of one UUID (upper case, `urn:uuid:`,
braces, no hyphens), and a memory stores the text of its subject's id in its subject key, so two spellings
of one row would be two keys. Here a UUID is only its canonical text: 36 characters, lower-case hex in
8-4-4-4-12 groups joined by hyphens, with nothing before or after (what `str(UUID(...))` writes).

An entity kind is one of a closed set, `ENTITY_KINDS`: the kinds the resolvers of `state.projections` own
(a test holds the two equal). Every one of them names a table whose id is a UUID, so an entity ref is
canonical when its kind is in the set and its id is canonical UUID text. `SCOPE_OWNER_KINDS` are the two
kinds a memory key names when it has no subject ref; its id is a UUID the service writes itself.

`CanonicalUuid` (alias `OrganizationId`) is the pydantic type of a UUID that arrives as text: it refuses a
non-canonical spelling with the error type `uuid_not_canonical`, and accepts a `UUID` object as it is.

This module must never import another module of the project (every layer uses it), never read a
database, and never repair a value: a non-canonical value is refused (or dropped) as it came, because a
repair would be one more place that decides which look-alike means which row.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, get_args
from uuid import UUID

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

__all__ = [
    "CANONICAL_UUID_PATTERN",
    "ENTITY_KINDS",
    "SCOPE_OWNER_KINDS",
    "UUID_RULE",
    "CanonicalUuid",
    "EntityKind",
    "OrganizationId",
    "entity_ref_problem",
    "is_canonical_uuid",
    "kind_problem",
    "parse_canonical_uuid",
    "uuid_problem",
]

CANONICAL_UUID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
"""Canonical UUID text, anchored; the tool schema publishes the same pattern."""
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

EntityKind = Literal[
    "crm.company",
    "crm.person",
    "crm.deal",
    "crm.activity",
    "crm.list",
    "prospect",
    "intelligence.company",
    "intelligence.person",
]
"""An entity kind a resolver owns, as a type (a tool schema lists the values)."""
ENTITY_KINDS: frozenset[str] = frozenset(get_args(EntityKind))
"""The closed set of entity kinds: the kinds `state.projections.PROJECTIONS` resolves."""
SCOPE_OWNER_KINDS: frozenset[str] = frozenset({"user", "organization"})
"""The kinds of a memory's scope owner, the subject of a key made without a subject ref."""

UUID_RULE = "a UUID in canonical form (lower-case hex, 8-4-4-4-12, with hyphens, nothing around it)"
"""The rule in words, for refusals (which never quote the value)."""
_KIND_RULE = "one of " + ", ".join(sorted(ENTITY_KINDS))


def is_canonical_uuid(value: object) -> bool:
    """True when `value` is canonical UUID text."""
    return isinstance(value, str) and _CANONICAL_UUID.fullmatch(value) is not None


def uuid_problem(value: object) -> str | None:
    """Why `value` is not canonical UUID text (never quoting it), or None."""
    if not isinstance(value, str):
        return "is not text"
    return None if _CANONICAL_UUID.fullmatch(value) else f"is not {UUID_RULE}"


def parse_canonical_uuid(value: str) -> UUID:
    """The UUID that canonical text `value` writes; raises ValueError for any other spelling."""
    problem = uuid_problem(value)
    if problem is not None:
        raise ValueError(f"the value {problem}")
    return UUID(value)


def kind_problem(value: object) -> str | None:
    """Why `value` is not an entity kind of the closed set (never quoting it), or None."""
    if not isinstance(value, str):
        return "is not text"
    return None if value in ENTITY_KINDS else f"is not {_KIND_RULE}"


def entity_ref_problem(kind: object, ident: object) -> tuple[str, str] | None:
    """`(field, why)` when `kind` and `ident` are not a canonical entity ref, or None."""
    problem = kind_problem(kind)
    if problem is not None:
        return ("kind", problem)
    problem = uuid_problem(ident)
    if problem is not None:
        return ("id", problem)
    return None


def _canonical_uuid_input(value: object) -> object:
    """Let a `UUID` object through; refuse text that is not canonical; leave any other type to `UUID`."""
    if isinstance(value, str) and not is_canonical_uuid(value):
        raise PydanticCustomError("uuid_not_canonical", "must be {rule}", {"rule": UUID_RULE})
    return value


CanonicalUuid = Annotated[UUID, BeforeValidator(_canonical_uuid_input)]
"""A UUID that, as text, must be canonical: `urn:uuid:`, braces, upper case, no hyphens, padding refused."""
OrganizationId = CanonicalUuid
"""An organization id wherever one enters (HTTP path, query and body, a tool invocation, an event)."""
