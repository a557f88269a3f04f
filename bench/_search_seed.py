"""Seeding for the search benchmarks: deterministic synthetic knowledge, written with COPY in a few statements.

Text is drawn from the Cranfield vocabulary with Zipf-like frequencies (p ~ 1 / (rank + 10)), so the most
common words match about half of the chunks and the words near rank 50 about a tenth: a query's common term
matches more than 10 % of the scope, as real text does.

Each chunk's vector is WordLlama's embedding of its own text, and each query's vector WordLlama's
embedding of the query (`Embed`): the distribution the HNSW index meets in use. Passing no embedder gives
seeded random unit vectors instead, the index's worst case (no neighbourhood structure, so a walk visits
many nodes and still finds few true neighbours: recall@32 about 0.25 at ef_search 200). Sources
and their readiness rows are written ready, the chunks before the readiness rows, so the database's own
triggers build the postings and the BM25 statistics exactly as for an ingested source.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import asyncpg
import numpy as np
from pgvector import Vector

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
MODEL = "local/wordllama-l2-supercat-256"
DIMS = 256

Embed = Callable[[list[str]], Awaitable[np.ndarray]]
"""Unit vectors for a list of texts, one row each."""


class Vocabulary:
    """The Cranfield words by frequency rank, with Zipf-like sampling weights."""

    def __init__(self) -> None:
        words = (CORPUS / "ir" / "cranfield" / "cran.all.1400").read_text().lower().split()
        counts: dict[str, int] = {}
        for w in words:
            if w.isalpha() and len(w) > 3:
                counts[w] = counts.get(w, 0) + 1
        self.words = np.array(sorted(counts, key=lambda w: (-counts[w], w)))
        weights = 1.0 / (np.arange(len(self.words)) + 10.0)
        self.p = weights / weights.sum()

    def texts(self, rng: np.random.Generator, n: int, words: int) -> list[str]:
        drawn = rng.choice(len(self.words), size=(n, words), p=self.p)
        return [" ".join(self.words[row]) for row in drawn]


async def _ready_sources(
    conn: asyncpg.Connection, organization_id: uuid.UUID | None, *, sources: int, title: str
) -> list[uuid.UUID]:
    """`sources` ready source rows titled `<title> <n>`, copied in one statement; their ids."""
    source_ids = [uuid.uuid4() for _ in range(sources)]
    await conn.copy_records_to_table(
        "knowledge_sources", schema_name="agent",
        records=[
            (sid, organization_id, "upload", f"{title} {n}", f"k/{sid}", uuid.uuid4().hex + uuid.uuid4().hex,
             1, "ready", None)
            for n, sid in enumerate(source_ids)
        ],
        columns=["id", "organization_id", "kind", "title", "object_key", "content_sha256", "byte_size", "status",
                 "pending_since"],
    )  # fmt: skip
    return source_ids


async def _readiness(conn: asyncpg.Connection, source_ids: list[uuid.UUID], chunks_per_source: int) -> None:
    """The model's ready rows for `source_ids`, copied last: their insert trigger counts the chunks."""
    await conn.copy_records_to_table(
        "knowledge_source_models", schema_name="agent",
        records=[(sid, MODEL, "ready", chunks_per_source, chunks_per_source, None) for sid in source_ids],
        columns=["source_id", "embedding_model", "status", "chunk_count", "embedded_count", "pending_since"],
    )  # fmt: skip


