"""The `run_history` source: earlier runs of this subject or about its entities, newest first.

It reads `agent.runs` once (`run_history` in `app_queries.sql`), on the service connection with an
explicit organization filter on every branch (docs/decisions.md, Sources says why not under row-level
security): runs inside `lookback_hours` (default 24, 1 to 720) that belong to the same user or trigger,
or whose result refs contain a request entity by kind and id, never the current run; root and child runs
alike, ordered `(created_at DESC, id DESC)`, capped by `spec.limit` (default 5). A zero limit
reads nothing. The statement reads id, status, result and created_at, and for the body exactly three more
columns: parent_run_id, waiting_reason and failure_reason (see docs/decisions.md, Sources).

The body names the status first, then the parent run, the valid result summary, the result refs as
`<capability word> <id>`, then the waiting or failure reason. A ref part longer than `MAX_REF_ID_CHARS` is
shortened by `bounded_text`, and such a ref is left out of `body_refs`, which otherwise holds the result
refs exactly as stored. Items carry the run as `ref`, its creation time as `recorded_at`, and no subject key.

It must never read a span tree, input, principal or snapshot, and never mint a subject key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from context.models import ContextItem, ContextRequest, ContextSourceSpec
from context.options import RunHistoryOptions
from context.sources._app_common import APP_QUERIES, bounded_text, item_tokens
from context.sources._base import DatabaseSource
from state.refs import ResourceRef, capability_ref_kind, distinct_refs

__all__ = [
    "DEFAULT_RUN_LIMIT",
    "MAX_SUMMARY_CHARS",
    "RUN_REF_KIND",
    "RunHistoryContextSource",
    "RunResult",
    "parse_run_result",
    "run_item",
]

DEFAULT_RUN_LIMIT = 5
"""The runs read when the policy sets no limit."""

MAX_SUMMARY_CHARS = 500
"""A result summary longer than this is shortened by the bounded-text rule."""

RUN_REF_KIND = "agent.run"
"""The kind of a run ref."""


@dataclass(frozen=True)
class RunResult:
    """The part of `agent.runs.result` a brief reads: `{"summary": str, "refs": [{"kind", "id"}, ...]}`."""

    summary: str | None
    """A non-blank summary string, else None (an invalid summary is skipped)."""
    refs: tuple[ResourceRef, ...]
    """The well-formed result refs, in stored order, without labels (a stored ref carries none)."""


def _stored_ref(entry: object) -> ResourceRef | None:
    if not isinstance(entry, Mapping):
        return None
    kind, ident = entry.get("kind"), entry.get("id")
    if not isinstance(kind, str) or not kind.strip() or not isinstance(ident, str) or not ident.strip():
        return None
    return ResourceRef(kind=kind, id=ident)


def parse_run_result(result: object) -> RunResult:
    """Read a stored run result leniently: a malformed summary or ref element is skipped, never fatal."""
    if not isinstance(result, Mapping):
        return RunResult(summary=None, refs=())
    summary = result.get("summary")
    valid_summary = summary if isinstance(summary, str) and summary.strip() else None
    raw_refs = result.get("refs")
    refs: list[ResourceRef] = []
    if isinstance(raw_refs, list):
        refs = [ref for ref in (_stored_ref(e) for e in raw_refs) if ref is not None]
    return RunResult(summary=valid_summary, refs=tuple(distinct_refs(refs)))


def run_item(row: Mapping[str, object], *, source: str = "run_history") -> ContextItem:
    """The item of one run row (id, status, result, created_at, parent_run_id, waiting and failure reason)."""
    status = str(row["status"])
    parsed = parse_run_result(row.get("result"))
    parts = [f"status {status}"]
    if row.get("parent_run_id") is not None:
        parts.append(f"parent run {row['parent_run_id']}")
    if parsed.summary is not None:
        parts.append(f"summary {bounded_text(parsed.summary, MAX_SUMMARY_CHARS)[0]}")
    citable: list[ResourceRef] = []
    written: list[str] = []
    for ref in parsed.refs:
        kind, kind_cut = bounded_text(capability_ref_kind(ref.kind))
        ident, id_cut = bounded_text(ref.id)
        written.append(f"{kind} {ident}")
        if not (kind_cut or id_cut):
            citable.append(ref)
    if written:
        parts.append("refs " + ", ".join(written))
    reason = {"waiting": row.get("waiting_reason"), "failed": row.get("failure_reason")}.get(status)
    if isinstance(reason, str) and reason.strip():
        parts.append(f"{status} reason {reason}")
    body = "; ".join(parts)
    created = row.get("created_at")
    recorded_at = created if isinstance(created, datetime) else None
    return ContextItem(
        source=source,
        kind="run_history",
        title=f"Run {status}",
        body=body,
        ref=ResourceRef(kind=RUN_REF_KIND, id=str(row["id"])),
        body_refs=citable,
        recorded_at=recorded_at,
        tokens=item_tokens(body),
    )


class RunHistoryContextSource(DatabaseSource):
    """Episodic memory: what earlier runs of this subject, or about its entities, concluded."""

    name = "run_history"
    options_schema = RunHistoryOptions

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        """One item per relevant earlier run, newest first."""
        if spec.limit == 0:
            return []
        options = RunHistoryOptions.model_validate(spec.options)
        limit = DEFAULT_RUN_LIMIT if spec.limit is None else spec.limit
        subject = request.subject
        entities = distinct_refs(request.entities)
        if subject.user_id is None and subject.trigger_id is None and not entities:
            return []
        current: UUID | None = request.run_id
        # The service role (one read, `Database.fetch`), not db.tenant(): under row-level security the planner
        # may not use the GIN index for `@>` (jsonb_contains is not leakproof) and scans the whole window
        # instead (measured 0.5-1.6 s on 20,000 runs).
        # Every branch of the statement filters the organization explicitly.
        rows = await self._db.fetch(
            APP_QUERIES["run_history"],
            subject.organization_id,
            options.lookback_hours,
            current,
            subject.user_id,
            subject.trigger_id,
            [r.kind for r in entities],
            [r.id for r in entities],
            limit,
        )
        return [run_item(dict(row), source=self.name) for row in rows]
