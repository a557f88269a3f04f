"""The `application` source: the CRM and prospect rows already in scope, one item per projected field.

It resolves `request.entities` only, through the shared resolvers of `state.resolvers` on a `scoped_db`
client of the subject's organization: refs are deduplicated by `(kind, id)` keeping the first occurrence
and its label, unsupported and unresolved refs are dropped, each supported kind is read in one query, and
the request order is restored. Each non-null projected field becomes one item whose `ref` is the row and
whose subject key is `<kind>:<id>:<exact column name>`. `spec.limit` caps the items in ref then projection
order; a zero limit reads nothing; None applies no item cap.

It must never search `request.query`, never read a global Intelligence table directly, and never write
prose: the packer renders the items.
"""

from __future__ import annotations

from context.models import ContextItem, ContextRequest, ContextSourceSpec, make_subject_key
from context.sources._app_common import item_tokens, value_text
from context.sources._base import DatabaseSource
from state.refs import ResourceRef, distinct_refs, ref_key
from state.resolvers import SUPPORTED_REF_KINDS, Projection, resolve_refs
from state.scoped import scoped_db

__all__ = ["ApplicationContextSource", "projection_items"]


def projection_items(projection: Projection, *, source: str = "application") -> list[ContextItem]:
    """One item per projected field of a resolved row, in projection order."""
    ref = projection.ref
    items: list[ContextItem] = []
    for column, value in projection.fields:
        body = value_text(value)
        title = f"{ref.label} {column}" if ref.label else column
        items.append(
            ContextItem(
                source=source,
                kind="application",
                title=title,
                body=body,
                subject_key=make_subject_key(ref, column),
                ref=ref,
                tokens=item_tokens(body),
            )
        )
    return items


class ApplicationContextSource(DatabaseSource):
    """Resolves the explicit refs of a request into projected application rows."""

    name = "application"

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        """Items for the supported refs of `request.entities` that resolve for the subject."""
        if spec.limit == 0:
            return []
        refs: list[ResourceRef] = [r for r in distinct_refs(request.entities) if r.kind in SUPPORTED_REF_KINDS]
        if not refs:
            return []
        async with scoped_db(self._db, request.subject.organization_id) as client:
            resolved = await resolve_refs(client, refs)
        items: list[ContextItem] = []
        for ref in refs:
            projection = resolved.get(ref_key(ref))
            if projection is None:
                continue
            items.extend(projection_items(projection, source=self.name))
            if spec.limit is not None and len(items) >= spec.limit:
                return items[: spec.limit]
        return items
