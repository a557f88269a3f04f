"""Knowledge benchmarks: ingestion throughput, search latency at 100,000 chunks, retrieval quality on Cranfield.

`run()` starts its own embedded PostgreSQL in a temporary folder (or uses DATABASE_URL's server), builds a
fresh database from the migrations, and returns a JSON-able dict:

- ingestion: the GeoTopo 117-page PDF and the 98 FastAPI Markdown pages through the real steps
  (prepare_chunks, embed_batch, mark_ready) with WordLlama, seconds and rates split by extract, chunk,
  embed and insert;
- search_latency: 100,000 synthetic chunks (random unit vectors, random vocabulary text) across 100 tenants,
  loaded with COPY, queried through knowledge_search as the tenant (row-level security on): median and
  95th percentile;
- cranfield: nDCG@10 and recall@100 for dense only, lexical only and hybrid (several fusion weights), and
  the lexical variants that chose the full-text configuration.

Nothing here asserts a timing.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from pgvector import Vector

from knowledge.embed import get_embedder
from knowledge.ingest import ReadyCheck, embed_batch, mark_ready, prepare_chunks, register_upload
from knowledge.objects import LocalObjectStore
from state.db import Database
from state.embedded import embedded_server_url, server_dsn, stop_embedded_server
from state.migrate import apply_migrations
from state.settings import load_settings

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
GEOTOPO = CORPUS / "pdf" / "py-pdf-sample-files" / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"
FASTAPI = CORPUS / "markdown" / "fastapi-docs"
MODEL = "local/wordllama-l2-supercat-256"
DIMS = 256


def run() -> dict[str, Any]:
    return asyncio.run(_run())


async def _run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ac-bench-knowledge-") as tmp:
        external = os.environ.get("DATABASE_URL")
        server = external or embedded_server_url(Path(tmp))
        name = f"ac_bench_knowledge_{uuid.uuid4().hex[:8]}"
        admin = await asyncpg.connect(server)
        await admin.execute(f'CREATE DATABASE "{name}"')
        url = server_dsn(server, name)
        try:
            await apply_migrations(url)
            db = await Database.open(load_settings(pool_min_size=1, pool_max_size=8), url=url, migrate=False)
            try:
                store = LocalObjectStore(Path(tmp) / "objects")
                result: dict[str, Any] = {"model": MODEL}
                result["ingestion"] = _report("ingestion", await _ingestion(db, store))
                result["cranfield"] = _report("cranfield", await _cranfield(db, store, CORPUS / "ir" / "cranfield"))
                result["search_latency"] = _report("search_latency", await _latency(db))
                return result
            finally:
                await db.close()
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await admin.close()
            if not external:
                stop_embedded_server(Path(tmp))


async def _ingest_one(db: Database, store: LocalObjectStore, data: bytes, filename: str) -> dict[str, float]:
    registered = await register_upload(db, store, organization_id=None, data=data, filename=filename)
    prepared = await prepare_chunks(db, store, registered.source_id, MODEL)
    embedder = get_embedder(MODEL)
    embed_s = store_s = 0.0
    while True:
        batch = await embed_batch(db, registered.source_id, embedder)
        embed_s += batch.embed_s
        store_s += batch.store_s
        if batch.embedded == 0 or batch.remaining == 0:
            break
    started = time.perf_counter()
    check: ReadyCheck = await mark_ready(db, registered.source_id, MODEL)
    assert check.ready, f"{filename} did not become ready"
    return {
        "chunks": prepared.chunk_count,
        "extract_s": prepared.extract_s,
        "chunk_s": prepared.chunk_s,
        "embed_s": embed_s,
        "insert_s": prepared.insert_s + store_s + (time.perf_counter() - started),
    }


def _rates(parts: list[dict[str, float]], pages: int) -> dict[str, Any]:
    total = {key: sum(p[key] for p in parts) for key in ("chunks", "extract_s", "chunk_s", "embed_s", "insert_s")}
    chunks = int(total["chunks"])
    seconds = sum(total[k] for k in ("extract_s", "chunk_s", "embed_s", "insert_s"))
    return {
        "documents": len(parts),
        "pages": pages,
        "chunks": chunks,
        "seconds": {k.removesuffix("_s"): round(v, 3) for k, v in total.items() if k.endswith("_s")},
        "seconds_total": round(seconds, 3),
        "pages_per_s_extract": round(pages / total["extract_s"], 1),
        "chunks_per_s_chunk": round(chunks / total["chunk_s"], 1),
        "chunks_per_s_embed": round(chunks / total["embed_s"], 1),
        "chunks_per_s_insert": round(chunks / total["insert_s"], 1),
        "pages_per_s_overall": round(pages / seconds, 2),
        "chunks_per_s_overall": round(chunks / seconds, 1),
    }


async def _ingestion(db: Database, store: LocalObjectStore) -> dict[str, Any]:
    started = time.perf_counter()
    await get_embedder(MODEL).embed(["warm up"])  # the one-off model load is reported apart
    load_s = time.perf_counter() - started
    geotopo = [await _ingest_one(db, store, GEOTOPO.read_bytes(), GEOTOPO.name)]
    pages = sorted(FASTAPI.rglob("*.md"))
    fastapi = [await _ingest_one(db, store, p.read_bytes(), str(p.relative_to(FASTAPI))) for p in pages]
    return {
        "wordllama_load_s": round(load_s, 3),
        "geotopo_pdf": _rates(geotopo, 117),
        "fastapi_markdown": {**_rates(fastapi, len(pages)), "bytes": sum(p.stat().st_size for p in pages)},
        "note": "a Markdown file counts as one page; insert = chunk rows + vectors + the ready check",
    }


async def _latency(db: Database, *, tenants: int = 100, sources: int = 10, per_source: int = 100) -> dict[str, Any]:
    load = await _load_synthetic(db, tenants=tenants, sources=sources, per_source=per_source)
    rng = np.random.default_rng(7)
    vocabulary = load["vocabulary"]
    orgs = load["organizations"]
    call = "SELECT * FROM knowledge_search($1, $2, $3, false, true, 8, $4)"

    def query() -> tuple[uuid.UUID, Vector, str]:
        vector = rng.standard_normal(DIMS).astype(np.float32)
        text = " ".join(rng.choice(vocabulary, 4))
        return orgs[int(rng.integers(len(orgs)))], Vector(vector / np.linalg.norm(vector)), text

    async def once(role: str) -> tuple[float, int]:
        org, vector, text = query()
        started = time.perf_counter()
        if role == "tenant":
            async with db.tenant(org) as conn:
                rows = await conn.fetch(call, org, vector, text, MODEL)
        else:
            async with db.connection() as conn:
                rows = await conn.fetch(call, org, vector, text, MODEL)
        return (time.perf_counter() - started) * 1000, len(rows)

    for _ in range(40):  # warm the caches and every pooled connection's plans
        await once("tenant")
        await once("service")
    measured: dict[str, list[tuple[float, int]]] = {"tenant": [], "service": []}
    for i in range(300):  # interleaved, so neither role profits from the other's warm-up
        for role in ("tenant", "service") if i % 2 else ("service", "tenant"):
            measured[role].append(await once(role))

    def summary(role: str) -> dict[str, Any]:
        times, counts = zip(*measured[role], strict=True)
        return _summary(list(times)) | {"mean_hits_of_8": round(statistics.fmean(counts), 2)}

    tenant, service = summary("tenant"), summary("service")
    embedder = get_embedder(MODEL)
    embed_times = []
    for _ in range(100):
        started = time.perf_counter()
        await embedder.embed([" ".join(rng.choice(vocabulary, 8))])
        embed_times.append((time.perf_counter() - started) * 1000)
    return {
        **{k: v for k, v in load.items() if k not in ("vocabulary", "organizations")},
        "knowledge_search_as_tenant_ms": tenant,
        "knowledge_search_as_service_ms": service,
        "wordllama_query_embed_ms": _summary(embed_times),
    }


def _report(section: str, values: dict[str, Any]) -> dict[str, Any]:
    """Print a finished section at once (the whole run takes minutes)."""
    print(f"-- {section}: {json.dumps(values, default=str)}", file=sys.stderr, flush=True)
    return values


def _summary(times_ms: list[float]) -> dict[str, float]:
    ordered = sorted(times_ms)
    return {
        "n": len(ordered),
        "median": round(statistics.median(ordered), 2),
        "p95": round(ordered[max(0, int(len(ordered) * 0.95) - 1)], 2),
        "max": round(ordered[-1], 2),
    }


# --- search latency: synthetic chunks ----------------------------------------------------------------


async def _load_synthetic(db: Database, *, tenants: int, sources: int, per_source: int) -> dict[str, Any]:
    """COPY tenants x sources x per_source ready chunks with random unit vectors, then build the index."""
    rng = np.random.default_rng(42)
    words = (CORPUS / "ir" / "cranfield" / "cran.all.1400").read_text().split()
    vocabulary = np.array(sorted({w for w in words if w.isalpha() and len(w) > 3}))
    orgs = [uuid.uuid4() for _ in range(tenants)]
    source_rows, model_rows = [], []
    for org in orgs:
        for s in range(sources):
            sid = uuid.uuid4()
            digest = f"{uuid.uuid4().hex}{uuid.uuid4().hex}"
            source_rows.append((sid, org, "upload", f"synthetic {s}", f"k/{sid}", digest, 1, "ready", None))
            model_rows.append((sid, MODEL, "ready", per_source, per_source, None))
    started = time.perf_counter()
    async with db.connection() as conn:
        index = await conn.fetchval("SELECT index_name FROM agent.embedding_models WHERE model_id = $1", MODEL)
        await conn.execute(f'DROP INDEX IF EXISTS agent."{index}"')  # bulk load first, build once after
        await conn.copy_records_to_table(
            "organizations", schema_name="public", records=[(o, f"tenant {i}") for i, o in enumerate(orgs)],
            columns=["id", "name"],
        )  # fmt: skip
        await conn.copy_records_to_table(
            "knowledge_sources", schema_name="agent", records=source_rows,
            columns=["id", "organization_id", "kind", "title", "object_key", "content_sha256", "byte_size",
                     "status", "pending_since"],
        )  # fmt: skip
        await conn.copy_records_to_table(
            "knowledge_source_models", schema_name="agent", records=model_rows,
            columns=["source_id", "embedding_model", "status", "chunk_count", "embedded_count", "pending_since"],
        )  # fmt: skip
        batch: list[tuple[Any, ...]] = []
        for sid, *_ in source_rows:
            vectors = rng.standard_normal((per_source, DIMS)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            for ordinal in range(per_source):
                text = " ".join(rng.choice(vocabulary, 40))
                batch.append((sid, MODEL, ordinal, text, 60, Vector(vectors[ordinal])))
            if len(batch) >= 10_000:
                await conn.copy_records_to_table(
                    "knowledge_chunks", schema_name="agent", records=batch,
                    columns=["source_id", "embedding_model", "ordinal", "text", "tokens", "embedding"],
                )  # fmt: skip
                batch = []
        if batch:
            await conn.copy_records_to_table(
                "knowledge_chunks", schema_name="agent", records=batch,
                columns=["source_id", "embedding_model", "ordinal", "text", "tokens", "embedding"],
            )  # fmt: skip
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        await conn.execute("SET maintenance_work_mem = '512MB'")
        await conn.execute("SET max_parallel_maintenance_workers = 1")
        await conn.fetchval("SELECT agent.ensure_embedding_model_index($1)", MODEL)
        index_s = time.perf_counter() - started
        await conn.execute("VACUUM (ANALYZE) agent.knowledge_chunks")
        await conn.execute("ANALYZE")
        total = await conn.fetchval(
            "SELECT count(*) FROM agent.knowledge_chunks WHERE source_id IN "
            "(SELECT id FROM agent.knowledge_sources WHERE title LIKE 'synthetic%')"
        )
    return {
        "chunks": total,
        "tenants": tenants,
        "chunks_per_tenant": sources * per_source,
        "copy_load_s": round(load_s, 2),
        "hnsw_build_s": round(index_s, 2),
        "vocabulary": vocabulary,
        "organizations": orgs,
    }


# --- retrieval quality: Cranfield ---------------------------------------------------------------------


def _parse_cranfield(path: Path) -> list[tuple[int, str]]:
    """`.I` records with their `.W` text, in file order."""
    records: list[tuple[int, str]] = []
    number, field, lines = None, None, []
    for line in [*path.read_text().splitlines(), ".I 0"]:
        if line.startswith(".I "):
            if number is not None:
                records.append((number, " ".join(lines).strip()))
            number, field, lines = int(line.split()[1]), None, []
        elif line[:2] in (".T", ".A", ".B", ".W") and len(line.strip()) == 2:
            field = line[:2]
        elif field == ".W":
            lines.append(line.strip())
    return records


def _qrels(path: Path) -> dict[int, dict[int, int]]:
    """Query position -> {document: gain}; Cleverdon's codes 1 (complete answer) .. 4 become gains 4 .. 1."""
    judged: dict[int, dict[int, int]] = {}
    for line in path.read_text().splitlines():
        query, doc, code = (int(x) for x in line.split())
        if 1 <= code <= 4:
            judged.setdefault(query, {})[doc] = 5 - code
    return judged


