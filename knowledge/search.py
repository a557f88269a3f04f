"""Hybrid knowledge search: embed the query with the live model, then one call to `knowledge_search`.

One search uses one model. The live model is read first (the organization's row, else the platform row),
the query is embedded with it, and the SQL function checks that the model it is told still is the live
one: a flip in between raises `LiveModelChangedError` inside the database and the search embeds again, so
a query vector is never compared with chunks of another model. The reads run as the tenant, so row-level
security checks the organization a second time behind the function's explicit filter. The dense half is the
model's HNSW walk, or, when the walk comes back with fewer rows than the candidate count (another tenant's
chunks crowd the graph around the query), the exact scan of the searched scopes (migration 0071), so no
tenant's writes can empty another's dense candidates. Each hit carries its source's review date and whether
it is overdue, read in the same statement (`knowledge/queries.sql`). This module must never search without an
organization, never widen the scope flags, and never hold a transaction open while an embedding provider
answers.

The live model is remembered per database and organization for `LIVE_MODEL_TTL_S`: a brief then
embeds at once and sends one statement. A remembered model that is no longer the live one costs one retry and
is never compared with another model's chunks, because the function checks the model it is told (KS002,
`LiveModelChangedError`): the search forgets it, reads the live model and embeds again.

Each search is one span, `retrieval knowledge_search` (`state.telemetry`: the limit as `gen_ai.retrieval.top_k`,
the model, the hit count); the query text joins it only when the operator allows text in spans.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date
from typing import Final, Literal
from uuid import UUID

from pgvector import Vector

from knowledge._sql import QUERIES, translated
from knowledge.embedding.registry import EmbedderLookup, get_embedder
from knowledge.errors import LiveModelChangedError, NoLiveModelError
from state import telemetry
from state.db import Database

__all__ = [
    "DEFAULT_ANSWER_COSINE",
    "DEFAULT_ANSWER_LEXICAL",
    "DEFAULT_FUSION",
    "DEFAULT_KEEP_TOP",
    "DEFAULT_MIN_RELEVANCE",
    "DEFAULT_PER_SOURCE",
    "KEEP_FLOOR_SHARE",
    "LIVE_MODEL_TTL_S",
    "MAX_SEARCH_LIMIT",
    "SEARCH_STATEMENT",
    "CutRule",
    "Fusion",
    "KnowledgeHit",
    "PlaceRule",
    "search",
    "search_explained",
]

MAX_SEARCH_LIMIT: Final = 1000
"""The most hits one search returns."""

SEARCH_STATEMENT: Final = QUERIES["knowledge_search"]
"""The statement `search` runs (`knowledge/queries.sql`), for a benchmark that times the SQL alone."""


@dataclass(frozen=True, slots=True)
class Fusion:
    """How the dense and the BM25 candidate lists are read and fused (defaults measured: docs/decisions.md).

    The weights and the method default to None: the live embedding model's calibrated fusion, stored with
    the model (`agent.embedding_models`, migrations/0103), because how much the dense list deserves depends
    on how good the model's vectors are. Naming them overrides the model's for one search.
    """

    dense: float | None = None
    """Weight of the dense (vector) list; 0 leaves it out; None: the live model's (give both or neither)."""
    lexical: float | None = None
    """Weight of the lexical (BM25) list; 0 leaves it out; None: the live model's (give both or neither)."""
    k: int = 60
    """The reciprocal-rank constant (method "rrf" only)."""
    candidates: int | None = None
    """Candidates read from each list; None reads four times the limit (at least the limit)."""
    method: Literal["rrf", "convex"] | None = None
    """"rrf" sums weight / (k + rank); "convex" sums weight x the list's min-max normalised score; None:
    the live model's."""
    depth: int = 200
    """Postings read per query lexeme and scope, best first, before the common lexemes are completed."""
    ef_search: int | None = 80
    """hnsw.ef_search for the dense list (None: the function's 200); 80 measured at two shapes (bench_search)."""
    k1: float = 1.2
    """BM25 term-frequency saturation."""
    b: float = 0.75
    """BM25 length normalisation."""
    source: float = 0.75
    """Weight of a chunk's source's BM25 (the source scored as one document) in the chunk's lexical score;
    the chunk's own BM25 weighs 1 - source. 0 ranks by the chunk's own BM25 alone (migrations/0093)."""

    def __post_init__(self) -> None:
        if (self.dense is None) != (self.lexical is None):
            raise ValueError("give both fusion weights or neither (neither: the live model's)")
        if (
            self.dense is not None
            and self.lexical is not None
            and (self.dense < 0 or self.lexical < 0 or (self.dense == 0 and self.lexical == 0))
        ):
            raise ValueError("fusion weights must be non-negative and not both zero")
        if self.k < 1 or (self.candidates is not None and not 1 <= self.candidates <= MAX_SEARCH_LIMIT):
            raise ValueError(f"k must be positive and candidates within 1..{MAX_SEARCH_LIMIT}")
        if self.method is not None and self.method not in ("rrf", "convex"):
            raise ValueError(f"method must be rrf or convex, got {self.method!r}")
        if not 1 <= self.depth <= 100_000 or (self.ef_search is not None and not 1 <= self.ef_search <= 1000):
            raise ValueError("depth must be within 1..100000 and ef_search within 1..1000")
        if self.k1 < 0 or not 0 <= self.b <= 1 or not 0 <= self.source <= 1:
            raise ValueError("k1 must be non-negative, b and source within 0..1")


