"""A search remembers the live model it read last, and a remembered model gone stale costs one retry (issue 24).

The function refuses a query embedded with a model that is not the live one (KS002) before it compares any
chunk, so the remembered model can save a read but never mix two models' vectors.
"""

from __future__ import annotations

from knowledge.embedding.live_model import begin_switch, flip_live_model
from knowledge.embedding.registry import Embedder
from knowledge.search import search
from knowledge.switchover import reembed_source
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, FAKE2, Kit


async def test_a_stale_remembered_live_model_costs_one_retry_and_never_mixes_models(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    source = await kit.ingest(org, "Our lifecycle stage names: lead, customer.")
    embedded: list[str] = []

    def lookup(model: str) -> Embedder:
        embedded.append(model)
        return kit.lookup(model)

    first = await search(kit.db, org, "lifecycle", include_organization=True, embedders=lookup)
    assert {h.embedding_model for h in first} == {FAKE} and embedded == [FAKE]

    await begin_switch(kit.db, org, FAKE2, dimensions=32)
    await reembed_source(kit.db, kit.store, source, kit.lookup(FAKE2))
    await flip_live_model(kit.db, org, FAKE2)

    embedded.clear()
    after = await search(kit.db, org, "lifecycle", include_organization=True, embedders=lookup)
    # The remembered FAKE was refused by the function, then the live model was read and the query embedded again.
    assert embedded == [FAKE, FAKE2]
    assert [h.source_id for h in after] == [source] and {h.embedding_model for h in after} == {FAKE2}

    embedded.clear()
    again = await search(kit.db, org, "lifecycle", include_organization=True, embedders=lookup)
    assert embedded == [FAKE2] and {h.embedding_model for h in again} == {FAKE2}  # the new one is remembered
