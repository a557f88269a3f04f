"""The relevance floor and the halves on three judged sets (issue 37): Cranfield, long documents, dialogues.

Per set, a document ranked by its best chunk, through `knowledge.search.search` (WordLlama, the real
ingestion pipeline): recall@8, recall@50 and nDCG@10 for hybrid, dense alone and lexical alone, each
unfiltered (no floor, no cap), under 0093's floor (0.3 alone), under the floor that also keeps either
half's top 8, under the default and as the product searches (the default floor and the per-source cap). Beside them, the
mean hits of 8 each floor leaves for queries nothing in the set answers (the CRM queries of
`bench/_search_quality.py` on every set; the dialogue set's own unanswerable questions), and a sweep of
the floor's two settings (the top kept, the lower floor's share) on hybrid. The dense walk's recall@10
against the exact scan is measured on the same real text (`dense_walk_recall`).
"""

from __future__ import annotations

import statistics
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from pgvector import Vector

from bench import _dialog_set
from bench._search_quality import OFF_TOPIC, _Collection, _cranfield, _ingest, _long_documents
from bench._search_seed import MODEL
from knowledge.documents.objects import LocalObjectStore
from knowledge.embedding.registry import get_embedder
from knowledge.search import DEFAULT_FUSION, DEFAULT_KEEP_TOP, DEFAULT_MIN_RELEVANCE, KEEP_FLOOR_SHARE, Fusion, search
from state.db import Database

HALVES = {
    "hybrid": replace(DEFAULT_FUSION, candidates=100),
    "dense_only": Fusion(dense=1.0, lexical=0.0, candidates=100),
    "lexical_only": Fusion(dense=0.0, lexical=1.0, candidates=100),
}


@dataclass(frozen=True)
class Floor:
    """One floor setting of a measured search."""

    min_relevance: float
    keep_top: int
    keep_floor: float | None = None
    per_source: int | None = None


FLOORS = {
    "unfiltered": Floor(0.0, 0),
    "floor_0093": Floor(DEFAULT_MIN_RELEVANCE, 0),
    "floor_keep_top_8": Floor(DEFAULT_MIN_RELEVANCE, 8),
    "floor_default": Floor(DEFAULT_MIN_RELEVANCE, DEFAULT_KEEP_TOP),
    "product_floor_and_cap": Floor(DEFAULT_MIN_RELEVANCE, DEFAULT_KEEP_TOP, per_source=3),
}
"""0093's floor alone; the floor that also keeps either half's top 8 above the lower floor; today's default
(DEFAULT_KEEP_TOP, measured: 0, so it is 0093's); and the product's search (the default floor and cap)."""
SWEEP = [(top, share) for top in (8, 16) for share in (0.5, 0.67, 0.83)]


def _recall(ranking: list[Any], gains: dict[Any, int], k: int) -> float:
    return len(set(ranking[:k]) & set(gains)) / len(gains)


def _ndcg10(ranking: list[Any], gains: dict[Any, int]) -> float:
    dcg = sum(gains.get(doc, 0) / np.log2(i + 2) for i, doc in enumerate(ranking[:10]))
    ideal = sum(g / np.log2(i + 2) for i, g in enumerate(sorted(gains.values(), reverse=True)[:10]))
    return float(dcg / ideal) if ideal else 0.0


async def _rank(db: Database, c: _Collection, fusion: Fusion, floor: Floor) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for position, text in c.evaluated:
        hits = await search(db, c.org, text, include_organization=True, limit=100, fusion=fusion,
                            min_relevance=floor.min_relevance, keep_top=floor.keep_top, keep_floor=floor.keep_floor,
                            per_source=floor.per_source)  # fmt: skip
        out[position] = list(dict.fromkeys(c.doc_of[h.source_id] for h in hits))
    return out


def _score(c: _Collection, rankings: dict[int, list[Any]]) -> dict[str, float]:
    judged = [(rankings[p], c.judged[p]) for p, _ in c.evaluated]
    return {
        "recall@8": round(statistics.fmean(_recall(r, g, 8) for r, g in judged), 4),
        "recall@50": round(statistics.fmean(_recall(r, g, 50) for r, g in judged), 4),
        "ndcg@10": round(statistics.fmean(_ndcg10(r, g) for r, g in judged), 4),
    }


async def _unanswered(db: Database, c: _Collection, queries: list[str], floor: Floor) -> float:
    """Mean hits of 8 the product's search returns for queries nothing in the set answers."""
    counts = [
        len(await search(db, c.org, q, include_organization=True, limit=8, min_relevance=floor.min_relevance,
                         keep_top=floor.keep_top, keep_floor=floor.keep_floor, per_source=floor.per_source))
        for q in queries
    ]  # fmt: skip
    return round(statistics.fmean(counts), 2)


