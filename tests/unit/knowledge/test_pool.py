"""The ingestion pool: embedding spread over workers equals in-process embedding; errors cross as themselves."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest

from knowledge.documents.chunk import DEFAULT_CHUNK_TOKENS
from knowledge.documents.extract import DEFAULT_EXTRACT_LIMITS
from knowledge.embedding.registry import FakeEmbedder
from knowledge.errors import EmptyDocumentError, UnsupportedDocumentTypeError
from knowledge.ingestion.pool import Failure, IngestPool, Prepared, prepare_documents


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[IngestPool]:
    workers = IngestPool(2)
    yield workers
    workers.close()


class CountingFake(FakeEmbedder):
    """A subclass that does not declare `pool_safe` itself: it must embed in the calling process."""


async def test_pooled_embedding_equals_in_process_embedding(pool: IngestPool) -> None:
    texts = [f"invoice {n} for customer {n % 13} was paid late" for n in range(300)]
    pooled = await pool.embed(FakeEmbedder(), texts)
    assert np.array_equal(pooled, await FakeEmbedder().embed(texts))


async def test_an_embedder_subclass_that_does_not_declare_pool_safe_embeds_in_this_process(pool: IngestPool) -> None:
    embedder = CountingFake(batch_size=100)
    await pool.embed(embedder, [f"text {n}" for n in range(300)])
    assert embedder.calls == [100, 100, 100]
    assert FakeEmbedder().runs_in_pool() and not embedder.runs_in_pool()


async def test_a_document_failure_in_a_worker_comes_back_as_its_own_error(pool: IngestPool) -> None:
    docs = [
        (b"# Fine\n\nsome text", "text/markdown", "a.md"),
        (b"", None, "b.md"),
        (b"\x00\x01\x02\x03" * 1000, None, "c.txt"),
    ]
    out = await pool.run(prepare_documents, docs, DEFAULT_EXTRACT_LIMITS, DEFAULT_CHUNK_TOKENS, 100)
    assert isinstance(out[0], Prepared) and out[0].texts == ["# Fine\n\nsome text"]
    assert isinstance(out[1], Failure) and out[1].error is EmptyDocumentError
    assert isinstance(out[2], Failure) and out[2].error is UnsupportedDocumentTypeError
    assert out[2].message.startswith("the file is binary")