async def seed_scope(
    conn: asyncpg.Connection,
    rng: np.random.Generator,
    vocabulary: Vocabulary,
    organization_id: uuid.UUID | None,
    *,
    sources: int,
    chunks_per_source: int,
    words: int,
    title: str,
    embed: Embed | None = None,
) -> int:
    """`sources` ready sources of `chunks_per_source` chunks of `words` words each. Returns the chunk count.

    Vectors come from `embed` over the chunk texts, or are seeded random unit vectors without it.
    """
    source_ids = await _ready_sources(conn, organization_id, sources=sources, title=title)
    total = sources * chunks_per_source
    batch = 20_000
    for start in range(0, total, batch):
        n = min(batch, total - start)
        texts = vocabulary.texts(rng, n, words)
        if embed is None:
            vectors = rng.standard_normal((n, DIMS)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        else:
            vectors = await embed(texts)
        records = []
        for i in range(n):
            k = start + i
            records.append(
                (source_ids[k // chunks_per_source], MODEL, k % chunks_per_source, texts[i], words + 20,
                 Vector(vectors[i]))
            )  # fmt: skip
        await conn.copy_records_to_table(
            "knowledge_chunks", schema_name="agent", records=records,
            columns=["source_id", "embedding_model", "ordinal", "text", "tokens", "embedding"],
        )  # fmt: skip
    await _readiness(conn, source_ids, chunks_per_source)
    return total


async def build_index(conn: asyncpg.Connection) -> float:
    """Build the model's HNSW index once, after the bulk load, then vacuum and analyze. Returns seconds.

    The whole database is vacuumed, as autovacuum's insert threshold would after a bulk load: without it the
    visibility map is empty, every index-only scan visits the heap, and the figures show a state that lasts
    only minutes in use.
    """
    started = time.perf_counter()
    await conn.execute("SET maintenance_work_mem = '512MB'")
    await conn.fetchval("SELECT agent.ensure_embedding_model_index($1)", MODEL)
    await conn.execute("VACUUM (ANALYZE)")
    return time.perf_counter() - started


async def drop_index(conn: asyncpg.Connection) -> None:
    index = await conn.fetchval("SELECT index_name FROM agent.embedding_models WHERE model_id = $1", MODEL)
    await conn.execute(f'DROP INDEX IF EXISTS agent."{index}"')


def queries(rng: np.random.Generator, vocabulary: Vocabulary, terms: int, n: int, *, common: bool = True) -> list[str]:
    """`n` queries of `terms` words: one common word (rank < 30) when `common`, the rest of rank 100..3000."""
    out = []
    for _ in range(n):
        rare = rng.integers(100, min(3000, len(vocabulary.words)), size=terms - (1 if common else 0))
        picked = ([int(rng.integers(0, 30))] if common else []) + [int(r) for r in rare]
        out.append(" ".join(vocabulary.words[picked]))
    return out


def summary(times_ms: list[float]) -> dict[str, float]:
    ordered = sorted(times_ms)

    def pct(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))], 2)

    return {"n": len(ordered), "median": pct(0.5), "p95": pct(0.95), "p99": pct(0.99), "max": round(ordered[-1], 2)}


def unit_vector(rng: np.random.Generator) -> Vector:
    v = rng.standard_normal(DIMS).astype(np.float32)
    return Vector(v / np.linalg.norm(v))


async def seed_repeats(
    conn: asyncpg.Connection,
    organization_id: uuid.UUID,
    texts: list[str],
    vectors: list[Vector],
    *,
    sources: int,
    chunks_per_source: int,
    title: str,
) -> int:
    """Ready sources whose chunks repeat `texts` (and their `vectors`) in turn: one tenant copying another's queries.

    Written into the live index, as a tenant's ingestion writes. Returns the chunk count.
    """
    source_ids = await _ready_sources(conn, organization_id, sources=sources, title=title)
    for s, sid in enumerate(source_ids):
        first = s * chunks_per_source
        await conn.copy_records_to_table(
            "knowledge_chunks", schema_name="agent",
            records=[(sid, MODEL, o, texts[(first + o) % len(texts)], 20, vectors[(first + o) % len(texts)])
                     for o in range(chunks_per_source)],
            columns=["source_id", "embedding_model", "ordinal", "text", "tokens", "embedding"],
        )  # fmt: skip
    await _readiness(conn, source_ids, chunks_per_source)
    return sources * chunks_per_source
