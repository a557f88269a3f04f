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
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench._search_seed import CORPUS, MODEL
from knowledge.embed import get_embedder
from knowledge.ingest import register_upload
from knowledge.ingestion import build_source_model
from knowledge.objects import LocalObjectStore
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


async def cranfield_quality(db: Database, store: LocalObjectStore) -> dict[str, Any]:
    parsed = _parse(FOLDER / "cran.all.1400")
    docs = [(n, t) for n, t in parsed if t.strip()]
    judged = _qrels(FOLDER / "cranqrel")
    evaluated = [(i + 1, q) for i, (_, q) in enumerate(_parse(FOLDER / "cran.qry")) if judged.get(i + 1)]
    org = uuid.uuid4()
    async with db.connection() as conn:
        await conn.execute("INSERT INTO public.organizations (id, name) VALUES ($1, 'cranfield')", org)
    embedder = get_embedder(MODEL)
    doc_of: dict[uuid.UUID, int] = {}
    gate = asyncio.Semaphore(4)

    async def ingest(number: int, text: str) -> None:
        async with gate:
            reg = await register_upload(db, store, organization_id=org, data=text.encode(),
                                        filename=f"cran-{number}.txt", title=f"cran {number}",
                                        media_type="text/plain")  # fmt: skip
            await build_source_model(db, store, reg.source_id, embedder)
            doc_of[reg.source_id] = number

    started = time.perf_counter()
    await asyncio.gather(*(ingest(n, t) for n, t in docs))
    ingest_s = time.perf_counter() - started

    def score(rankings: dict[int, list[int]]) -> dict[str, float]:
        return {
            "ndcg@10": round(statistics.fmean(_ndcg10(rankings[p], judged[p]) for p, _ in evaluated), 4),
            "recall@100": round(statistics.fmean(_recall100(rankings[p], judged[p]) for p, _ in evaluated), 4),
        }

    async def rank(fusion: Fusion, *, min_relevance: float = 0.0, limit: int = 100) -> dict[int, list[int]]:
        rankings: dict[int, list[int]] = {}
        for position, text in evaluated:
            hits = await search(db, org, text, include_organization=True, limit=limit, fusion=fusion,
                                min_relevance=min_relevance)  # fmt: skip
            rankings[position] = list(dict.fromkeys(doc_of[h.source_id] for h in hits))
        return rankings

    wide = {"candidates": 100}
    configs = {
        "dense_only": Fusion(dense=1.0, lexical=0.0, **wide),
        "lexical_only_bm25": Fusion(dense=0.0, lexical=1.0, **wide),
        "lexical_only_bm25_every_posting": Fusion(dense=0.0, lexical=1.0, depth=100_000, **wide),
        "hybrid_default": replace(DEFAULT_FUSION, candidates=100),
        "hybrid_convex_0.5_0.5": Fusion(dense=0.5, lexical=0.5, method="convex", **wide),
        "hybrid_rrf_1_1_k60": Fusion(dense=1.0, lexical=1.0, k=60, method="rrf", **wide),
        "hybrid_rrf_0.3_1_k20": Fusion(dense=0.3, lexical=1.0, k=20, method="rrf", **wide),
    }
    quality = {}
    for name, fusion in configs.items():
        started = time.perf_counter()
        quality[name] = score(await rank(fusion)) | {"s": round(time.perf_counter() - started, 1)}
    reference = {f"bm25s_k1_{k1}": score(_bm25_reference(docs, evaluated, k1)) for k1 in (DEFAULT_FUSION.k1, 1.5)}
    chunks = await _stored_chunks(db, doc_of)
    reference[f"bm25s_k1_{DEFAULT_FUSION.k1}_same_chunks"] = score(
        _bm25_reference(chunks, evaluated, DEFAULT_FUSION.k1)
    )
    return {
        "documents": len(docs),
        "chunks": len(chunks),
        "queries_evaluated": len(evaluated),
        "ingest_s": round(ingest_s, 1),
        "quality": quality,
        "bm25_reference": reference,
        "relevance_floor": await _floor(db, org, evaluated, judged, doc_of, rank, score),
    }


async def _floor(
    db: Database,
    org: uuid.UUID,
    evaluated: list[tuple[int, str]],
    judged: dict[int, dict[int, int]],
    doc_of: dict[uuid.UUID, int],
    rank: Any,
    score: Any,
) -> dict[str, Any]:
    """Per floor: Cranfield nDCG@10 and relevant hits kept in the top 8, and hits left for off-topic queries."""
    out: dict[str, Any] = {}
    for floor in (0.0, 0.2, 0.3, 0.4):
        rankings = await rank(DEFAULT_FUSION, min_relevance=floor, limit=10)
        kept = sum(len(set(rankings[p][:8]) & set(judged[p])) for p, _ in evaluated)
        off = [
            len(await search(db, org, q, include_organization=True, limit=8, min_relevance=floor)) for q in OFF_TOPIC
        ]
        out[f"floor_{floor}"] = {
            "ndcg@10": score(rankings)["ndcg@10"],
            "relevant_hits_in_top_8": kept,
            "off_topic_mean_hits_of_8": round(statistics.fmean(off), 2),
        }
    return out
