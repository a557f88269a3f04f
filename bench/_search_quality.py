"""Cranfield quality for the search benchmark: dense, BM25, hybrid variants, a bm25s reference, the floor.

Documents go through the real ingestion pipeline with WordLlama (150-token chunks: 1,398 abstracts give
about 3,460 chunks, and most abstracts span two); queries through `knowledge.search.search`, a document
ranked by its best chunk. Relevance: Cleverdon's codes 1..4 are relevant with gains 4..1.

Two BM25 references, both `bm25s` with PyStemmer: over the whole documents (what a document-level engine
would score) and over the very chunks this run stored, a document ranked by its best chunk (what this
project's BM25 must match: the same units, so the comparison measures the ranking, not the chunking).
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench._search_seed import CORPUS, MODEL
from knowledge.documents.objects import LocalObjectStore
from knowledge.embedding.registry import get_embedder
from knowledge.ingestion.core import build_source_model
from knowledge.ingestion.registration import register_upload
from knowledge.search import DEFAULT_FUSION, Fusion, search
from state.db import Database

FOLDER = CORPUS / "ir" / "cranfield"
OFF_TOPIC = [
    "which deals in the pipeline close this quarter",
    "update the CRM lifecycle stage of this company to customer",
    "draft a follow-up email to the prospect after the demo",
    "who owns the renewal of the enterprise account",
    "summarise last week's sales calls with the buyer",
    "what discount did we offer on the annual subscription",
    "list the open opportunities of the marketing team",
    "schedule a meeting with the procurement contact",
    "how many leads did the webinar campaign generate",
    "which invoices are overdue for this customer",
    "add the new contact to the outreach sequence",
    "what is the churn risk of our largest client",
    "prepare a pricing proposal for the startup plan",
    "find the phone number of the head of sales",
    "log a note that the buyer asked for a security review",
    "compare our product with the competitor's CRM",
    "who replied to the cold email campaign yesterday",
    "move the deal to closed won and notify finance",
    "what did the customer say about onboarding",
    "book a product demo for next Tuesday afternoon",
]


def _parse(path: Path) -> list[tuple[int, str]]:
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
    judged: dict[int, dict[int, int]] = {}
    for line in path.read_text().splitlines():
        query, doc, code = (int(x) for x in line.split())
        if 1 <= code <= 4:
            judged.setdefault(query, {})[doc] = 5 - code
    return judged


def _ndcg10(ranking: list[int], gains: dict[int, int]) -> float:
    dcg = sum(gains.get(doc, 0) / np.log2(i + 2) for i, doc in enumerate(ranking[:10]))
    ideal = sum(g / np.log2(i + 2) for i, g in enumerate(sorted(gains.values(), reverse=True)[:10]))
    return float(dcg / ideal) if ideal else 0.0


def _recall100(ranking: list[int], gains: dict[int, int]) -> float:
    return len(set(ranking[:100]) & set(gains)) / len(gains)


def _bm25_reference(docs: list[tuple[int, str]], queries: list[tuple[int, str]], k1: float) -> dict[int, list[int]]:
    """bm25s over `docs` (number, text): per query the numbers of the best 100 distinct documents.

    A number may repeat (the chunks of one document): a document then ranks by its best unit.
    """
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25(k1=k1, b=0.75)
    retriever.index(bm25s.tokenize([t for _, t in docs], stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)  # fmt: skip
    tokens = bm25s.tokenize([q for _, q in queries], stopwords="en", stemmer=stemmer, show_progress=False)
    found, _ = retriever.retrieve(tokens, k=min(len(docs), 400), show_progress=False, n_threads=1)
    return {p: list(dict.fromkeys(docs[i][0] for i in row))[:100] for (p, _), row in zip(queries, found, strict=True)}


async def _stored_chunks(db: Database, doc_of: dict[uuid.UUID, int]) -> list[tuple[int, str]]:
    """Every chunk this run stored, as (document number, chunk text)."""
    async with db.connection() as conn:
        rows = await conn.fetch(
            "SELECT source_id, text FROM agent.knowledge_chunks WHERE source_id = ANY ($1::uuid[]) "
            "ORDER BY source_id, ordinal",
            list(doc_of),
        )
    return [(doc_of[r["source_id"]], r["text"]) for r in rows]


@dataclass
class _Collection:
    """One ingested collection: its organization, each source's document key, the queries and judgements."""

    org: uuid.UUID
    doc_of: dict[uuid.UUID, Any]
    evaluated: list[tuple[int, str]]
    judged: dict[int, dict[Any, int]]
    ingest_s: float

    longest: Any = None
    """The collection's longest document, when the share of queries it wrongly tops is worth reporting."""

    def score(self, rankings: dict[int, list[Any]]) -> dict[str, float]:
        out = {
            "ndcg@10": round(statistics.fmean(_ndcg10(rankings[p], self.judged[p]) for p, _ in self.evaluated), 4),
            "recall@100": round(
                statistics.fmean(_recall100(rankings[p], self.judged[p]) for p, _ in self.evaluated), 4
            ),
        }
        if self.longest is not None:  # how often the longest document comes first without being the answer
            wrong = [
                p for p, _ in self.evaluated if rankings[p][:1] == [self.longest] and self.longest not in self.judged[p]
            ]
            out["longest_first_wrongly"] = round(len(wrong) / len(self.evaluated), 4)
        return out

    def per_query(self, rankings: dict[int, list[Any]]) -> dict[int, float]:
        return {p: _ndcg10(rankings[p], self.judged[p]) for p, _ in self.evaluated}

    async def rank(
        self, db: Database, fusion: Fusion, *, min_relevance: float = 0.0, limit: int = 100
    ) -> dict[int, list[Any]]:
        """Per query the distinct documents of the best `limit` chunks, a document ranked by its best chunk."""
        rankings: dict[int, list[Any]] = {}
        for position, text in self.evaluated:
            hits = await search(db, self.org, text, include_organization=True, limit=limit, fusion=fusion,
                                min_relevance=min_relevance)  # fmt: skip
            rankings[position] = list(dict.fromkeys(self.doc_of[h.source_id] for h in hits))
        return rankings

    async def measure(self, db: Database, fusion: Fusion) -> dict[str, float]:
        started = time.perf_counter()
        return self.score(await self.rank(db, fusion)) | {"s": round(time.perf_counter() - started, 1)}