async def dialogues(db: Database, store: LocalObjectStore) -> tuple[_Collection, list[str]]:
    """The committed conversational set (bench/dialog_set.json), one turn per document, in one organization."""
    data = _dialog_set.load()
    documents = [(t["id"], f"{t['id']}.txt", t["text"].encode(), "text/plain") for t in data["turns"]]
    org, doc_of, ingest_s = await _ingest(db, store, "dialogues", documents)
    questions = data["questions"]
    evaluated = [(i + 1, q["question"]) for i, q in enumerate(questions)]
    judged = {i + 1: dict.fromkeys(q["turns"], 1) for i, q in enumerate(questions)}
    collection = _Collection(org, doc_of, evaluated, judged, ingest_s)
    collection.kinds = {i + 1: q["kind"] for i, q in enumerate(questions)}  # type: ignore[attr-defined]
    return collection, list(data["unanswerable"])


async def measure_set(db: Database, c: _Collection, unanswerable: list[str], *, sweep: bool) -> dict[str, Any]:
    """One set's figures: each half under each floor, the unanswerable queries' hits, the sweep."""
    out: dict[str, Any] = {"documents": len(c.doc_of), "queries": len(c.evaluated), "ingest_s": round(c.ingest_s, 1)}
    started = time.perf_counter()
    for half, fusion in HALVES.items():
        out[half] = {}
        for name, floor in FLOORS.items():
            rankings = await _rank(db, c, fusion, floor)
            out[half][name] = _score(c, rankings)
            kinds = getattr(c, "kinds", None)
            if kinds and half == "hybrid":
                out[half][name]["recall@8_by_kind"] = {
                    kind: round(statistics.fmean(_recall(rankings[p], c.judged[p], 8) for p, _ in c.evaluated
                                                 if kinds[p] == kind), 4)
                    for kind in sorted(set(kinds.values()))
                }  # fmt: skip
    out["unanswerable_mean_hits_of_8"] = {
        name: {"crm_queries": await _unanswered(db, c, OFF_TOPIC, floor)}
        | ({"own_questions": await _unanswered(db, c, unanswerable, floor)} if unanswerable else {})
        for name, floor in FLOORS.items()
    }
    if sweep:
        out["sweep_hybrid"] = {}
        for top, share in SWEEP:
            floor = Floor(DEFAULT_MIN_RELEVANCE, top, round(share * DEFAULT_MIN_RELEVANCE, 4))
            figures = _score(c, await _rank(db, c, HALVES["hybrid"], floor))
            figures["crm_queries_mean_hits"] = await _unanswered(db, c, OFF_TOPIC, floor)
            if unanswerable:
                figures["own_unanswerable_mean_hits"] = await _unanswered(db, c, unanswerable, floor)
            out["sweep_hybrid"][f"top_{top}_share_{share}"] = figures
    out["s"] = round(time.perf_counter() - started, 1)
    return out


FUSIONS = {
    "convex_dense_0.3": replace(DEFAULT_FUSION, candidates=100),
    "convex_dense_0.5": replace(DEFAULT_FUSION, dense=0.5, lexical=0.5, candidates=100),
    "convex_dense_0.7": replace(DEFAULT_FUSION, dense=0.7, lexical=0.3, candidates=100),
    "rrf_1_1_k60": replace(DEFAULT_FUSION, dense=1.0, lexical=1.0, method="rrf", candidates=100),
}
"""The fusions the sweep measures unfiltered: today's convex 0.3 / 0.7, more dense weight, and RRF."""


async def fusion_sweep(db: Database, c: _Collection) -> dict[str, Any]:
    """Per fusion, one set's figures with no floor and no cap (whether hybrid can beat its better half)."""
    return {name: _score(c, await _rank(db, c, fusion, FLOORS["unfiltered"])) for name, fusion in FUSIONS.items()}


async def dense_walk_recall(db: Database, c: _Collection, *, k: int = 10) -> dict[str, Any]:
    """The HNSW walk's recall@k against the exact scan of the same scope, per hnsw.ef_search (real text)."""
    texts = [t for _, t in c.evaluated][:200]
    vectors = [Vector(v) for v in await get_embedder(MODEL).embed(texts)]
    sql = (
        "SELECT chunk_id FROM public.knowledge_search($1, $2, '', false, true, $5, p_exact_below => $3, "
        "p_ef_search => $4, p_lexical_weight => 0, p_dense_weight => 1)"
    )
    async with db.tenant(c.org) as conn:
        exact = [{r["chunk_id"] for r in await conn.fetch(sql, c.org, v, 10**9, None, k)} for v in vectors]
        chunks = await conn.fetchval(
            "SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = ANY ($1::uuid[])", list(c.doc_of)
        )
    out: dict[str, Any] = {"scope_chunks": chunks, "queries": len(texts)}
    for ef in (40, 80, 200):
        recalls, times = [], []
        for v, truth in zip(vectors, exact, strict=True):
            started = time.perf_counter()
            async with db.tenant(c.org) as conn:
                got = {r["chunk_id"] for r in await conn.fetch(sql, c.org, v, 0, ef, k)}
            times.append((time.perf_counter() - started) * 1000)
            recalls.append(len(got & truth) / max(len(truth), 1))
        out[f"ef_{ef}"] = {
            f"recall@{k}": round(float(np.mean(recalls)), 3),
            "median_ms": round(float(np.median(times)), 2),
        }
    return out


