"""Explain mode over HTTP names the candidates a source cut before the packer, with rule, score and rank."""

from __future__ import annotations

from pathlib import Path

from context.registry import ContextSourceRegistry
from context.sources import default_sources
from functions.app import create_app
from knowledge.documents.objects import LocalObjectStore
from state.db import Database
from state.settings import load_settings
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, fake_embedders
from tests.integration.functions.cutting_source import CUT_TITLE, CuttingKnowledge
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key


async def test_the_brief_route_answers_the_cut_candidates_with_explain(
    db: Database, factory: Factory, tmp_path: Path, fake_live_model: str
) -> None:
    embedders = fake_embedders()
    sources = [
        CuttingKnowledge(s) if s.name == "knowledge" else s for s in default_sources(db, embedders=embedders.get)
    ]
    app = create_app(
        load_settings(api_token=TOKEN, data_dir=tmp_path), db=db,
        inngest_client=RecordingInngest(app_id="ac-context", is_production=True, signing_key=new_signing_key()),
        registry=ContextSourceRegistry(sources), object_store=LocalObjectStore(tmp_path), embedders=embedders,
    )  # fmt: skip
    org = await factory.organization()
    body = {"organization_id": str(org), "query": "pricing", "explain": True}
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        answer = await http.post("/v1/context/briefs", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
        plain = await http.post(
            "/v1/context/briefs", json={**body, "explain": False}, headers={"Authorization": f"Bearer {TOKEN}"}
        )
    assert answer.status_code == 200, answer.text
    (cut,) = answer.json()["explanation"]["cut"]
    assert (cut["rule"], cut["score"], cut["rank"], cut["tokens"], cut["title"]) == (
        "relevance_floor",
        0.21,
        9,
        42,
        CUT_TITLE,
    )
    assert plain.json()["explanation"] is None, "without explain nothing about cuts is answered"
