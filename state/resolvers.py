"""Resolve resource refs to projections of application rows, for one organization, in batched reads.

`resolve_refs(client, refs)` answers `{(kind, id): Projection}` for the refs that name a live row the
client's organization may read. It removes duplicates by `(kind, id)` (first occurrence and its label
win), and ignores without a query (never raising) unsupported kinds and ids that are not canonical UUID
text (`state.ids`): `urn:uuid:…`, braces, upper case or padding all parse as a UUID, but the id becomes a
part of every subject key of the row, so a second spelling would be a second key for one row (and a colon
would make every key raise). It reads each supported kind in one scoped read per batch of 100 ids, and
every read of one call in one statement (`OrgScopedClient.select_each`: one round trip, whatever the kinds).
Soft-deleted rows are excluded by the scoped client where the table has `deleted_at`. Intelligence refs
resolve only through the tenant's bridge row (`prospects` for a company, `prospect_people` for a person)
with the global row embedded through the foreign key, so a shared row no bridge of this tenant points at
resolves to nothing.

This module must never read a global Intelligence table directly, never read another organization's rows
and never search: it resolves explicit refs only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from state.ids import is_canonical_uuid
from state.projections import PROJECTIONS, SUPPORTED_REF_KINDS, KindProjection, Projection
from state.refs import ResourceRef, distinct_refs, ref_key
from state.scoped import Embed, OrgScopedClient, Select

__all__ = ["DEFAULT_BATCH_SIZE", "SUPPORTED_REF_KINDS", "Projection", "resolve_refs"]

DEFAULT_BATCH_SIZE = 100
"""Ids per query: a ref list has no bound, and a long PostgREST URL is answered 414."""

_EMBED_NAME = "shared"


def _as_uuid(value: str) -> UUID | None:
    return UUID(value) if is_canonical_uuid(value) else None


def _fields(row: Mapping[str, object], columns: Sequence[str]) -> tuple[tuple[str, object], ...]:
    return tuple((column, row[column]) for column in columns if row.get(column) is not None)


def _projection(ref: ResourceRef, row: Mapping[str, object], spec: KindProjection) -> Projection:
    label = ref.label
    if spec.label_column is not None:
        name = row.get(spec.label_column)
        if isinstance(name, str) and name.strip():
            label = name
    resolved = ResourceRef(kind=ref.kind, id=ref.id, label=label)
    return Projection(ref=resolved, fields=_fields(row, spec.columns))


def _batch_read(spec: KindProjection, ids: Sequence[UUID]) -> Select:
    """The scoped read of one batch of ids of one kind."""
    if spec.embed_via is None:
        return Select(spec.table, ("id", *spec.columns), where_in={spec.id_column: list(ids)})
    return Select(
        spec.table,
        (spec.id_column,),
        where_in={spec.id_column: list(ids)},
        embed=Embed(_EMBED_NAME, via=spec.embed_via, columns=list(spec.columns)),
    )


def _batch_rows(spec: KindProjection, rows: Sequence[Any]) -> dict[UUID, Mapping[str, object]]:
    """`{row id: projected row}` of one batch's rows."""
    if spec.embed_via is None:
        return {row["id"]: dict(row) for row in rows}
    out: dict[UUID, Mapping[str, object]] = {}
    for row in rows:
        shared = row[_EMBED_NAME]
        if not isinstance(shared, Mapping):
            continue
        # Two bridge rows (one person watched at two companies) name one shared row: key on its id.
        out.setdefault(row[spec.id_column], shared)
    return out


async def resolve_refs(
    client: OrgScopedClient,
    refs: Sequence[ResourceRef],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> dict[tuple[str, str], Projection]:
    """Resolve refs for the client's organization: `{(kind, id): Projection}` for the rows that exist."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    by_kind: dict[str, list[tuple[ResourceRef, UUID]]] = {}
    for ref in distinct_refs(refs):
        ident = _as_uuid(ref.id)
        if ref.kind not in SUPPORTED_REF_KINDS or ident is None:
            continue  # a row resolved under a look-alike id would carry a look-alike key
        by_kind.setdefault(ref.kind, []).append((ref, ident))

    reads: list[tuple[str, Select]] = []
    for kind, wanted in by_kind.items():
        unique_ids = list(dict.fromkeys(ident for _, ident in wanted))
        for start in range(0, len(unique_ids), batch_size):
            reads.append((kind, _batch_read(PROJECTIONS[kind], unique_ids[start : start + batch_size])))
    answers: list[Sequence[Any]]  # records, or dicts of select_each
    if len(reads) == 1:  # one part: the plain select, no array of records
        part = reads[0][1]
        answers = [await client.select(part.table, part.columns, where_in=part.where_in, embed=part.embed)]
    else:
        answers = list(await client.select_each([part for _, part in reads]))
    rows: dict[str, dict[UUID, Mapping[str, object]]] = {kind: {} for kind in by_kind}
    for (kind, _), answer in zip(reads, answers, strict=True):
        rows[kind].update(_batch_rows(PROJECTIONS[kind], answer))
    resolved: dict[tuple[str, str], Projection] = {}
    for kind, wanted in by_kind.items():
        spec = PROJECTIONS[kind]
        for ref, ident in wanted:
            row = rows[kind].get(ident)
            if row is not None:
                resolved[ref_key(ref)] = _projection(ref, row, spec)
    return resolved
