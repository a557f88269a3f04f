"""Owner and review date over HTTP: the upload, sync and batch routes store them, refuse a bad review date
with its path and store nothing, `GET /v1/knowledge/sources` shows them and filters the overdue ones, and
`/metrics` counts the overdue sources per organization (the platform under its own label)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from state.db import Database
from tests.factories import Factory
from tests.integration.functions.conftest import Service

PAST, FUTURE = "2020-01-31", "2999-12-31"
GAUGE = "ac_context_knowledge_sources_overdue"


def _upload(org: UUID | None, text: str, **fields: str) -> dict[str, Any]:
    scope = {"organization_id": str(org)} if org else {"platform": "true"}
    return {"files": {"file": ("doc.md", text.encode(), "text/markdown")}, "data": {**scope, **fields}}


async def _listed(service: Service, org: UUID, **params: str) -> dict[str, tuple[Any, Any, Any]]:
    answer = await service.http.get(
        "/v1/knowledge/sources", params={"organization_id": str(org), **params}, headers=service.auth
    )
    assert answer.status_code == 200, answer.text
    return {s["title"]: (s["owner"], s["review_by"], s["overdue"]) for s in answer.json()["sources"]}


async def _count(db: Database) -> int:
    async with db.connection() as conn:
        return int(await conn.fetchval("SELECT count(*) FROM agent.knowledge_sources"))


async def test_upload_sync_and_batch_store_owner_and_review_date_and_the_list_filters_overdue(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    post, auth = service.http.post, service.auth
    up = await post("/v1/knowledge/sources", headers=auth, **_upload(org, "# Up", owner="Legal", review_by=PAST))
    assert up.status_code == 202, up.text
    sync = {"organization_id": str(org), "uri": "https://wiki.example/sync", "content": "# Sync", "title": "Sync"}
    synced = await post("/v1/knowledge/sources", headers=auth, json={**sync, "owner": "HR", "review_by": FUTURE})
    assert synced.status_code == 202, synced.text
    items = [
        {"filename": "b1.md", "content": "# B1", "title": "B1", "owner": "Ops", "review_by": PAST},
        {"filename": "b2.md", "content": "# B2", "title": "B2"},
    ]
    batch = await post("/v1/knowledge/sources:batch", headers=auth, json={"organization_id": str(org), "items": items})
    assert batch.status_code == 202, batch.text
    files = [("file", ("m1.md", b"# M1", "text/markdown")), ("file", ("m2.md", b"# M2", "text/markdown"))]
    form = {"organization_id": str(org), "owner": "Support", "review_by": FUTURE}
    multipart = await post("/v1/knowledge/sources:batch", headers=auth, files=files, data=form)
    assert multipart.status_code == 202, multipart.text

    assert await _listed(service, org) == {
        "doc": ("Legal", PAST, True),
        "Sync": ("HR", FUTURE, False),
        "B1": ("Ops", PAST, True),
        "B2": (None, None, False),
        "m1": ("Support", FUTURE, False),
        "m2": ("Support", FUTURE, False),
    }
    assert await _listed(service, org, overdue="true") == {"doc": ("Legal", PAST, True), "B1": ("Ops", PAST, True)}

    again = await post("/v1/knowledge/sources", headers=auth, **_upload(org, "# Up", review_by=FUTURE))
    assert again.json()["outcome"] == "unchanged" and again.json()["source_id"] == up.json()["source_id"]
    assert (await _listed(service, org))["doc"] == ("Legal", FUTURE, False), "re-upload sets the date it names"


async def test_a_review_date_that_is_not_a_date_is_refused_with_its_path_and_nothing_is_stored(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    post, auth = service.http.post, service.auth
    sync = {"organization_id": str(org), "uri": "https://wiki.example/x", "content": "# X"}
    items = [{"filename": "a.md", "content": "# A"}, {"filename": "b.md", "content": "# B", "review_by": "31/01/2026"}]
    files = [("file", ("m.md", b"# M", "text/markdown"))]
    cases: list[tuple[dict[str, Any], list[Any]]] = [
        (_upload(org, "# Up", review_by="2026-02-30"), ["review_by"]),
        (_upload(org, "# Up", review_by="tomorrow"), ["review_by"]),
        (_upload(org, "# Up", owner="   "), ["owner"]),
        ({"json": {**sync, "review_by": "2026-01-31T00:00:00"}}, ["review_by"]),
        ({"json": {**sync, "review_by": 20260131}}, ["review_by"]),
        ({"json": {**sync, "owner": "x" * 201}}, ["owner"]),
    ]
    for kwargs, loc in cases:
        refused = await post("/v1/knowledge/sources", headers=auth, **kwargs)
        assert refused.status_code == 422, (kwargs, refused.text)
        error = refused.json()["error"]
        assert error["code"] == "invalid_request" and [d["loc"] for d in error["details"]] == [loc], error
    batch = await post("/v1/knowledge/sources:batch", headers=auth, json={"organization_id": str(org), "items": items})
    assert batch.status_code == 422 and [d["loc"] for d in batch.json()["error"]["details"]] == [
        ["items", 1, "review_by"]
    ]
    form = {"organization_id": str(org), "review_by": "2026-13-01"}
    multipart = await post("/v1/knowledge/sources:batch", headers=auth, files=files, data=form)
    assert multipart.status_code == 422 and [d["loc"] for d in multipart.json()["error"]["details"]] == [["review_by"]]
    assert await _count(service.db) == 0 and service.inngest.sent == [], "nothing stored, no event sent"


def _gauge(metrics: str) -> dict[str, float]:
    prefix = GAUGE + '{organization="'
    return {
        line[len(prefix) :].split('"', 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith(prefix)
    }


async def test_metrics_count_the_overdue_sources_per_organization_at_each_scrape(
    service: Service, factory: Factory
) -> None:
    one, two, quiet = await factory.organization(), await factory.organization(), await factory.organization()
    post, auth = service.http.post, service.auth
    assert _gauge((await service.http.get("/metrics")).text) == {}
    for org, text, review in [
        (one, "# A", PAST), (one, "# B", PAST), (one, "# C", FUTURE), (two, "# D", PAST), (None, "# P", PAST),
        (quiet, "# Q", FUTURE), (quiet, f"# R, text that says {GAUGE} and review was due {PAST}", ""),
    ]:  # fmt: skip
        fields = {"review_by": review} if review else {}
        assert (await post("/v1/knowledge/sources", headers=auth, **_upload(org, text, **fields))).status_code == 202
    assert _gauge((await service.http.get("/metrics")).text) == {str(one): 2.0, str(two): 1.0, "platform": 1.0}
    await post("/v1/knowledge/sources", headers=auth, **_upload(two, "# D", review_by=FUTURE))
    assert _gauge((await service.http.get("/metrics")).text) == {str(one): 2.0, "platform": 1.0}, (
        "a reviewed one leaves"
    )