async def _ingest(
    db: Database, store: LocalObjectStore, name: str, documents: list[tuple[Any, str, bytes, str]]
) -> tuple[uuid.UUID, dict[uuid.UUID, Any], float]:
    """Ingest (key, filename, data, media type) documents into a new organization with WordLlama."""
    org = uuid.uuid4()
    async with db.connection() as conn:
        await conn.execute("INSERT INTO public.organizations (id, name) VALUES ($1, $2)", org, name)
    embedder = get_embedder(MODEL)
    doc_of: dict[uuid.UUID, Any] = {}
    gate = asyncio.Semaphore(4)

    async def ingest(key: Any, filename: str, data: bytes, media_type: str) -> None:
        async with gate:
            reg = await register_upload(db, store, organization_id=org, data=data, filename=filename,
                                        title=filename, media_type=media_type)  # fmt: skip
            await build_source_model(db, store, reg.source_id, embedder)
            doc_of[reg.source_id] = key

    started = time.perf_counter()
    await asyncio.gather(*(ingest(*d) for d in documents))
    return org, doc_of, time.perf_counter() - started


async def _cranfield(db: Database, store: LocalObjectStore) -> tuple[_Collection, list[tuple[int, str]]]:
    parsed = _parse(FOLDER / "cran.all.1400")
    docs = [(n, t) for n, t in parsed if t.strip()]
    judged = _qrels(FOLDER / "cranqrel")
    evaluated = [(i + 1, q) for i, (_, q) in enumerate(_parse(FOLDER / "cran.qry")) if judged.get(i + 1)]
    org, doc_of, ingest_s = await _ingest(
        db, store, "cranfield", [(n, f"cran-{n}.txt", t.encode(), "text/plain") for n, t in docs]
    )
    return _Collection(org, doc_of, evaluated, judged, ingest_s), docs


