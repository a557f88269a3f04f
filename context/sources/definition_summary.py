"""The `definition_summary` source: safe summaries of the published Agents, Workflows and Skills in view.

It reads `agent.definitions` once, on a tenant connection with an explicit organization filter: the
organization's own published definitions first, then the platform templates (`organization_id IS NULL`).
Each item carries the definition as its ref and the subject key `agent.definition:<id>:summary`.
`spec.limit` caps the items (default `DEFAULT_DEFINITION_LIMIT`); a zero limit reads nothing.

It must never read a draft or archived definition, another organization's definition, or any column but
the safe summary and the name (never the context policy), and never write prose.
"""

from __future__ import annotations

from context.models import ContextItem, ContextRequest, ContextSourceSpec, make_subject_key
from context.sources._app_common import APP_QUERIES, item_tokens
from context.sources._base import DatabaseSource
from state.refs import ResourceRef

__all__ = ["DEFAULT_DEFINITION_LIMIT", "DEFINITION_REF_KIND", "DefinitionSummaryContextSource"]

DEFAULT_DEFINITION_LIMIT = 20
"""The definitions read when the policy sets no limit."""

DEFINITION_REF_KIND = "agent.definition"
"""The kind of a definition ref and of its subject key."""

_KIND_WORDS = {"agent": "Agent", "workflow": "Workflow", "skill": "Skill"}


class DefinitionSummaryContextSource(DatabaseSource):
    """Explains what the organization's published definitions do, from their safe summaries."""

    name = "definition_summary"

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        """One item per visible published definition, the organization's own first."""
        if spec.limit == 0:
            return []
        limit = DEFAULT_DEFINITION_LIMIT if spec.limit is None else spec.limit
        organization_id = request.subject.organization_id
        async with self._db.tenant(organization_id) as conn:
            rows = await conn.fetch(APP_QUERIES["visible_definitions"], organization_id, limit)
        items: list[ContextItem] = []
        for row in rows:
            ref = ResourceRef(kind=DEFINITION_REF_KIND, id=str(row["id"]), label=str(row["name"]))
            word = _KIND_WORDS.get(str(row["definition_kind"]), str(row["definition_kind"]))
            scope = "platform template" if row["organization_id"] is None else "organization"
            summary = row["safe_summary"] if isinstance(row["safe_summary"], str) else ""
            body = f"{summary} ({scope})" if summary.strip() else f"({scope}; no summary)"
            items.append(
                ContextItem(
                    source=self.name,
                    kind="definition_summary",
                    title=f"{word} {row['name']}",
                    body=body,
                    subject_key=make_subject_key(ref, "summary"),
                    ref=ref,
                    recorded_at=row["updated_at"],
                    tokens=item_tokens(body),
                )
            )
        return items
