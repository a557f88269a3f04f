"""Dev mode's in-process runner counts ingestion outcomes as production's functions count them."""

from __future__ import annotations

from pathlib import Path

import pytest

from functions.app import create_app
from knowledge.documents.objects import LocalObjectStore
from state.db import Database
from state.settings import load_settings
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, fake_embedders
from tests.integration.functions.support import asgi_client
from tests.integration.functions.test_dev_in_process import DOC, ENCRYPTED, _wait_for
from tests.support import eventually

AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def test_dev_mode_counts_ingestion_outcomes_as_production_does(
    db: Database, factory: Factory, tmp_path: Path, fake_live_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INNGEST_DEV", "1")
    monkeypatch.setenv("INNGEST_BASE_URL", "http://127.0.0.1:9")  # nothing answers here: no Inngest server
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path, inngest_mode="dev", outbox_poll_interval_s=0.05)
    app = create_app(settings, db=db, object_store=LocalObjectStore(tmp_path / "objects"), embedders=fake_embedders())
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        assert app.state.functions_mode == "in-process"
        outcomes = app.state.slot.get().metrics.ingestion_outcomes
        org = str(await factory.organization())
        files = {"file": ("onboarding.md", DOC, "text/markdown")}
        await http.post("/v1/knowledge/sources", headers=AUTH, files=files, data={"organization_id": org})
        await _wait_for(http, org, "ready")
        other = str(await factory.organization())
        locked = {"file": ("locked.pdf", ENCRYPTED.read_bytes(), "application/pdf")}
        await http.post("/v1/knowledge/sources", headers=AUTH, files=locked, data={"organization_id": other})
        await _wait_for(http, other, "failed")

        async def counted() -> bool:  # the row turns failed a moment before its run returns and counts
            return bool(outcomes.labels(outcome="failed")._value.get() == 1)

        await eventually(counted, "the failed ingestion was never counted")
        assert outcomes.labels(outcome="ready")._value.get() == 1
        metrics = (await http.get("/metrics")).text
        assert 'ac_context_ingestion_outcomes_total{outcome="ready"} 1.0' in metrics, "what /metrics serves"
