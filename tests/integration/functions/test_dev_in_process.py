"""Dev mode with no Inngest server: the service runs its events' work in-process (functions.outbox.delivery)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from functions.app import create_app
from functions.errors import InngestConfigError
from knowledge.documents.objects import LocalObjectStore
from state import outbox
from state.db import Database
from state.settings import load_settings
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, fake_embedders
from tests.integration.functions.support import asgi_client
from tests.support import eventually

AUTH = {"Authorization": f"Bearer {TOKEN}"}
ENCRYPTED = (
    Path(__file__).resolve().parents[3].parent
    / "shared/corpus/pdf/py-pdf-sample-files/005-libreoffice-writer-password/libreoffice-writer-password.pdf"
)
DOC = b"# Onboarding\n\nNew customers get a kickoff call within two business days of signing."


async def _wait_for(http: Any, org: str, status: str, *, attempts: int | None = None) -> dict[str, Any]:
    """The organization's newest source once it is `status` (after `attempts` runs, when given)."""
    seen: list[Any] = []

    async def reached() -> dict[str, Any] | None:
        listed = (await http.get("/v1/knowledge/sources", params={"organization_id": org}, headers=AUTH)).json()
        seen[:] = [listed]
        first = listed["sources"][0] if listed["sources"] else None
        if first and first["status"] == status and (attempts is None or first["attempts"] == attempts):
            return dict(first)
        return None

    return await eventually(reached, lambda: f"the source never became {status}: {seen}")


async def test_dev_mode_with_no_inngest_server_ingests_an_upload_to_ready_in_process(
    db: Database, factory: Factory, tmp_path: Path, fake_live_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INNGEST_DEV", "1")
    monkeypatch.setenv("INNGEST_BASE_URL", "http://127.0.0.1:9")  # nothing answers here: no Inngest server
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path, inngest_mode="dev", outbox_poll_interval_s=0.05)
    app = create_app(settings, db=db, object_store=LocalObjectStore(tmp_path / "objects"), embedders=fake_embedders())
    org = str(await factory.organization())
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        assert app.state.functions_mode == "in-process"
        files = {"file": ("onboarding.md", DOC, "text/markdown")}
        created = await http.post("/v1/knowledge/sources", headers=AUTH, files=files, data={"organization_id": org})
        body = created.json()
        assert created.status_code == 202 and body["event_status"] == "in_process", body
        source = await _wait_for(http, org, "ready")
        assert source["id"] == body["source_id"]
        hits = (
            await http.post(
                "/v1/knowledge/search", headers=AUTH, json={"organization_id": org, "query": "kickoff call"}
            )
        ).json()
        assert hits["hits"] and hits["hits"][0]["source_id"] == body["source_id"], "ready means searchable"

        other = str(await factory.organization())
        locked = {"file": ("locked.pdf", ENCRYPTED.read_bytes(), "application/pdf")}
        await http.post("/v1/knowledge/sources", headers=AUTH, files=locked, data={"organization_id": other})
        failed = await _wait_for(http, other, "failed")
        assert failed["failure_reason"].startswith("pdf_encrypted:") and failed["attempts"] == 1
        retry = await http.post(
            f"/v1/knowledge/sources/{failed['id']}/retry", params={"organization_id": other}, headers=AUTH
        )
        assert retry.status_code == 202, retry.text
        answered = retry.json()  # the one retry rule, no dev-mode branch: reset in the request, run in process
        assert (answered["reset"], answered["status"], answered["event_status"]) == (True, "pending", "in_process")
        again = await _wait_for(http, other, "failed", attempts=2)
        assert again["attempts"] == 2 and again["failure_reason"].startswith("pdf_encrypted:"), "the retry ran here"
    (row,) = await outbox.rows(db, [UUID(body["event_id"])])
    assert row.delivered_by == "in-process"


async def test_production_never_runs_functions_in_process(tmp_path: Path) -> None:
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path, run_functions="in-process")
    with pytest.raises(InngestConfigError, match="production never runs functions in-process"):
        create_app(settings, environ={"INNGEST_SIGNING_KEY": "signkey-prod-" + "ab" * 32})
