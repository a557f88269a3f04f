"""Which memory order the Front Door should read, on real conversations (issue 43, item 5): REALTALK.

REALTALK (danny911kr/REALTALK, commit b903e06): ten real two-person messaging conversations of 16-21
sessions each, in LoCoMo's schema (`session_N` turns with `dia_id`, `clean_text`, `speaker`, `date_time`;
`qa[]` with `question` and its `evidence` dia ids). Only `data/Chat_<n>_*.json` is read, from a local git
mirror (`AC_BENCH_REALTALK_GIT`, default /work/.mirror/danny911kr+REALTALK/repo), and cached under
~/.cache/ac-context-bench/memory/realtalk/; `data/locomo/` in that repository is the held-out LoCoMo
benchmark and is never read. No data is committed.

Shape: one organization and one agent; each speaker (by name, across the conversations they take part in)
is a user whose turns are their memories, one `observation.` memory per turn in user scope, created at the
turn's own time (so recency is the real order), embedded with the platform's live model (WordLlama). Each
question is asked at the Front Door (no definition, no conversation) as each speaker who holds some of its
evidence, and the share of that speaker's evidence turns that reach the brief is counted, under:

- `recency`: the shipped Front Door memory spec before this change (limit 20, 500 tokens, newest first);
- `relevance`: the same spec with `order: relevance`;
- `relevance_limit_5`: relevance at limit 5;
- `relevance_bm25_only`: relevance with no question vector (the read's fallback);
- `mix_recent_5`: a mix rule, simulated from the two reads: the 5 newest, then relevance to 20, packed
  in that order under the same 500 tokens.

Reported per mode: `evidence_share` (evidence turns in the brief over all, micro), `mean_share` (the mean
of each question-speaker pair's share), `any_share` (pairs with at least one evidence turn in the brief),
and the brief's p50 wall time. Nothing here asserts.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from bench._goals import goal
from bench._scratch import bench_server, scratch_database
from context.builder import DefaultContextBuilder
from context.models import ContextItem, ContextPolicy, ContextRequest, ContextSourceSpec, ContextSubject
from context.packer import ContextPacker
from context.policies import FRONT_DOOR
from context.sources import default_registry
from context.sources.memory import MemoryContextSource
from context.sources.memory_vectors import live_memory_embedder
from context.tokens import estimate_tokens
from knowledge.embedding.registry import Embedder
from memory.vectors import embed_missing
from state.db import Database
from state.migrate import apply_migrations
from state.settings import load_settings

COMMIT = "b903e06"
MIRROR = Path(os.environ.get("AC_BENCH_REALTALK_GIT", "/work/.mirror/danny911kr+REALTALK/repo"))
CACHE = Path.home() / ".cache" / "ac-context-bench" / "memory" / "realtalk"
CHAT_FILE = re.compile(r"^data/Chat_(\d+)_[^/]+\.json$")
"""The ten conversations; nothing under data/locomo/ (held out) or data/raw/ matches."""
MEMORY_TOKENS, MEMORY_LIMIT = 500, 20
MIX_RECENT = 5


@dataclass
class Corpus:
    """The memories to seed and the questions to ask."""

    turns: list[tuple[str, str, str, datetime]] = field(default_factory=list)
    """(speaker, key, text, time) of every turn with text."""
    questions: list[tuple[str, str, list[str]]] = field(default_factory=list)
    """(speaker, question, evidence keys of that speaker)."""
    missing_evidence: int = 0
    """Evidence ids that name no turn of their conversation (left out)."""


def _chat_files() -> list[Path]:
    """The conversations' JSON files, from the cache or copied there from the mirror at COMMIT."""
    CACHE.mkdir(parents=True, exist_ok=True)
    cached = sorted(CACHE.glob("Chat_*.json"))
    if len(cached) >= 10:
        return cached
    listed = subprocess.run(["git", "--git-dir", str(MIRROR), "ls-tree", "--name-only", COMMIT, "data/"],
                            check=True, capture_output=True, text=True).stdout.split()  # fmt: skip
    for name in (n for n in listed if CHAT_FILE.match(n)):
        data = subprocess.run(["git", "--git-dir", str(MIRROR), "show", f"{COMMIT}:{name}"], check=True,
                              capture_output=True).stdout  # fmt: skip
        (CACHE / Path(name).name).write_bytes(data)
    return sorted(CACHE.glob("Chat_*.json"))


def _speaker(name: str) -> str:
    return " ".join(name.split()).lower()