DEFAULT_FUSION: Final = Fusion()
"""The live model's calibrated fusion (method and weights, migrations/0103); a chunk's BM25 mixed 0.25 / 0.75
with its source's (measured on Cranfield and a long-document set: docs/decisions.md, Retrieval)."""

DEFAULT_MIN_RELEVANCE: Final = 0.25
"""The relevance floor a search applies when the caller names none: measured on real judged sets (NPL, CISI,
CACM, REALTALK, Cranfield), it costs at most 0.73 points of recall@8 against the unfiltered search and still
cuts half the hits of queries nothing answers (docs/decisions.md, "Does the relevance floor cut evidence?")."""

DEFAULT_KEEP_TOP: Final = 0
"""With `keep_top` N > 0, a candidate the dense or the lexical half ranks within its own first N passes the
floor when its relevance reaches KEEP_FLOOR_SHARE of it. The default 0 applies the floor alone: measured on
three judged sets, the floor costs no recall@8 there and keeping either half's top lets two to five more
hits of 8 through for queries nothing answers (docs/decisions.md, "Does the relevance floor cut evidence?")."""

KEEP_FLOOR_SHARE: Final = 0.83
"""The share of `min_relevance` a candidate within a half's own top still needs (the lower floor, 0.25 of
the default 0.3): the best of the shares measured at cutting off-topic queries' hits."""

CutRule = Literal["query_unanswered", "relevance_floor", "per_source_cap", "beyond_limit"]
"""Why a search cut a candidate (`search_explained`): nothing answers the query, the floor, the per-source cap
(a capped candidate the limit had no room left for), or the limit."""

PlaceRule = Literal["rank", "cap_fill"]
"""Which rule placed a hit: `rank` (by score, within its source's cap), or `cap_fill` (past its source's cap,
filling room the limit had left after every candidate within its cap)."""

DEFAULT_ANSWER_COSINE: Final[float | None] = None
"""A query is answered when its best candidate's cosine similarity reaches the live model's `answer_cosine`
(its `agent.embedding_models` row: a cosine means something only for its model; WordLlama's 0.35, measured)
or its best BM25 share reaches `answer_lexical`; an unanswered query returns nothing. None: the model's; a
number replaces it for one search (-1 answers every query)."""

DEFAULT_ANSWER_LEXICAL: Final[float | None] = 0.7
"""The exact-words escape of the answer gate: a query whose best candidate's BM25 over the best possible
reaches it is answered whatever its cosine (a query the model embeds poorly; measured: it lets 0.008 more
off-topic hits of 8 through on the real sets). None: no escape."""

DEFAULT_PER_SOURCE: Final = 3
"""The most hits one source places by rank when the caller names no cap; its other candidates then fill what
room the limit leaves after every other source's (docs/decisions.md, "Per-source cap")."""


LIVE_MODEL_TTL_S: Final = 30.0
"""How long a search trusts the live model it read last for an organization (a stale one costs one retry)."""

_LIVE_MODELS_MAX: Final = 10_000
_live_models: dict[tuple[str, UUID], tuple[str, float]] = {}
"""(database URL, organization) -> (live model id, monotonic time it was read)."""


def _remembered_model(db: Database, organization_id: UUID) -> str | None:
    entry = _live_models.get((db.url, organization_id))
    if entry is None or time.monotonic() - entry[1] > LIVE_MODEL_TTL_S:
        return None
    return entry[0]


def _remember_model(db: Database, organization_id: UUID, model: str | None) -> None:
    key = (db.url, organization_id)
    if model is None:
        _live_models.pop(key, None)
        return
    if len(_live_models) >= _LIVE_MODELS_MAX:
        _live_models.clear()
    _live_models[key] = (model, time.monotonic())


async def _read_live_model(db: Database, organization_id: UUID) -> str:
    with translated():
        async with db.tenant(organization_id) as conn:
            live = await conn.fetchrow(QUERIES["live_model"], organization_id)
    if live is None:
        raise NoLiveModelError("no knowledge_settings row names a live embedding model for this organization")
    model: str = live["model_id"]
    _remember_model(db, organization_id, model)
    return model


