"""The peer of the ingestion bench: LlamaIndex's PGVectorStore on the same documents, server and HNSW index.

Like for like with the project's CLI path (`bench_ingest._cli`), on the same PostgreSQL server in the same
run, with the same vectors (WordLlama l2_supercat 256, unit rows) and the same HNSW index (cosine,
m = 16, ef_construction = 64, pgvector's defaults, which the project's per-model index uses):

- timed: reading the files, LlamaIndex's node parsing (its default SentenceSplitter, 1,024 tokens, so a
  ~250-word document is one node), embedding every node in batches of 64 and `PGVectorStore.add`
  (SQLAlchemy over psycopg2) into a table whose HNSW index exists before the first row, as the project's
  does: every insert pays the live index, as "ready means searchable" does in the project;
- not timed: creating the table and its indexes (the store's own `_initialize`), and loading the model.

Two variants: `vector` (dense only) and `hybrid` (`hybrid_search=True`: a generated English tsvector
column with a GIN index beside the vectors, the peer's nearest thing to the project's BM25 postings).
What still differs: the project chunks at the front door's size (several chunks per document), keeps
BM25 statistics exact and writes per-source readiness rows; the peer stores one node per document.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

EMBED_BATCH = 64
HNSW = {"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": 40, "hnsw_dist_method": "vector_cosine_ops"}


def _embedding_class() -> type:
    from llama_index.core.embeddings import BaseEmbedding

    from knowledge.embedding.registry import WordLlamaEmbedder

    class WordLlamaEmbedding(BaseEmbedding):  # type: ignore[misc]
        """The project's WordLlama vectors, computed the way `WordLlamaEmbedder` computes them."""

        def _vectors(self, texts: list[str]) -> list[list[float]]:
            return np.asarray(WordLlamaEmbedder._embed_blocking(texts)).tolist()  # type: ignore[no-any-return]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._vectors([query])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._vectors([text])[0]

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._vectors(texts)

    return WordLlamaEmbedding


def _urls(url: str) -> tuple[str, str]:
    """The sync (psycopg2) and async (asyncpg) SQLAlchemy URLs of a libpq URL (TCP or socket)."""
    from sqlalchemy.engine import make_url

    base = make_url(url)
    return (
        base.set(drivername="postgresql+psycopg2").render_as_string(hide_password=False),
        base.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False),
    )


def ingest(url: str, files: list[Path], *, hybrid: bool) -> dict[str, Any]:
    """Ingest `files` into a fresh PGVectorStore table on `url`'s database; figures like the project's."""
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.vector_stores.postgres import PGVectorStore

    sync_url, async_url = _urls(url)
    table = f"peer_{'hybrid' if hybrid else 'vector'}_{uuid.uuid4().hex[:6]}"
    store = PGVectorStore(
        connection_string=sync_url,
        async_connection_string=async_url,
        table_name=table,
        embed_dim=256,
        hybrid_search=hybrid,
        text_search_config="english",
        hnsw_kwargs=dict(HNSW),
    )
    store._initialize()  # the table and its indexes before the clock starts, as the project's migrations are
    embed_model = _embedding_class()(embed_batch_size=EMBED_BATCH)
    embed_model.get_text_embedding_batch(["warm up"])
    started = time.perf_counter()
    documents = [Document(text=path.read_text(), metadata={"filename": path.name}) for path in files]
    index = VectorStoreIndex.from_documents(
        documents, storage_context=StorageContext.from_defaults(vector_store=store), embed_model=embed_model
    )
    seconds = time.perf_counter() - started
    with store._session() as session:
        from sqlalchemy import text

        nodes = session.execute(text(f'SELECT count(*) FROM public."data_{table}"')).scalar_one()
        session.execute(text(f'DROP TABLE public."data_{table}"'))
        session.commit()
    del index
    asyncio.run(store.close())  # the bench calls this from a worker thread, outside its event loop
    return {
        "documents": len(files),
        "nodes": int(nodes),
        "seconds": round(seconds, 3),
        "documents_per_s": round(len(files) / seconds, 1),
        "variant": "hybrid (tsvector + GIN)" if hybrid else "vector only",
    }
