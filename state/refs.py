"""Resource references: the one shape every layer uses to name a row.

A `ResourceRef` names a row by `kind` and `id`; its `label` is display text and never takes part in
matching or deduplication. This module also owns the run-input ref normalizer and `capability_ref_kind`,
the map from the kind a tool stored to the word the capability input accepts.

It must never read the database, and it never changes the run input it normalises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CAPABILITY_REF_KINDS",
    "ResourceRef",
    "capability_ref_kind",
    "distinct_refs",
    "make_subject_key",
    "normalize_run_input_refs",
    "ref_key",
]


class ResourceRef(BaseModel):
    """A reference to one row: `kind` and `id` identify it, `label` only describes it."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    kind: str = Field(min_length=1)
    """The entity kind, for example `crm.company` or `agent.run`."""
    id: str = Field(min_length=1)
    """The row id as the owning table stores it."""
    label: str | None = None
    """Display text; never used to match, deduplicate or key."""


def ref_key(ref: ResourceRef) -> tuple[str, str]:
    """The identity of a ref: `(kind, id)`, never the label."""
    return (ref.kind, ref.id)


def _as_ref(entry: object) -> ResourceRef | None:
    """Return a ref for a well-formed ref-shaped mapping, else None."""
    if not isinstance(entry, Mapping):
        return None
    kind = entry.get("kind")
    ident = entry.get("id")
    label = entry.get("label")
    if not isinstance(kind, str) or not kind.strip():
        return None
    if not isinstance(ident, str) or not ident.strip():
        return None
    if label is not None and not isinstance(label, str):
        return None
    return ResourceRef(kind=kind, id=ident, label=label)


def normalize_run_input_refs(run_input: Mapping[str, Any] | None, *, key: str = "refs") -> list[ResourceRef]:
    """Keep the valid ref-shaped objects of `run_input[key]`, in order, and drop malformed entries.

    A malformed entry is anything that is not a mapping with a non-blank string `kind` and `id` and an
    optional string `label`. The stored input is read, never changed.
    """
    if run_input is None:
        return []
    raw = run_input.get(key)
    if not isinstance(raw, list | tuple):
        return []
    refs: list[ResourceRef] = []
    for entry in raw:
        ref = _as_ref(entry)
        if ref is not None:
            refs.append(ref)
    return refs


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
    if not value or not value.strip():
        raise ValueError(f"subject key {what} is empty or blank")
    if ":" in value or "\x00" in value:
        raise ValueError(f"subject key {what} {value!r} holds ':' or a null byte")
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
