"""Offline fusion and floor sweeps over candidate pools fetched once per query (issue 43).

A `Pool` is everything `knowledge_search` knew about one query's candidates with no floor and no cap: the
union of the dense list and the BM25 list (100 each), each candidate's cosine distance, BM25 (None when it was
not a BM25 candidate), rank in each list, the fused score the SQL gave it, and the query's best possible BM25
(the function's `v_best`: the denominator of its relevance floor). From a pool this module re-ranks the
candidates as the SQL would under another fusion (the convex fusion at any dense weight, with each list's
scores min-max normalised over that list and a candidate absent from a list scoring 0 there; or RRF), and
applies a floor rule before the limit, as the SQL does. Pure numpy: no database.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

LIMIT = 100
"""Chunks a ranking keeps (the searches' limit), before the chunks are read as documents."""


@dataclass
class Pool:
    """One query's candidates (parallel arrays) and its best possible BM25."""

    chunk: np.ndarray  # int64 chunk ids (the SQL's tie-break)
    doc: list[Any]  # each candidate's document key
    source: np.ndarray  # int codes of each candidate's source (the per-source cap)
    cos: np.ndarray  # 1 - cosine distance
    bm25: np.ndarray  # BM25, nan when not a lexical candidate
    dense_rank: np.ndarray  # rank in the dense list, nan when absent
    lexical_rank: np.ndarray  # rank in the lexical list, nan when absent
    sql_score: np.ndarray  # the fused score the SQL returned (today's fusion)
    best_bm25: float | None  # the query's best possible BM25 (v_best), None without known lexemes

    @property
    def n(self) -> int:
        return len(self.chunk)

    def relevance(self) -> np.ndarray:
        """The absolute floor's relevance: max(cosine similarity, BM25 / best possible BM25), BM25 counted only
        for lexical candidates (as the SQL's `coalesce(bm25 / nullif(v_best, 0), 0)`)."""
        lexical = np.zeros(self.n)
        if self.best_bm25:
            lexical = np.nan_to_num(self.bm25 / self.best_bm25, nan=0.0)
        return np.asarray(np.maximum(self.cos, lexical))


def _minmax(values: np.ndarray, member: np.ndarray) -> np.ndarray:
    """The SQL's per-list normalisation: (v - min) / (max - min) over the list's members, 1 when max = min,
    0 for a candidate not in the list."""
    out = np.zeros(len(values))
    if member.any():
        lo, hi = values[member].min(), values[member].max()
        out[member] = (values[member] - lo) / (hi - lo) if hi > lo else 1.0
    return out


def fused(p: Pool, fusion: float | str) -> tuple[np.ndarray, np.ndarray]:
    """(score, member): `fusion` a dense weight in 0..1 (convex, the lexical weight 1 - w; a weight of 0
    leaves that list out, as the SQL does), or "rrf" (weights 1 / 1, k 60)."""
    dense, lexical = ~np.isnan(p.dense_rank), ~np.isnan(p.lexical_rank)
    if fusion == "rrf":
        score = np.where(dense, 1 / (60 + np.nan_to_num(p.dense_rank)), 0.0) + np.where(
            lexical, 1 / (60 + np.nan_to_num(p.lexical_rank)), 0.0
        )
        return score, dense | lexical
    w = float(fusion)
    if w >= 1.0:
        return _minmax(p.cos, dense), dense
    if w <= 0.0:
        return _minmax(np.nan_to_num(p.bm25), lexical), lexical
    score = w * _minmax(p.cos, dense) + (1 - w) * _minmax(np.nan_to_num(p.bm25), lexical)
    return score, dense | lexical


def order(p: Pool, fusion: float | str) -> tuple[np.ndarray, np.ndarray]:
    """(candidate indices best first, their scores): the SQL's `ORDER BY fused_score DESC, id`."""
    score, member = fused(p, fusion)
    idx = np.flatnonzero(member)
    ranked = idx[np.lexsort((p.chunk[idx], -score[idx]))]
    return ranked, score


def documents(p: Pool, ranked: np.ndarray, limit: int = LIMIT) -> list[Any]:
    """The distinct documents of the first `limit` chunks, a document ranked by its best chunk."""
    return list(dict.fromkeys(p.doc[i] for i in ranked[:limit]))


def cap(p: Pool, ranked: np.ndarray, per_source: int) -> np.ndarray:
    """The ranking with each source's chunks past its first `per_source` moved after every chunk within its
    source's cap, in score order (migrations/0103: the capped candidates fill what room the limit leaves)."""
    seen: dict[int, int] = {}
    within: list[int] = []
    capped: list[int] = []
    for i in ranked:
        s = int(p.source[i])
        seen[s] = seen.get(s, 0) + 1
        (within if seen[s] <= per_source else capped).append(i)
    return np.array(within + capped, dtype=int)


# -- floor rules: each gives the candidates a query keeps, from its pool and its ranking -------------------

Rule = Callable[[Pool, np.ndarray, np.ndarray], np.ndarray]
"""(pool, ranked indices, fused scores) -> a boolean mask over the pool's candidates: kept."""


def _first(ranked: np.ndarray, n: int, size: int) -> np.ndarray:
    mask = np.zeros(size, dtype=bool)
    mask[ranked[:n]] = True
    return mask


def absolute(t: float, keep_halves_top: int = 0, share: float = 0.83) -> Rule:
    """relevance >= t; with `keep_halves_top` N, also a candidate either half ranks within its first N whose
    relevance reaches share x t (the SQL's p_keep_top / p_keep_floor)."""

    def rule(p: Pool, ranked: np.ndarray, score: np.ndarray) -> np.ndarray:
        rel = p.relevance()
        kept = rel >= t
        if keep_halves_top:
            top = (np.nan_to_num(p.dense_rank, nan=math.inf) <= keep_halves_top) | (
                np.nan_to_num(p.lexical_rank, nan=math.inf) <= keep_halves_top
            )
            kept |= top & (rel >= share * t)
        return np.asarray(kept)

    return rule


def split(cosine: float, bm25: float) -> Rule:
    """The absolute floor with a threshold per half: cosine >= `cosine`, or BM25 / best possible >= `bm25`."""

    def rule(p: Pool, ranked: np.ndarray, score: np.ndarray) -> np.ndarray:
        lexical = np.nan_to_num(p.bm25 / p.best_bm25, nan=0.0) if p.best_bm25 else np.zeros(p.n)
        return np.asarray((p.cos >= cosine) | (lexical >= bm25))

    return rule


def floor_gate(t: float, gate: float | None = None, share: float = 0.0) -> Rule:
    """The SQL's floor of migrations/0103: relevance >= t, or the query's best candidate's relevance reaches
    `gate` (every candidate then passes), or relevance >= `share` x the best candidate's relevance."""

    def rule(p: Pool, ranked: np.ndarray, score: np.ndarray) -> np.ndarray:
        rel = p.relevance()
        best = float(rel.max()) if p.n else 0.0
        kept = rel >= t
        if gate is not None and best >= gate:
            kept = np.ones(p.n, dtype=bool)
        if share > 0:
            kept = kept | (rel >= share * best)
        return np.asarray(kept)

    return rule


def relative_fused(r: float, first: int = 0) -> Rule:
    """fused score >= r x the query's best fused score, or within the ranking's first `first`."""

    def rule(p: Pool, ranked: np.ndarray, score: np.ndarray) -> np.ndarray:
        best = score[ranked].max() if len(ranked) else 0.0
        return np.asarray((score >= r * best) | _first(ranked, first, p.n))

    return rule


def relative_halves(r: float, first: int = 0) -> Rule:
    """cosine >= r x the pool's best cosine, or BM25 >= r x the pool's best BM25, or within the first `first`."""

    def rule(p: Pool, ranked: np.ndarray, score: np.ndarray) -> np.ndarray:
        kept = p.cos >= r * p.cos.max() if p.n else np.zeros(0, dtype=bool)
        if (~np.isnan(p.bm25)).any():
            kept = kept | (np.nan_to_num(p.bm25) >= r * np.nanmax(p.bm25))
        return np.asarray(kept | _first(ranked, first, p.n))

    return rule


def gated(cos: float, bm25: float | None, inner: Rule | None = None) -> Rule:
    """The whole query is answered only when its best candidate's cosine reaches `cos` (or, with `bm25`, its
    best BM25 over the best possible reaches `bm25`); then `inner` (None: every candidate) decides."""

    def rule(p: Pool, ranked: np.ndarray, score: np.ndarray) -> np.ndarray:
        open_ = p.n > 0 and p.cos.max() >= cos
        if bm25 is not None and p.best_bm25 and (~np.isnan(p.bm25)).any():
            open_ = open_ or float(np.nanmax(p.bm25)) / p.best_bm25 >= bm25
        if not open_:
            return np.zeros(p.n, dtype=bool)
        return inner(p, ranked, score) if inner else np.ones(p.n, dtype=bool)

    return rule


def rules() -> dict[str, Rule]:
    """The floor rules the sweep measures, by name."""
    out: dict[str, Rule] = {"unfiltered": lambda p, ranked, score: np.ones(p.n, dtype=bool)}
    for t in (0.15, 0.2, 0.25, 0.28, 0.3, 0.31, 0.32, 0.33, 0.34, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6):
        out[f"absolute_{t}"] = absolute(t)
    for c in (0.3, 0.32, 0.35, 0.4):
        for b in (0.2, 0.25, 0.3, 0.35, 0.4):
            if (c, b) != (0.3, 0.3):
                out[f"split_cosine_{c}_bm25_{b}"] = split(c, b)
    for t in (0.3, 0.4, 0.5):
        out[f"absolute_{t}_keep_halves_top_8_at_0.83"] = absolute(t, 8)
    for r in (0.5, 0.7, 0.8, 0.9):
        for first in (0, 8):
            out[f"relative_fused_{r}_first_{first}"] = relative_fused(r, first)
            out[f"relative_halves_{r}_first_{first}"] = relative_halves(r, first)
    for g in (0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7):
        out[f"gate_cosine_{g}"] = gated(g, None)
        out[f"gate_cosine_or_bm25_{g}"] = gated(g, g)
        for r in (0.7, 0.8):
            out[f"gate_cosine_or_bm25_{g}_then_relative_halves_{r}_first_8"] = gated(g, g, relative_halves(r, 8))
    for g in (0.4, 0.5, 0.6):
        for t in (0.3, 0.4):
            out[f"gate_cosine_or_bm25_{g}_then_absolute_{t}"] = gated(g, g, absolute(t))
    for g in (0.3, 0.35, 0.4):
        for t in (0.25, 0.28, 0.3):
            out[f"gate_cosine_{g}_then_absolute_{t}"] = gated(g, None, absolute(t))
    for b in (0.5, 0.6, 0.7, 0.8, 0.9):  # the cosine cut, with an exact-words escape (a query embedded poorly)
        for t in (0.25, 0.28):
            out[f"gate_cosine_0.35_or_bm25_{b}_then_absolute_{t}"] = gated(0.35, b, absolute(t))
    for t in (0.3, 0.35, 0.4, 0.45, 0.5):
        for g in (0.4, 0.45, 0.5, 0.55, 0.6, 0.7):
            if g > t:
                out[f"absolute_{t}_or_query_best_{g}"] = floor_gate(t, g)
        for r in (0.6, 0.7, 0.8, 0.9):
            out[f"absolute_{t}_or_share_{r}_of_best"] = floor_gate(t, None, r)
    return out


def kept_ranking(p: Pool, rule: Rule, fusion: float | str) -> np.ndarray:
    """The query's ranking under `fusion` with the rule applied before the limit."""
    ranked, score = order(p, fusion)
    mask = rule(p, ranked, score)
    return np.asarray(ranked[mask[ranked]])


# -- metrics ---------------------------------------------------------------------------------------------


def recall(ranking: list[Any], gains: dict[Any, int], k: int) -> float:
    return len(set(ranking[:k]) & set(gains)) / len(gains)


def ndcg10(ranking: list[Any], gains: dict[Any, int]) -> float:
    dcg = sum(gains.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranking[:10]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(gains.values(), reverse=True)[:10]))
    return dcg / ideal if ideal else 0.0


def score(rankings: list[list[Any]], judged: list[dict[Any, int]]) -> dict[str, float]:
    """Mean recall@8, recall@50 and nDCG@10 of document rankings against their judgments."""
    pairs = list(zip(rankings, judged, strict=True))
    return {
        "recall@8": round(float(np.mean([recall(r, g, 8) for r, g in pairs])), 4),
        "recall@50": round(float(np.mean([recall(r, g, 50) for r, g in pairs])), 4),
        "ndcg@10": round(float(np.mean([ndcg10(r, g) for r, g in pairs])), 4),
    }
