"""What the live HNSW index costs an ingest, against alternatives, and what each keeps of recall.

`python -m bench.hnsw_insert_cost [--documents N]`: the ingestion bench's small documents, chunked by the
project's chunker and embedded by WordLlama once, then the same vectors written in 1,000-row batches
(`INSERT ... SELECT unnest`, as the bulk core's merge writes them) into a fresh table under each variant,
in turn, on one embedded server:

- `none`: no vector index (the floor: what the vectors alone cost);
- `hnsw_m16_ef64`: the project's index (cosine, pgvector's defaults m = 16, ef_construction = 64);
- `hnsw_m16_ef32`, `hnsw_m8_ef32`: cheaper graphs;
- `halfvec_m16_ef64`: the same graph over half-precision copies (an expression index, as the project's
  per-model index is an expression index).

Recall@32 of each index against the exact answer, over 100 of the chunks' own texts as queries (ef_search
200, as the search sets it). Writes seconds, vectors/s and recall per variant as JSON on stdout. Not part
of `make bench` (its result is one input to a decision, docs/decisions.md, issue 24). Nothing asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

from bench.bench_ingest import small_documents
from knowledge.documents.chunk import chunk_text
from knowledge.embedding.registry import WordLlamaEmbedder
from state.embedded import embedded_server_url, server_dsn, stop_embedded_server

VARIANTS: dict[str, str | None] = {
    "none": None,
    "hnsw_m16_ef64": "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)",
    "hnsw_m16_ef32": "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 32)",
    "hnsw_m8_ef32": "USING hnsw (embedding vector_cosine_ops) WITH (m = 8, ef_construction = 32)",
    "halfvec_m16_ef64": "USING hnsw ((embedding::halfvec(256)) halfvec_cosine_ops) WITH (m = 16, ef_construction = 64)",
}
BATCH = 1_000
QUERIES = 100
K = 32


def _vectors(documents: int, folder: Path) -> np.ndarray:
    texts = [c.text for path in small_documents(folder, count=documents) for c in chunk_text(path.read_text())]
    return np.asarray(WordLlamaEmbedder._embed_blocking(texts), dtype=np.float32)


async def _variant(conn: asyncpg.Connection, name: str, index: str | None, vectors: np.ndarray) -> dict[str, Any]:
    table = f"v_{name}"
    await conn.execute(
        f"DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id bigint PRIMARY KEY, embedding vector(256))"
    )
    if index:
        await conn.execute(f"CREATE INDEX ON {table} {index}")
    texts = ["[" + ",".join(f"{x:.7g}" for x in row) + "]" for row in vectors]  # before the clock
    started = time.perf_counter()
    for start in range(0, len(vectors), BATCH):
        part = texts[start : start + BATCH]
        await conn.execute(
            f"INSERT INTO {table} SELECT * FROM unnest($1::bigint[], $2::text[]::vector[])",
            list(range(start, start + len(part))), part,
        )  # fmt: skip
    seconds = time.perf_counter() - started
    out: dict[str, Any] = {"seconds": round(seconds, 3), "vectors_per_s": round(len(vectors) / seconds, 1)}
    if index:
        order = "embedding::halfvec(256) <=> $1::halfvec(256)" if "halfvec" in index else "embedding <=> $1"
        rng = np.random.default_rng(7)
        recalls = []
        async with conn.transaction():
            await conn.execute("SET LOCAL hnsw.ef_search = 200")
            for q in rng.choice(len(vectors), QUERIES, replace=False):
                walk = await conn.fetch(f"SELECT id FROM {table} ORDER BY {order} LIMIT {K}", vectors[q])
                await conn.execute("SET LOCAL enable_indexscan = off")
                exact = await conn.fetch(f"SELECT id FROM {table} ORDER BY embedding <=> $1 LIMIT {K}", vectors[q])
                await conn.execute("SET LOCAL enable_indexscan = on")
                recalls.append(len({r["id"] for r in walk} & {r["id"] for r in exact}) / K)
        out["recall@32"] = round(float(np.mean(recalls)), 3)
    await conn.execute(f"DROP TABLE {table}")
    return out


async def _run(documents: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ac-hnsw-") as tmp_name:
        tmp = Path(tmp_name)
        vectors = _vectors(documents, tmp / "small")
        server = embedded_server_url(tmp / "pg")
        try:
            admin = await asyncpg.connect(server)
            await admin.execute("CREATE DATABASE hnsw_cost")
            await admin.close()
            conn = await asyncpg.connect(server_dsn(server, "hnsw_cost"))
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            await register_vector(conn)
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
            for _ in range(rounds):  # the variants in turn, so a drift of the machine spreads over all of them
                for name, index in VARIANTS.items():
                    runs[name].append(await _variant(conn, name, index, vectors))
            await conn.close()
        finally:
            stop_embedded_server(tmp / "pg")
    result: dict[str, Any] = {"documents": documents, "vectors": len(vectors), "rounds": rounds}
    for name, figures in runs.items():
        seconds = float(np.median([f["seconds"] for f in figures]))
        result[name] = {"median_seconds": round(seconds, 3), "runs": figures}
    floor = result["none"]["median_seconds"]
    for name in VARIANTS:
        result[name]["times_the_floor"] = round(result[name]["median_seconds"] / floor, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(_run(args.documents, args.rounds)), indent=2))


if __name__ == "__main__":
    main()