async def floor_quality(db: Database, store: LocalObjectStore, *, sweep: bool = True) -> dict[str, Any]:
    """Every set's figures, the dense walk's recall on the real text, and the goal rows."""
    dialog, unanswerable = await dialogues(db, store)
    cranfield, _ = await _cranfield(db, store)
    long = await _long_documents(db, store)
    sets = {"dialogues": (dialog, unanswerable), "cranfield": (cranfield, []), "long_documents": (long, [])}
    out: dict[str, Any] = {"keep_top": DEFAULT_KEEP_TOP, "keep_floor_share": KEEP_FLOOR_SHARE, "sets": {}}
    for name, (collection, own) in sets.items():
        out["sets"][name] = await measure_set(db, collection, own, sweep=sweep)
    out["dense_walk_recall"] = {name: await dense_walk_recall(db, c) for name, (c, _) in sets.items()}
    out["goal_report"] = floor_goals(out)
    return out


def floor_goals(out: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 37's retrieval goals beside this run's figures."""
    from bench._goals import goal

    rows = []
    for name, s in out["sets"].items():
        h = s["hybrid"]
        cost = round(h["unfiltered"]["recall@8"] - h["floor_default"]["recall@8"], 4)
        before = round(h["unfiltered"]["recall@8"] - h["floor_0093"]["recall@8"], 4)
        kept = round(h["unfiltered"]["recall@8"] - h["floor_keep_top_8"]["recall@8"], 4)
        rows.append(goal(f"{name}: recall@8 the floor costs (unfiltered - default floor)", cost, at_most=0.01,
                         note=f"0093's floor {before}; keeping either half's top 8 {kept}"))  # fmt: skip
        hits = s["unanswerable_mean_hits_of_8"]
        for kind in hits["floor_0093"]:
            top8 = hits["floor_keep_top_8"][kind]
            rows.append(goal(f"{name}: unanswerable {kind.replace('_', ' ')}, mean hits of 8 (default floor)",
                             hits["floor_default"][kind], at_most=hits["floor_0093"][kind],
                             note=f"bound: 0093's floor; either half's top 8 kept: {top8}"))  # fmt: skip
        best_half = max(s["dense_only"]["unfiltered"]["ndcg@10"], s["lexical_only"]["unfiltered"]["ndcg@10"])
        rows.append(goal(f"{name}: hybrid nDCG@10 >= better half + 0.01 (unfiltered)",
                         h["unfiltered"]["ndcg@10"], at_least=round(best_half + 0.01, 4),
                         note=f"dense {s['dense_only']['unfiltered']['ndcg@10']}, "
                              f"lexical {s['lexical_only']['unfiltered']['ndcg@10']}"))  # fmt: skip
    for name, walk in out.get("dense_walk_recall", {}).items():
        rows.append(goal(f"{name}: HNSW walk recall@10 of the exact scan at ef_search 80", walk["ef_80"]["recall@10"],
                         at_least=0.95, note=f"{walk['scope_chunks']} chunks in the scope"))  # fmt: skip
    return rows


def main() -> None:
    """`python -m bench._floor_quality [--no-sweep] [--dialogues-only [--fusion-sweep]]` on its own server."""
    import asyncio
    import json
    import os
    import sys
    import tempfile

    import asyncpg

    from state.embedded import embedded_server_url, server_dsn, stop_embedded_server
    from state.migrate import apply_migrations
    from state.settings import load_settings

    async def run() -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="ac-bench-floor-") as tmp:
            external = os.environ.get("DATABASE_URL")
            server = external or embedded_server_url(Path(tmp))
            name = f"ac_bench_floor_{uuid.uuid4().hex[:8]}"
            admin = await asyncpg.connect(server)
            await admin.execute(f'CREATE DATABASE "{name}"')
            url = server_dsn(server, name)
            try:
                await apply_migrations(url)
                db = await Database.open(load_settings(pool_min_size=2, pool_max_size=8), url=url, migrate=False)
                try:
                    store = LocalObjectStore(Path(tmp) / "objects")
                    if "--dialogues-only" in sys.argv:
                        c, own = await dialogues(db, store)
                        if "--fusion-sweep" in sys.argv:
                            return {"dialogues": await fusion_sweep(db, c), "walk": await dense_walk_recall(db, c)}
                        return await measure_set(db, c, own, sweep="--no-sweep" not in sys.argv)
                    return await floor_quality(db, store, sweep="--no-sweep" not in sys.argv)
                finally:
                    await db.close()
            finally:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                await admin.close()
                if not external:
                    stop_embedded_server(Path(tmp))

    print(json.dumps(asyncio.run(run()), indent=1, default=str))


if __name__ == "__main__":
    main()