@dataclass(frozen=True, slots=True)
class KnowledgeHit:
    """One chunk a search returned, best first."""

    chunk_id: int
    """The chunk row."""
    source_id: UUID
    """The source the chunk belongs to (and inherits its tenancy from)."""
    source_title: str
    """The source's title."""
    source_organization_id: UUID | None
    """The source's organization, None for a platform document."""
    ordinal: int
    """The chunk's position in its document (0-based)."""
    text: str
    """The chunk text."""
    tokens: int
    """Its measured token count."""
    embedding_model: str
    """The model it is pinned to: always the live model of the search."""
    score: float
    """The fused score."""
    dense_rank: int | None = None
    """Its rank in the dense list, None when it was not a dense candidate."""
    lexical_rank: int | None = None
    """Its rank in the lexical list, None when it was not a lexical candidate."""
    dense_distance: float | None = None
    """Its cosine distance to the query."""
    lexical_score: float | None = None
    """Its BM25 score, None when it was not a lexical candidate."""
    source_review_by: date | None = None
    """Its source's review date, None when it has none."""
    source_overdue: bool = False
    """Its source's review date is before today in UTC (the database's clock, migrations/0087)."""
    cut: CutRule | None = None
    """The rule that cut it (`search_explained` only); None for a hit the search returns."""
    relevance: float | None = None
    """The floor's measure: the better of its cosine similarity and its BM25 over the query's best possible."""
    placed: PlaceRule | None = None
    """The rule that placed a returned hit; None for a cut candidate."""


async def search(
    db: Database,
    organization_id: UUID,
    query: str,
    *,
    include_platform: bool = False,
    include_organization: bool = False,
    limit: int = 8,
    embedders: EmbedderLookup = get_embedder,
    fusion: Fusion = DEFAULT_FUSION,
    min_relevance: float = DEFAULT_MIN_RELEVANCE,
    keep_top: int = DEFAULT_KEEP_TOP,
    keep_floor: float | None = None,
    per_source: int | None = DEFAULT_PER_SOURCE,
    answer_cosine: float | None = DEFAULT_ANSWER_COSINE,
    answer_lexical: float | None = DEFAULT_ANSWER_LEXICAL,
) -> list[KnowledgeHit]:
    """The best `limit` ready chunks of the scopes asked for, under the organization's live model.

    The floor: a hit is kept when the better of its cosine similarity and its BM25 over the query's best
    possible score reaches `min_relevance`, or when either half ranks it within its own first `keep_top`
    and that relevance reaches `keep_floor` (None: KEEP_FLOOR_SHARE x `min_relevance`). A query whose best
    candidate's cosine is under `answer_cosine` (None: the live model's) and whose best BM25 share is under
    `answer_lexical` is unanswered and returns nothing; `min_relevance` 0 answers every query. `per_source`
    caps the hits one source places by rank; capped candidates then fill what room the limit has left.
    """
    hits = await _run(db, organization_id, query, include_platform, include_organization, limit, embedders,
                      fusion, min_relevance, keep_top, keep_floor, per_source, answer_cosine, answer_lexical,
                      explain=False)  # fmt: skip
    return hits


async def search_explained(
    db: Database,
    organization_id: UUID,
    query: str,
    *,
    include_platform: bool = False,
    include_organization: bool = False,
    limit: int = 8,
    embedders: EmbedderLookup = get_embedder,
    fusion: Fusion = DEFAULT_FUSION,
    min_relevance: float = DEFAULT_MIN_RELEVANCE,
    keep_top: int = DEFAULT_KEEP_TOP,
    keep_floor: float | None = None,
    per_source: int | None = DEFAULT_PER_SOURCE,
    answer_cosine: float | None = DEFAULT_ANSWER_COSINE,
    answer_lexical: float | None = DEFAULT_ANSWER_LEXICAL,
) -> tuple[list[KnowledgeHit], list[KnowledgeHit]]:
    """`search`'s hits, and the candidates it cut, best first, each with the rule that cut it (`cut`)."""
    rows = await _run(db, organization_id, query, include_platform, include_organization, limit, embedders,
                      fusion, min_relevance, keep_top, keep_floor, per_source, answer_cosine, answer_lexical,
                      explain=True)  # fmt: skip
    return [h for h in rows if h.cut is None], [h for h in rows if h.cut is not None]