async def _long_documents(db: Database, store: LocalObjectStore) -> _Collection:
    from bench import _longdoc_set as ld

    pages = sorted((CORPUS / ld.FASTAPI).rglob("*.md"))
    documents: list[tuple[Any, str, bytes, str]] = [
        (str(p.relative_to(CORPUS)), p.name, p.read_bytes(), "text/markdown") for p in pages
    ]
    documents += [(p, Path(p).name, (CORPUS / p).read_bytes(), "application/pdf") for p in ld.PDFS]
    org, doc_of, ingest_s = await _ingest(db, store, "long documents", documents)
    evaluated = [(i + 1, q) for i, (q, _) in enumerate(ld.QUERIES)]
    judged = {i + 1: {ld.relevant_path(name): 1} for i, (_, name) in enumerate(ld.QUERIES)}
    async with db.connection() as conn:
        longest = await conn.fetchval(
            "SELECT source_id FROM agent.knowledge_chunks WHERE source_id = ANY ($1::uuid[]) "
            "GROUP BY source_id ORDER BY sum(length(text)) DESC LIMIT 1",
            list(doc_of),
        )
    return _Collection(org, doc_of, evaluated, judged, ingest_s, longest=doc_of[longest])


async def _whole_documents(db: Database, collection: _Collection) -> list[tuple[Any, str]]:
    """Each source's stored chunks joined in order: the whole document as this project extracted it."""
    async with db.connection() as conn:
        rows = await conn.fetch(
            "SELECT source_id, string_agg(text, ' ' ORDER BY ordinal) AS text FROM agent.knowledge_chunks "
            "WHERE source_id = ANY ($1::uuid[]) GROUP BY source_id",
            list(collection.doc_of),
        )
    return [(collection.doc_of[r["source_id"]], r["text"]) for r in rows]


SOURCE_WEIGHTS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The source-level BM25 weights the sweep measures (migrations/0093)."""


def _halves(source: float) -> dict[str, Fusion]:
    """Dense alone, lexical alone and the default hybrid, at one source weight, 100 candidates per list."""
    return {
        "dense_only": Fusion(dense=1.0, lexical=0.0, candidates=100, source=source),
        "lexical_only_bm25": Fusion(dense=0.0, lexical=1.0, candidates=100, source=source),
        "hybrid_default": replace(DEFAULT_FUSION, candidates=100, source=source),
    }


async def _sweep(db: Database, collection: _Collection, weights: tuple[float, ...]) -> dict[str, Any]:
    """Per source weight: lexical alone and the default hybrid (dense alone does not depend on it); then,
    per list, a two-fold cross-validation over the queries (odd and even positions): the weight chosen on
    one fold, its nDCG@10 on the other, averaged, beside the default weight's on the same folds."""
    out: dict[str, Any] = {}
    per_query: dict[str, dict[float, dict[int, float]]] = {"lexical_only_bm25": {}, "hybrid_default": {}}
    for weight in weights:
        halves = _halves(weight)
        out[f"source_{weight}"] = {}
        for name in per_query:
            started = time.perf_counter()
            rankings = await collection.rank(db, halves[name])
            out[f"source_{weight}"][name] = collection.score(rankings) | {"s": round(time.perf_counter() - started, 1)}
            per_query[name][weight] = collection.per_query(rankings)
    folds = [[p for p, _ in collection.evaluated if p % 2 == k] for k in (0, 1)]
    cv: dict[str, Any] = {}
    for name, by_weight in per_query.items():
        chosen, held_out = [], []
        for train, test in (folds, folds[::-1]):
            best = max(weights, key=lambda w: (statistics.fmean(by_weight[w][p] for p in train), -abs(w - 0.5)))
            chosen.append(best)
            held_out.append(statistics.fmean(by_weight[best][p] for p in test))
        cv[name] = {
            "chosen_per_fold": chosen,
            "held_out_ndcg@10": round(statistics.fmean(held_out), 4),
        }
    out["two_fold_cross_validation"] = cv
    return out


