"""The relevance floor (migrations/0100): what either half ranks in its own top survives it, the tail does not.

The chunks' and the query's vectors are set by hand (the fake model's id, so the search runs exactly as
with the fake) so each chunk's cosine similarity to the query is known: the floor's rule is then checked
against figures, not against whatever a hashing embedder happens to produce.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from knowledge.embedding.registry import Embeddings, FakeEmbedder
from knowledge.search import DEFAULT_KEEP_TOP, DEFAULT_MIN_RELEVANCE, KEEP_FLOOR_SHARE, search, search_explained
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit


def _vector(cosine: float, axis: int) -> np.ndarray:
    """A unit vector whose cosine with the query's (the first axis) is `cosine`; the rest on `axis`."""
    vector = np.zeros(64, dtype=np.float32)
    vector[0], vector[axis] = cosine, np.sqrt(1 - cosine**2)
    return vector


class DesignedEmbedder(FakeEmbedder):
    """The fake model, except that a text holding one of `designed`'s keys gets that key's vector."""

    designed: ClassVar[dict[str, np.ndarray]] = {}

    async def _embed_batch(self, texts: list[str]) -> Embeddings:
        rows = await super()._embed_batch(texts)
        for row, text in enumerate(texts):
            for key, vector in self.designed.items():
                if key in text:
                    rows[row] = vector
                    break
        return rows


@pytest.fixture
def designed(kit: Kit) -> Kit:
    DesignedEmbedder.designed = {
        "QUERY": _vector(1.0, 1),
        "evidence": _vector(0.23, 2),  # under the floor (0.25), above the lower floor (0.2075)
        "tail": _vector(0.15, 3),  # under both
        "nothing": _vector(0.0, 4),
    }
    kit.embedders[FAKE] = DesignedEmbedder(batch_size=4)
    return kit


async def test_the_floor_keeps_a_chunk_the_dense_half_ranks_first_and_still_cuts_the_tail(
    designed: Kit, factory: Factory
) -> None:
    kit, org = designed, await factory.organization()
    evidence = await kit.ingest(org, "The evidence: we adopted a beagle from the rescue centre.")
    tails = {await kit.ingest(org, f"A tail sentence number {n} about the weather.") for n in range(3)}
    kwargs = {"include_organization": True, "embedders": kit.lookup, "limit": 8, "per_source": None}
    assert DEFAULT_MIN_RELEVANCE == 0.25 and 0.15 < KEEP_FLOOR_SHARE * DEFAULT_MIN_RELEVANCE < 0.23
    # The floor alone (the default, 0093's rule): the evidence, at cosine 0.23, is cut with the tail.
    assert DEFAULT_KEEP_TOP == 0 and await search(kit.db, org, "QUERY which pet", **kwargs) == []
    kwargs["keep_top"] = 8
    hits = await search(kit.db, org, "QUERY which pet", **kwargs)
    assert [h.source_id for h in hits] == [evidence] and hits[0].dense_rank == 1
    assert all(h.dense_rank is not None and h.dense_rank <= 8 for h in hits)
    # The tail was ranked too (within the dense half's top 8), and the lower floor cut it.
    kept, cut = await search_explained(kit.db, org, "QUERY which pet", **kwargs)
    assert kept == hits
    assert {h.source_id for h in cut} == tails and {h.cut for h in cut} == {"relevance_floor"}
    assert all(h.dense_rank is not None and h.dense_rank <= 8 for h in cut)


async def test_the_floor_keeps_a_chunk_the_lexical_half_ranks_in_its_top(designed: Kit, factory: Factory) -> None:
    kit, org = designed, await factory.organization()
    # Two query terms, one in each chunk: each chunk's BM25 is about 0.23 of the query's best possible.
    alpha = await kit.ingest(org, "nothing but the zephyr went by the harbour wall")
    bravo = await kit.ingest(org, "nothing but the quokka went by the harbour wall")
    await kit.ingest(org, "nothing at all went by the harbour wall today")
    kwargs = {"include_organization": True, "embedders": kit.lookup, "per_source": None}
    assert await search(kit.db, org, "QUERY zephyr quokka", **kwargs) == []
    hits = await search(kit.db, org, "QUERY zephyr quokka", keep_top=8, keep_floor=0.2, **kwargs)
    assert {h.source_id for h in hits} == {alpha, bravo}
    assert {h.lexical_rank for h in hits} == {1, 2} and all(1 - (h.dense_distance or 0) < 0.01 for h in hits)