def _ndcg_at_10(ranking: list[int], gains: dict[int, int]) -> float:
    dcg = sum(gains.get(doc, 0) / np.log2(i + 2) for i, doc in enumerate(ranking[:10]))
    ideal = sum(g / np.log2(i + 2) for i, g in enumerate(sorted(gains.values(), reverse=True)[:10]))
    return float(dcg / ideal) if ideal else 0.0


def _recall_at_100(ranking: list[int], gains: dict[int, int]) -> float:
    return len(set(ranking[:100]) & set(gains)) / len(gains)


async def _cranfield(db: Database, store: LocalObjectStore, folder: Path) -> dict[str, Any]:
    from knowledge._pipeline import build_source_model
    from knowledge.search import Fusion, search

    parsed = _parse_cranfield(folder / "cran.all.1400")
    docs = [(n, t) for n, t in parsed if t.strip()]  # two abstracts of the collection are empty
    queries = [text for _, text in _parse_cranfield(folder / "cran.qry")]
    judged = _qrels(folder / "cranqrel")
    org = uuid.uuid4()
    async with db.connection() as conn:
        await conn.execute("INSERT INTO public.organizations (id, name) VALUES ($1, 'cranfield')", org)
    embedder = get_embedder(MODEL)
    doc_of: dict[uuid.UUID, int] = {}
    gate = asyncio.Semaphore(6)

    async def ingest(number: int, text: str) -> None:
        async with gate:
            reg = await register_upload(
                db, store, organization_id=org, data=text.encode(), filename=f"cran-{number}.txt",
                title=f"cran {number}", media_type="text/plain",
            )  # fmt: skip
            await build_source_model(db, store, reg.source_id, embedder)
            doc_of[reg.source_id] = number

    started = time.perf_counter()
    await asyncio.gather(*(ingest(n, t) for n, t in docs))
    ingest_s = time.perf_counter() - started
    async with db.connection() as conn:
        chunks = await conn.fetchval(
            "SELECT count(*) FROM agent.knowledge_chunks c JOIN agent.knowledge_sources s ON s.id = c.source_id "
            "WHERE s.organization_id = $1",
            org,
        )

    evaluated = [(i + 1, q) for i, q in enumerate(queries) if judged.get(i + 1)]

    def score(rankings: dict[int, list[int]]) -> dict[str, float]:
        ndcg = [_ndcg_at_10(rankings[p], judged[p]) for p, _ in evaluated]
        recall = [_recall_at_100(rankings[p], judged[p]) for p, _ in evaluated]
        return {"ndcg@10": round(statistics.fmean(ndcg), 4), "recall@100": round(statistics.fmean(recall), 4)}

    async def rank_with(fusion: Fusion) -> dict[str, float]:
        rankings: dict[int, list[int]] = {}
        for position, text in evaluated:
            hits = await search(db, org, text, include_organization=True, limit=300, fusion=fusion)
            rankings[position] = list(dict.fromkeys(doc_of[h.source_id] for h in hits))
        return score(rankings)

    configs = {
        "dense_only": Fusion(dense=1.0, lexical=0.0, candidates=300),
        "lexical_only": Fusion(dense=0.0, lexical=1.0, candidates=300),
        "hybrid_w1_1_k60": Fusion(dense=1.0, lexical=1.0, k=60, candidates=300),
        "hybrid_w1_0.5_k60": Fusion(dense=1.0, lexical=0.5, k=60, candidates=300),
        "hybrid_w0.5_1_k60": Fusion(dense=0.5, lexical=1.0, k=60, candidates=300),
        "hybrid_w1_1_k20": Fusion(dense=1.0, lexical=1.0, k=20, candidates=300),
    }
    quality = {name: await rank_with(fusion) for name, fusion in configs.items()}
    return {
        "documents": len(docs),
        "empty_documents_skipped": len(parsed) - len(docs),
        "chunks": chunks,
        "queries_evaluated": len(evaluated),
        "ingest_s": round(ingest_s, 2),
        "relevance": "qrels codes 1..4 are relevant with gains 4..1 (code 1 = complete answer); -1 is not relevant",
        "quality": quality,
        "lexical_variants": await _lexical_variants(db, org, evaluated, doc_of, score),
    }