def _never_below(quality: dict[str, Any]) -> bool:
    """Fusion's rule on one set: the hybrid scores at least either half alone (nDCG@10)."""
    hybrid = quality["hybrid_default"]["ndcg@10"]
    return bool(hybrid >= quality["dense_only"]["ndcg@10"] and hybrid >= quality["lexical_only_bm25"]["ndcg@10"])


async def long_document_quality(
    db: Database, store: LocalObjectStore, *, weights: tuple[float, ...] = SOURCE_WEIGHTS
) -> dict[str, Any]:
    """The long-document set (bench/_longdoc_set.py): both halves, hybrid, the bm25s whole-document
    reference, and lexical and hybrid per source weight."""
    collection = await _long_documents(db, store)
    quality = {name: await collection.measure(db, f) for name, f in _halves(DEFAULT_FUSION.source).items()}
    whole = await _whole_documents(db, collection)
    reference = {
        f"bm25s_k1_{DEFAULT_FUSION.k1}_whole_documents": collection.score(
            _bm25_reference(whole, collection.evaluated, DEFAULT_FUSION.k1)
        )
    }
    async with db.connection() as conn:
        chunks = await conn.fetchval(
            "SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = ANY ($1::uuid[])", list(collection.doc_of)
        )
    return {
        "documents": len(collection.doc_of),
        "chunks": chunks,
        "queries_evaluated": len(collection.evaluated),
        "ingest_s": round(collection.ingest_s, 1),
        "quality": quality,
        "hybrid_never_below_either_half": _never_below(quality),
        "bm25_reference": reference,
        "source_weight_sweep": await _sweep(db, collection, weights),
    }


async def cranfield_quality(
    db: Database, store: LocalObjectStore, *, weights: tuple[float, ...] = SOURCE_WEIGHTS, floor: bool = True
) -> dict[str, Any]:
    collection, docs = await _cranfield(db, store)
    wide = {"candidates": 100}
    configs = {
        **_halves(DEFAULT_FUSION.source),
        "lexical_only_bm25_every_posting": Fusion(dense=0.0, lexical=1.0, depth=100_000, **wide),
        "lexical_only_bm25_chunk_only": Fusion(dense=0.0, lexical=1.0, source=0.0, **wide),
        "hybrid_default_chunk_only": replace(DEFAULT_FUSION, candidates=100, source=0.0),
        "hybrid_convex_0.5_0.5": Fusion(dense=0.5, lexical=0.5, method="convex", **wide),
        "hybrid_rrf_1_1_k60": Fusion(dense=1.0, lexical=1.0, k=60, method="rrf", **wide),
        "hybrid_rrf_0.3_1_k20": Fusion(dense=0.3, lexical=1.0, k=20, method="rrf", **wide),
    }
    quality = {name: await collection.measure(db, fusion) for name, fusion in configs.items()}
    reference = {
        f"bm25s_k1_{k1}": collection.score(_bm25_reference(docs, collection.evaluated, k1))
        for k1 in (DEFAULT_FUSION.k1, 1.5)
    }
    chunks = await _stored_chunks(db, collection.doc_of)
    reference[f"bm25s_k1_{DEFAULT_FUSION.k1}_same_chunks"] = collection.score(
        _bm25_reference(chunks, collection.evaluated, DEFAULT_FUSION.k1)
    )
    out = {
        "documents": len(docs),
        "chunks": len(chunks),
        "queries_evaluated": len(collection.evaluated),
        "ingest_s": round(collection.ingest_s, 1),
        "quality": quality,
        "hybrid_never_below_either_half": _never_below(quality),
        "bm25_reference": reference,
        "source_weight_sweep": await _sweep(db, collection, weights),
    }
    if floor:
        out["relevance_floor"] = await _floor(db, collection)
    return out


async def search_quality(
    db: Database, store: LocalObjectStore, *, weights: tuple[float, ...] = SOURCE_WEIGHTS, floor: bool = True
) -> dict[str, Any]:
    """Cranfield (with the relevance floor) and the long-document set, each beside its bm25s reference."""
    cranfield = await cranfield_quality(db, store, weights=weights, floor=floor)
    long = await long_document_quality(db, store, weights=weights)
    return cranfield | {"long_documents": long, "goal_report": quality_goals(cranfield, long)}