async def test_a_half_rank_past_keep_top_gets_the_floor_alone(designed: Kit, factory: Factory) -> None:
    kit, org = designed, await factory.organization()
    for n in range(3):
        await kit.ingest(org, f"The evidence number {n}: a beagle from the rescue centre.")
    kwargs = {"include_organization": True, "embedders": kit.lookup, "per_source": None}
    hits = await search(kit.db, org, "QUERY which pet", keep_top=2, **kwargs)
    assert sorted(h.dense_rank for h in hits) == [1, 2]  # the third, ranked 3rd, is under the floor


async def test_keep_floor_and_keep_top_are_validated(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    for bad in ({"keep_top": -1}, {"keep_top": 1001}, {"keep_floor": 0.5}, {"keep_floor": -0.1}):
        with pytest.raises(ValueError):
            await search(kit.db, org, "q", include_organization=True, embedders=kit.lookup, **bad)


async def test_a_chunk_inside_keep_top_of_one_half_and_past_it_in_the_other_is_kept(
    designed: Kit, factory: Factory
) -> None:
    kit, org = designed, await factory.organization()
    # The evidence is the dense half's first (cosine 0.28) and the lexical half's second (one "harbour");
    # the rival is the lexical half's first and the dense half's second (cosine 0).
    evidence = await kit.ingest(org, "The evidence: a beagle walked by the harbour.")
    await kit.ingest(org, "nothing: harbour harbour harbour, the harbour wall.")
    # A floor nothing reaches, and no lower floor: only the keep_top rule can keep a chunk.
    kwargs = {"include_organization": True, "embedders": kit.lookup, "per_source": None, "min_relevance": 0.99,
              "keep_floor": 0.0, "keep_top": 1}  # fmt: skip
    kept, cut = await search_explained(kit.db, org, "QUERY harbour", **kwargs)
    ranks = {h.source_id: (h.dense_rank, h.lexical_rank) for h in kept + cut}
    assert ranks[evidence] == (1, 2)
    assert evidence in {h.source_id for h in kept}, "the better of a chunk's two half ranks decides keep_top"
    assert kept == await search(kit.db, org, "QUERY harbour", **kwargs)


async def test_the_query_gate_keeps_every_candidate_of_an_answered_query_and_none_of_an_unanswered_one(
    designed: Kit, factory: Factory
) -> None:
    kit, org = designed, await factory.organization()
    evidence = await kit.ingest(org, "The evidence: we adopted a beagle from the rescue centre.")
    tails = {await kit.ingest(org, f"A tail sentence number {n} about the weather.") for n in range(3)}
    kwargs = {"include_organization": True, "embedders": kit.lookup, "per_source": None}
    # The best candidate (cosine 0.23) reaches a gate of 0.2: the query is answered, the ranking decides.
    hits = await search(kit.db, org, "QUERY which pet", query_gate=0.2, **kwargs)
    assert hits[0].source_id == evidence and {h.source_id for h in hits[1:]} == tails
    assert hits[0].relevance is not None and abs(hits[0].relevance - 0.23) < 1e-3
    # A gate above the best candidate: the floor alone, and it cuts them all.
    assert await search(kit.db, org, "QUERY which pet", query_gate=0.24, **kwargs) == []
    # The relative floor keeps what reaches its share of the best: the evidence (0.23), not the tail (0.15).
    hits = await search(kit.db, org, "QUERY which pet", relative_floor=0.8, **kwargs)
    assert [h.source_id for h in hits] == [evidence]
    with pytest.raises(ValueError, match="query_gate"):
        await search(kit.db, org, "q", query_gate=1.5, **kwargs)
    with pytest.raises(ValueError, match="relative_floor"):
        await search(kit.db, org, "q", relative_floor=-0.1, **kwargs)