async def _lexical_variants(
    db: Database, org: uuid.UUID, evaluated: list[tuple[int, str]], doc_of: dict[uuid.UUID, int], score: Any
) -> dict[str, dict[str, float]]:
    """The full-text choices the schema fixed, measured: english vs simple, ts_rank vs ts_rank_cd, OR vs AND."""
    async with db.connection() as conn:
        await conn.execute(
            "CREATE TEMP TABLE bench_simple AS SELECT c.id, c.source_id, to_tsvector('simple', c.text) AS fts "
            "FROM agent.knowledge_chunks c JOIN agent.knowledge_sources s ON s.id = c.source_id "
            "WHERE s.organization_id = $1",
            org,
        )
        await conn.execute(
            "CREATE TEMP TABLE bench_english AS SELECT c.id, c.source_id, c.fts FROM "
            "agent.knowledge_chunks c JOIN bench_simple b ON b.id = c.id"
        )
        variants = {
            "english_ts_rank (shipped)": ("bench_english", "english", "ts_rank(t.fts, q.q)"),
            "english_ts_rank_cd": ("bench_english", "english", "ts_rank_cd(t.fts, q.q)"),
            "english_ts_rank_length_normalised": ("bench_english", "english", "ts_rank(t.fts, q.q, 1)"),
            "simple_ts_rank": ("bench_simple", "simple", "ts_rank(t.fts, q.q)"),
            "websearch_to_tsquery_english_all_terms": ("bench_english", "english", "ts_rank(t.fts, q.q)"),
        }
        result = {}
        for name, (table, config, rank) in variants.items():
            terms = (
                f"SELECT websearch_to_tsquery('{config}', $1) AS q"
                if name.startswith("websearch")
                else f"SELECT agent.tsquery_or_agg(plainto_tsquery('simple', lexeme)) AS q "
                f"FROM unnest(tsvector_to_array(to_tsvector('{config}', $1))) AS lexeme"
            )
            sql = (
                f"WITH q AS ({terms}) SELECT t.source_id FROM {table} t, q WHERE t.fts @@ q.q "
                f"ORDER BY {rank} DESC, t.id LIMIT 300"
            )
            rankings = {}
            for position, text in evaluated:
                rows = await conn.fetch(sql, text)
                rankings[position] = list(dict.fromkeys(doc_of[r["source_id"]] for r in rows))
            result[name] = score(rankings)
    return result
