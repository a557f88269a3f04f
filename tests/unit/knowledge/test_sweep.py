"""`knowledge.ingestion.sweep.SourceView.identity_json`: the one JSON of a source that the API and the CLI extend."""

from __future__ import annotations

from datetime import UTC, date, datetime
from uuid import uuid4

from knowledge.ingestion.sources import SourceView


def test_the_identity_holds_the_eleven_fields_every_interface_shows_as_json_values() -> None:
    source_id, org = uuid4(), uuid4()
    view = SourceView(
        id=source_id,
        organization_id=org,
        kind="upload",
        title="Pricing",
        uri=None,
        status="failed",
        failure_reason="document_empty: the document contains no text",
        attempts=2,
        pending_since=None,
        updated_at=datetime.now(UTC),
    )
    assert view.identity_json() == {
        "id": str(source_id),
        "organization_id": str(org),
        "kind": "upload",
        "title": "Pricing",
        "uri": None,
        "status": "failed",
        "failure_reason": "document_empty: the document contains no text",
        "attempts": 2,
        "owner": None,
        "review_by": None,
        "overdue": False,
    }
    platform = SourceView(**{**{f: getattr(view, f) for f in SourceView.__slots__}, "organization_id": None})
    assert platform.identity_json()["organization_id"] is None
    reviewed = SourceView(
        **{**{f: getattr(view, f) for f in SourceView.__slots__}, "owner": "Legal", "review_by": date(2026, 3, 31)}
    )
    assert (reviewed.identity_json()["owner"], reviewed.identity_json()["review_by"]) == ("Legal", "2026-03-31")