def load_corpus(files: list[Path]) -> Corpus:
    """Every turn as its speaker's memory, and each question for each speaker holding some of its evidence."""
    corpus = Corpus()
    for path in files:
        chat = int(re.match(r"Chat_(\d+)_", path.name).group(1))  # type: ignore[union-attr]
        data = json.loads(path.read_text(encoding="utf-8"))
        by_dia: dict[str, tuple[str, str]] = {}
        ordinal = 0
        for key, value in data.items():
            if not (key.startswith("session_") and isinstance(value, list)):
                continue
            for turn in value:
                text = (turn.get("clean_text") or "").strip()[:4000]
                if not text:
                    continue
                ordinal += 1
                speaker, memory_key = _speaker(turn["speaker"]), f"c{chat}_t{ordinal}"
                at = datetime.strptime(turn["date_time"], "%d.%m.%Y, %H:%M:%S").replace(tzinfo=UTC)
                corpus.turns.append((speaker, memory_key, text, at))
                by_dia[turn["dia_id"]] = (speaker, memory_key)
        for qa in data.get("qa", []):
            held: dict[str, list[str]] = {}
            for dia in qa.get("evidence", []):
                if dia not in by_dia:
                    corpus.missing_evidence += 1
                    continue
                speaker, memory_key = by_dia[dia]
                held.setdefault(speaker, []).append(memory_key)
            corpus.questions.extend((speaker, qa["question"], keys) for speaker, keys in held.items())
    return corpus


async def _seed(db_url: str, corpus: Corpus) -> tuple[uuid.UUID, dict[str, uuid.UUID], dict[str, uuid.UUID]]:
    conn = await asyncpg.connect(db_url)
    try:
        org = await conn.fetchval("INSERT INTO organizations (name) VALUES ('REALTALK') RETURNING id")
        definition = await conn.fetchval(
            "INSERT INTO agent.definitions (organization_id, definition_kind, name, status)"
            " VALUES ($1, 'agent', 'Agent', 'published') RETURNING id",
            org,
        )
        users: dict[str, uuid.UUID] = {}
        for speaker in sorted({t[0] for t in corpus.turns}):
            users[speaker] = await conn.fetchval(
                "INSERT INTO users (organization_id, email) VALUES ($1, $2) RETURNING id",
                org, f"{re.sub(r'[^a-z]', '', speaker)}@realtalk.test",
            )  # fmt: skip
        rows = await conn.fetch(
            "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key,"
            " text, created_at) SELECT $1::uuid, $2::uuid, 'user', t.u, t.u,"
            " 'user:' || t.u::text || ':observation.' || t.k, t.text, t.at"
            " FROM unnest($3::uuid[], $4::text[], $5::text[], $6::timestamptz[]) AS t (u, k, text, at)"
            " RETURNING id, split_part(subject_key, ':observation.', 2) AS k",
            org, definition, [users[t[0]] for t in corpus.turns], [t[1] for t in corpus.turns],
            [t[2] for t in corpus.turns], [t[3] for t in corpus.turns],
        )  # fmt: skip
    finally:
        await conn.close()
    return org, users, {r["k"]: r["id"] for r in rows}


def _no_embedder(model: str) -> Embedder:
    raise LookupError(f"no embedder for {model} in the BM25-only run")


def _spec(order: str, limit: int) -> ContextSourceSpec:
    [front] = [s for s in FRONT_DOOR.sources if s.name == "memory"]
    return front.model_copy(update={"options": {"order": order}, "limit": limit, "token_budget": MEMORY_TOKENS})