def quality_goals(cranfield: dict[str, Any], long: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 24's quality goals (bench/_goals.py rows), from the figures of one run."""
    from bench._goals import goal

    reference = cranfield["bm25_reference"]
    whole = max(reference[f"bm25s_k1_{k1}"]["ndcg@10"] for k1 in (DEFAULT_FUSION.k1, 1.5))
    ndcg = {name: cranfield["quality"][name]["ndcg@10"] for name in ("hybrid_default", "lexical_only_bm25")}
    long_ndcg = {
        name: long["quality"][name]["ndcg@10"] for name in ("dense_only", "lexical_only_bm25", "hybrid_default")
    }
    long_whole = long["bm25_reference"][f"bm25s_k1_{DEFAULT_FUSION.k1}_whole_documents"]["ndcg@10"]
    best_half = max(cranfield["quality"][n]["ndcg@10"] for n in ("dense_only", "lexical_only_bm25"))
    long_best_half = max(long_ndcg["dense_only"], long_ndcg["lexical_only_bm25"])
    return [
        goal("Cranfield hybrid nDCG@10", ndcg["hybrid_default"], at_least=0.365),
        goal("Cranfield hybrid nDCG@10 vs bm25s whole documents (best k1, same run)", ndcg["hybrid_default"],
             at_least=whole),
        goal("Cranfield lexical nDCG@10 vs bm25s whole documents (best k1, same run)", ndcg["lexical_only_bm25"],
             at_least=whole),
        goal("Cranfield hybrid never below either half", ndcg["hybrid_default"], at_least=best_half),
        goal("long documents: lexical nDCG@10 vs bm25s whole documents", long_ndcg["lexical_only_bm25"],
             at_least=long_whole, note=f"dense {long_ndcg['dense_only']}, hybrid {long_ndcg['hybrid_default']}"),
        goal("long documents: hybrid never below either half", long_ndcg["hybrid_default"], at_least=long_best_half),
    ]  # fmt: skip


async def _floor(db: Database, collection: _Collection) -> dict[str, Any]:
    """Per floor: Cranfield nDCG@10 and relevant hits kept in the top 8, and hits left for off-topic queries."""
    out: dict[str, Any] = {}
    for floor in (0.0, 0.2, 0.3, 0.4):
        rankings = await collection.rank(db, DEFAULT_FUSION, min_relevance=floor, limit=10)
        kept = sum(len(set(rankings[p][:8]) & set(collection.judged[p])) for p, _ in collection.evaluated)
        off = [
            len(await search(db, collection.org, q, include_organization=True, limit=8, min_relevance=floor))
            for q in OFF_TOPIC
        ]
        out[f"floor_{floor}"] = {
            "ndcg@10": collection.score(rankings)["ndcg@10"],
            "relevant_hits_in_top_8": kept,
            "off_topic_mean_hits_of_8": round(statistics.fmean(off), 2),
        }
    return out


def main() -> None:
    """The quality sections alone, on their own embedded server: `python -m bench._search_quality`."""
    import json
    import os
    import sys
    import tempfile

    import asyncpg

    from state.embedded import embedded_server_url, server_dsn, stop_embedded_server
    from state.migrate import apply_migrations
    from state.settings import load_settings

    async def run() -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="ac-bench-quality-") as tmp:
            external = os.environ.get("DATABASE_URL")
            server = external or embedded_server_url(Path(tmp))
            name = f"ac_bench_quality_{uuid.uuid4().hex[:8]}"
            admin = await asyncpg.connect(server)
            await admin.execute(f'CREATE DATABASE "{name}"')
            url = server_dsn(server, name)
            try:
                await apply_migrations(url)
                db = await Database.open(load_settings(pool_min_size=2, pool_max_size=8), url=url, migrate=False)
                try:
                    store = LocalObjectStore(Path(tmp) / "objects")
                    return await search_quality(db, store, floor="--floor" in sys.argv)
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
