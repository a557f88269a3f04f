"""A build embeds its question once per model, however many sources ask (issue 45), and never keeps it."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from context._build_scope import one_embedding_per_build
from context.sources._query_vectors import once_per_build
from knowledge.embedding.embedder import Embedder, FakeEmbedder


class _Failing(FakeEmbedder):
    """Fails its first call, answers the next ones."""

    async def _embed_batch(self, texts: list[str]) -> np.ndarray:
        if not self.calls:
            self.calls.append(-1)
            raise RuntimeError("provider down")
        return await super()._embed_batch(texts)


async def test_concurrent_askers_in_one_build_share_one_embedding_of_the_question() -> None:
    fake = FakeEmbedder()
    lookup = once_per_build(lambda _model: fake)
    with one_embedding_per_build():
        first, second, third = await asyncio.gather(
            lookup(fake.model_id).embed(["what does the deal need"]),
            lookup(fake.model_id).embed(["what does the deal need"]),
            lookup(fake.model_id).embed(["what does the deal need"]),
        )
        other = await lookup(fake.model_id).embed(["another question"])
    assert fake.calls == [1, 1], "one call for the question, one for the other text"
    assert np.array_equal(first, second) and np.array_equal(first, third)
    assert np.array_equal(first, await FakeEmbedder().embed(["what does the deal need"])), "the very same vector"
    first[0, 0] = 99.0
    assert second[0, 0] != 99.0, "each asker gets its own copy"
    assert other.shape == (1, fake.dimensions)


async def test_outside_a_build_and_for_batches_every_call_embeds() -> None:
    fake = FakeEmbedder()
    lookup = once_per_build(lambda _model: fake)
    await lookup(fake.model_id).embed(["q"])
    await lookup(fake.model_id).embed(["q"])
    with one_embedding_per_build():
        await lookup(fake.model_id).embed(["q", "r"])
        await lookup(fake.model_id).embed(["q", "r"])
    with one_embedding_per_build():  # a new build embeds again: nothing is kept past a build
        await lookup(fake.model_id).embed(["q"])
    assert fake.calls == [1, 1, 2, 2, 1]


async def test_a_failed_first_call_lets_the_next_asker_embed_for_itself() -> None:
    failing = _Failing()
    lookup = once_per_build(lambda _model: failing)
    with one_embedding_per_build():
        results = await asyncio.gather(
            lookup(failing.model_id).embed(["q"]), lookup(failing.model_id).embed(["q"]), return_exceptions=True
        )
    assert isinstance(results[0], RuntimeError)
    assert isinstance(results[1], np.ndarray) and results[1].shape == (1, failing.dimensions)


def test_the_wrapped_embedder_still_names_its_model() -> None:
    fake = FakeEmbedder()
    wrapped: Embedder = once_per_build(lambda _model: fake)(fake.model_id)
    assert (wrapped.model_id, wrapped.dimensions) == (fake.model_id, fake.dimensions)
    with pytest.raises(TypeError):
        asyncio.run(wrapped.embed("not a list"))  # the embedder's own checks still apply