async def _measure(db: Database, org: uuid.UUID, users: dict[str, uuid.UUID], ids: dict[str, uuid.UUID],
                   corpus: Corpus) -> dict[str, Any]:  # fmt: skip
    builder = DefaultContextBuilder(default_registry(db), ContextPacker(), source_timeout_s=60.0)
    lexical = DefaultContextBuilder(default_registry(db, embedders=_no_embedder), ContextPacker(),
                                    source_timeout_s=60.0)  # fmt: skip
    modes = {"recency": (builder, "recency", MEMORY_LIMIT), "relevance": (builder, "relevance", MEMORY_LIMIT),
             "relevance_limit_5": (builder, "relevance", 5),
             "relevance_bm25_only": (lexical, "relevance", MEMORY_LIMIT)}  # fmt: skip
    found: dict[str, list[tuple[int, int]]] = {m: [] for m in [*modes, "mix_recent_5"]}
    source = MemoryContextSource(db)
    walls: dict[str, list[float]] = {m: [] for m in modes}
    for speaker, question, keys in corpus.questions:
        wanted = {str(ids[k]) for k in keys}
        request = ContextRequest(
            subject=ContextSubject(organization_id=org, user_id=users[speaker], definition_id=None),
            query=question, entities=[],
        )  # fmt: skip
        briefs: dict[str, Any] = {}
        for mode, (built, order, limit) in modes.items():
            policy = ContextPolicy(sources=[_spec(order, limit)], total_token_budget=FRONT_DOOR.total_token_budget)
            started = time.perf_counter()
            briefs[mode] = await built.build(request, policy)
            walls[mode].append((time.perf_counter() - started) * 1000)
            got = {ref.id for ref in briefs[mode].items}
            found[mode].append((len(wanted & got), len(wanted)))
        recent = await source.retrieve(request, _spec("recency", MIX_RECENT))
        relevant = await source.retrieve(request, _spec("relevance", MEMORY_LIMIT))
        found["mix_recent_5"].append((len(wanted & _mix(recent, relevant)), len(wanted)))
    out: dict[str, Any] = {}
    for mode, pairs in found.items():
        out[mode] = {
            "evidence_share": round(sum(f for f, _ in pairs) / sum(n for _, n in pairs), 4),
            "mean_share": round(statistics.mean(f / n for f, n in pairs), 4),
            "any_share": round(sum(1 for f, _ in pairs if f) / len(pairs), 4),
        }
        if mode in walls:
            out[mode]["brief_p50_ms"] = round(statistics.median(walls[mode]), 2)
    return out


def _mix(recency: list[ContextItem], relevance: list[ContextItem]) -> set[str]:
    """The mix rule, simulated: the newest MIX_RECENT, then relevance to the limit, in that order, under budget."""
    chosen: list[ContextItem] = []
    seen: set[str] = set()
    for item in [*recency[:MIX_RECENT], *relevance]:
        if item.ref is not None and item.ref.id not in seen and len(chosen) < MEMORY_LIMIT:
            chosen.append(item)
            seen.add(item.ref.id)
    kept: set[str] = set()
    spent = 0
    for item in chosen:
        cost = item.tokens or estimate_tokens(item.body)
        if item.ref is not None and spent + cost <= MEMORY_TOKENS:
            kept.add(item.ref.id)
            spent += cost
    return kept


async def _main(server: str, corpus: Corpus) -> dict[str, Any]:
    async with scratch_database(server, "ac_bench_realtalk") as db_url:
        await apply_migrations(db_url)
        org, users, ids = await _seed(db_url, corpus)
        db = await Database.open(load_settings(pool_min_size=2, pool_max_size=4), url=db_url, migrate=False)
        try:
            embedded = await embed_missing(db, org, live_memory_embedder(db))
            async with db.connection() as c:
                for table in ("memories", "memory_postings", "memory_embeddings"):
                    await c.execute(f"VACUUM ANALYZE agent.{table}")
            modes = await _measure(db, org, users, ids, corpus)
        finally:
            await db.close()
    per_person = sorted(sum(1 for t in corpus.turns if t[0] == s) for s in users)  # counts only: no names kept
    return {
        "goal_report": [goal("evidence in the brief, relevance minus recency", round(
            modes["relevance"]["evidence_share"] - modes["recency"]["evidence_share"], 4), at_least=0.0)],
        "data": f"REALTALK {COMMIT}, data/Chat_1..10 (never data/locomo)",
        "memories": len(corpus.turns), "memories_embedded": embedded, "memories_per_person": per_person,
        "question_speaker_pairs": len(corpus.questions), "missing_evidence_ids": corpus.missing_evidence,
        "modes": modes,
    }  # fmt: skip


def run() -> dict[str, Any]:
    """Seed REALTALK's turns as memories, ask its questions at the Front Door in each order, and count evidence."""
    try:
        corpus = load_corpus(_chat_files())
    except (OSError, subprocess.CalledProcessError) as exc:
        return {"skipped": f"REALTALK is not available here: {exc}"}
    logging_off()
    with tempfile.TemporaryDirectory(prefix="ac-bench-realtalk-") as tmp, bench_server(Path(tmp)) as server:
        return asyncio.run(_main(server, corpus))


def logging_off() -> None:
    import logging

    logging.getLogger("memory.vectors").setLevel(logging.ERROR)  # the BM25-only run's embedder is absent on purpose


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, default=str))