async def _run(
    db: Database,
    organization_id: UUID,
    query: str,
    include_platform: bool,
    include_organization: bool,
    limit: int,
    embedders: EmbedderLookup,
    fusion: Fusion,
    min_relevance: float,
    keep_top: int,
    keep_floor: float | None,
    per_source: int | None,
    answer_cosine: float | None,
    answer_lexical: float | None,
    *,
    explain: bool,
) -> list[KnowledgeHit]:
    if isinstance(limit, bool) or not 0 <= limit <= MAX_SEARCH_LIMIT:
        raise ValueError(f"limit must be within 0..{MAX_SEARCH_LIMIT}, got {limit!r}")
    if not 0.0 <= min_relevance <= 1.0:
        raise ValueError(f"min_relevance must be within 0..1, got {min_relevance!r}")
    if keep_floor is not None and not 0.0 <= keep_floor <= min_relevance:
        raise ValueError(f"keep_floor must be within 0..min_relevance, got {keep_floor!r}")
    if isinstance(keep_top, bool) or not 0 <= keep_top <= MAX_SEARCH_LIMIT:
        raise ValueError(f"keep_top must be within 0..{MAX_SEARCH_LIMIT}, got {keep_top!r}")
    if per_source is not None and (isinstance(per_source, bool) or per_source < 1):
        raise ValueError(f"per_source must be a positive count, got {per_source!r}")
    if answer_cosine is not None and not -1.0 <= answer_cosine <= 1.0:
        raise ValueError(f"answer_cosine must be within -1..1, got {answer_cosine!r}")
    if answer_lexical is not None and not 0.0 <= answer_lexical <= 1.0:
        raise ValueError(f"answer_lexical must be within 0..1, got {answer_lexical!r}")
    if limit == 0 or not (include_platform or include_organization) or not query.strip():
        return []
    if min_relevance == 0.0:  # no floor: every query is answered too (the gate is the floor's query half)
        answer_cosine = -1.0
    attributes: dict[str, telemetry.AttributeValue] = {
        telemetry.OPERATION: "retrieval",
        telemetry.DATA_SOURCE_ID: "knowledge_search",
        telemetry.RETRIEVAL_TOP_K: limit,
        "ac.organization.id": str(organization_id),
        "ac.knowledge.include_platform": include_platform,
        "ac.knowledge.include_organization": include_organization,
        "ac.knowledge.explain": explain,
    }
    with telemetry.span("retrieval knowledge_search", attributes) as span:
        telemetry.set_text(span, telemetry.RETRIEVAL_QUERY, query)
        remembered = _remembered_model(db, organization_id)
        attempts = ("remembered", "read", "read") if remembered is not None else ("read", "read")
        for n, attempt in enumerate(attempts, start=1):
            model = remembered if attempt == "remembered" and remembered is not None else None
            if model is None:
                model = await _read_live_model(db, organization_id)
            vector = (await embedders(model).embed([query]))[0]
            try:
                with translated():
                    async with db.tenant(organization_id) as conn:
                        rows = await conn.fetch(
                            QUERIES["knowledge_search"],
                            organization_id,
                            Vector(vector),
                            query,
                            include_platform,
                            include_organization,
                            limit,
                            model,
                            fusion.dense,
                            fusion.lexical,
                            fusion.candidates,
                            fusion.k,
                            fusion.method,
                            min_relevance,
                            per_source,
                            fusion.depth,
                            fusion.ef_search,
                            fusion.k1,
                            fusion.b,
                            fusion.source,
                            keep_top,
                            KEEP_FLOOR_SHARE * min_relevance if keep_floor is None else keep_floor,
                            explain,
                            answer_cosine,
                            answer_lexical,
                        )
            except LiveModelChangedError:
                _remember_model(db, organization_id, None)
                if n == len(attempts):
                    raise
                continue  # the model flipped since it was read: read it again and embed with the new one
            except NoLiveModelError:
                _remember_model(db, organization_id, None)
                raise
            hits = [
                KnowledgeHit(
                    chunk_id=r["chunk_id"],
                    source_id=r["source_id"],
                    source_title=r["source_title"],
                    source_organization_id=r["source_organization_id"],
                    ordinal=r["ordinal"],
                    text=r["text"],
                    tokens=r["tokens"],
                    embedding_model=r["embedding_model"],
                    score=r["score"],
                    dense_rank=r["dense_rank"],
                    lexical_rank=r["lexical_rank"],
                    dense_distance=r["dense_distance"],
                    lexical_score=r["lexical_score"],
                    source_review_by=r["source_review_by"],
                    source_overdue=r["source_overdue"],
                    cut=r["cut"],
                    relevance=r["relevance"],
                    placed=r["placed"],
                )
                for r in rows
            ]
            span.set_attributes(
                {telemetry.REQUEST_MODEL: model, "ac.knowledge.hits": len(hits), "ac.knowledge.attempts": n}
            )
            return hits
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover
