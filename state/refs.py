"""Resource references: the one shape every layer uses to name a row.

A `ResourceRef` names a row by `kind` and `id`; its `label` is display text and never takes part in
matching or deduplication. This module also owns the run-input ref normalizer and `capability_ref_kind`,
the map from the kind a tool stored to the word the capability input accepts.

The normalizer is the one path every entry point takes entities through (the segment event, the front
door body, the CLI, a run input): a malformed entry is dropped, logged with its position (never its
value), and reported, and the valid refs keep their order. An entry is malformed when it is not a mapping
(or a `ResourceRef`) whose `kind` and `id` can each form a part of a subject key, with an optional text
`label`: so `urn:uuid:…` (a colon) is dropped here, before any source sees it. It is malformed too when it
is not canonical (`state.ids`): a kind outside `ENTITY_KINDS` (a look-alike such as `crm\u2024company`, a
fullwidth dot, a Cyrillic letter, padding) or an id that is not canonical UUID text (upper case, braces,
no hyphens, a no-break space). No entity kind has an id that is not a UUID, so that is the whole rule.
`ResourceRef` itself stays open: sources name their own rows (`agent.memory`, `knowledge.documents.chunk`, ...) with it.

It must never read the database, and it never changes the run input it normalises.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from state.ids import entity_ref_problem

__all__ = [
    "CAPABILITY_REF_KINDS",
    "DroppedRef",
    "NormalizedRefs",
    "ResourceRef",
    "capability_ref_kind",
    "distinct_refs",
    "key_part_problem",
    "make_subject_key",
    "normalize_refs",
    "normalize_run_input_refs",
    "ref_key",
]

_log = logging.getLogger(__name__)


class ResourceRef(BaseModel):
    """A reference to one row: `kind` and `id` identify it, `label` only describes it."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid", use_attribute_docstrings=True)

    kind: str = Field(min_length=1)
    """The entity kind, for example `crm.company` or `agent.run`."""
    id: str = Field(min_length=1)
    """The row id as the owning table stores it."""
    label: str | None = None
    """Display text; never used to match, deduplicate or key."""


def ref_key(ref: ResourceRef) -> tuple[str, str]:
    """The identity of a ref: `(kind, id)`, never the label."""
    return (ref.kind, ref.id)


def key_part_problem(value: object) -> str | None:
    """Why `value` cannot be one part of a subject key (not text, blank, or holding `:` or a null byte), or None."""
    if not isinstance(value, str):
        return "is not text"
    if not value.strip():
        return "is empty or blank"
    if ":" in value or "\x00" in value:
        return "holds ':' or a null byte, so it cannot form a subject key"
    return None


@dataclass(frozen=True)
class DroppedRef:
    """One malformed entry the normalizer dropped: where it stood and why (never its value)."""

    position: int
    """Its zero-based index in the list it came from."""
    reason: str
    """What is wrong with it, e.g. `id holds ':' or a null byte, so it cannot form a subject key`."""


@dataclass(frozen=True)
class NormalizedRefs:
    """The valid refs of a list of entries, in order, and the entries dropped."""

    refs: list[ResourceRef] = field(default_factory=list)
    """The well-formed refs, in the order they came."""
    dropped: list[DroppedRef] = field(default_factory=list)
    """The malformed entries, in the order they came."""


def _problem(entry: object) -> str | None:
    """Why `entry` is not a well-formed ref, or None."""
    if isinstance(entry, ResourceRef):
        entry = {"kind": entry.kind, "id": entry.id, "label": entry.label}
    if not isinstance(entry, Mapping):
        return "is not an object with kind and id"
    for part in ("kind", "id"):
        problem = key_part_problem(entry.get(part))
        if problem is not None:
            return f"{part} {problem}"
    not_canonical = entity_ref_problem(entry.get("kind"), entry.get("id"))
    if not_canonical is not None:
        return " ".join(not_canonical)
    label = entry.get("label")
    if label is not None and not isinstance(label, str):
        return "label is not text"
    return None


def normalize_refs(entries: object, *, source: str = "run input") -> NormalizedRefs:
    """Keep the well-formed refs of `entries`, in order; drop, log and report each malformed entry.

    `entries` is what an entry point received (a JSON list, a run input field); anything that is not a list
    holds no ref. `source` names the entry point in the log line. The entries are read, never changed.
    """
    out = NormalizedRefs()
    if not isinstance(entries, list | tuple):
        return out
    for position, entry in enumerate(entries):
        problem = _problem(entry)
        if problem is not None:
            _log.warning("%s entity %d dropped: %s", source, position, problem)
            out.dropped.append(DroppedRef(position=position, reason=problem))
            continue
        if isinstance(entry, ResourceRef):
            out.refs.append(entry)
        else:
            assert isinstance(entry, Mapping)
            out.refs.append(ResourceRef(kind=entry["kind"], id=entry["id"], label=entry.get("label")))
    return out


def normalize_run_input_refs(run_input: Mapping[str, Any] | None, *, key: str = "refs") -> list[ResourceRef]:
    """Keep the valid ref-shaped objects of `run_input[key]`, in order, and drop malformed entries.

    A malformed entry is anything `normalize_refs` drops. The stored input is read, never changed.
    """
    if run_input is None:
        return []
    return normalize_refs(run_input.get(key)).refs


CAPABILITY_REF_KINDS: Mapping[str, str] = {
    # stored kind (what a tool wrote)  ->  the word the capability input accepts
    "crm.company": "company",
    "crm.companies": "company",
    "crm.person": "person",
    "crm.people": "person",
    "crm.deal": "deal",
    "crm.deals": "deal",
    "crm.activity": "activity",
    "crm.activities": "activity",
    "crm.list": "list",
    "crm.lists": "list",
    "prospect": "prospect",
    "prospects": "prospect",
    "intelligence.company": "intel_company",
    "intelligence.person": "intel_person",
    "agent.run": "run",
}
"""The kinds `capability_ref_kind` joins. A stored kind outside this map renders as stored."""


def capability_ref_kind(stored_kind: str) -> str:
    """The word the capability input accepts for a kind a tool stored (unknown kinds render unchanged)."""
    return CAPABILITY_REF_KINDS.get(stored_kind, stored_kind)


def distinct_refs(refs: Iterable[ResourceRef]) -> list[ResourceRef]:
    """The refs with duplicates by `(kind, id)` removed, keeping the first occurrence and its label."""
    seen: set[tuple[str, str]] = set()
    out: list[ResourceRef] = []
    for ref in refs:
        k = ref_key(ref)
        if k not in seen:
            seen.add(k)
            out.append(ref)
    return out


def _key_part(value: str, what: str) -> str:
    problem = key_part_problem(value)
    if problem is not None:
        raise ValueError(f"subject key {what} {value!r} {problem}")
    return value


def make_subject_key(
    ref: ResourceRef | None,
    attribute: str | None,
    *,
    owner: ResourceRef | None = None,
) -> str | None:
    """`<entity kind>:<entity id>:<attribute>` from a subject ref, else from the scope `owner`, else None.

    A memory without a subject ref passes its scope owner, e.g. `ResourceRef(kind="organization", id=...)`.
    Returns None when there is no attribute or no ref and no owner. Raises ValueError when a part is empty,
    blank, or holds `:` or a null byte; the key is therefore never the empty string.
    """
    subject = ref if ref is not None else owner
    if subject is None or attribute is None:
        return None
    kind = _key_part(subject.kind, "kind")
    ident = _key_part(subject.id, "id")
    attr = _key_part(attribute, "attribute")
    return f"{kind}:{ident}:{attr}"
