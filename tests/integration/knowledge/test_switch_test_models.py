"""A switch to a `test/*` model opens only in the test suite (issue 25): outside it, `begin_switch` (what the
CLI and the `knowledge-model-switch` function call) refuses it before it registers the model or opens a
switch, so no real chunk is re-embedded or deleted."""

from __future__ import annotations

import pytest

from knowledge.embedding.live_model import begin_switch, live_model, running_switch
from knowledge.embedding.registry import ALLOW_TEST_MODELS_ENV
from knowledge.errors import UnknownEmbeddingModelError
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, FAKE2, Kit


async def test_begin_switch_refuses_a_test_model_outside_the_suite_and_opens_nothing(
    kit: Kit, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = await factory.organization()
    await kit.ingest(org, "Real knowledge, embedded under the live model.")
    monkeypatch.delenv(ALLOW_TEST_MODELS_ENV)
    with pytest.raises(UnknownEmbeddingModelError, match="test/hash-32 is a test model; real models: local/"):
        await begin_switch(kit.db, org, FAKE2, embedder=kit.lookup(FAKE2))
    assert await running_switch(kit.db, org) is None
    async with kit.db.connection() as conn:
        registered = await conn.fetchval(
            "SELECT count(*) FROM agent.knowledge_source_models WHERE embedding_model = $1", FAKE2
        )
    assert registered == 0
    assert (await live_model(kit.db, org)).model_id == FAKE


async def test_begin_switch_accepts_a_test_model_in_the_suite(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    await kit.ingest(org, "Real knowledge, embedded under the live model.")
    plan = await begin_switch(kit.db, org, FAKE2, embedder=kit.lookup(FAKE2))
    assert plan.switch_id is not None and await running_switch(kit.db, org) is not None
