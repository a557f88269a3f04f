"""Real, public, judged retrieval sets for choosing defaults (issue 43): where they come from and their loaders.

Nothing of these sets is committed (none carries a licence that allows it: /work/shared/DATASETS.md). The
command `python -m bench.real_sets import [--mirror-root /work/.mirror]` copies the few files each set needs
out of the bare git mirrors of their public repositories (`git show <commit>:<path>`, so the files are the
ones at the pinned commit) into a cache outside the repository, `~/.cache/ac-context-bench/` (or
`$AC_CONTEXT_BENCH_CACHE`), with `manifest.json` naming each file's repository, commit, path and sha256.
`load(name)` reads one set from the cache: its documents (id, text), queries (id, text) and judgments
(query id -> {document id: gain}); a set whose files are absent is None, and `load_all` reports it as skipped.

The sets
- NPL (Vaswani): `fbergh/IR_Project` @ 1249c3f6797bbce7df8bc675a5dbf7b11fa779e6, `data/npl/doc-text`,
  `query-text`, `rlv-ass`. 11,429 short physics/engineering abstracts (lower case), 93 queries (upper case in
  the file, lower-cased here as a person would type them: the embedder's vocabulary is case-sensitive).
  Classic test collection, research use. Not SMART-dotted: records are a number line, text, then a `/` line.
- CISI: same repository and commit, `data/cisi/CISI.ALL`, `CISI.QRY`, `CISI.REL`. 1,460 library-science
  abstracts (title, authors and abstract as the text), 112 queries of which 76 judged. Research use.
- CACM: same repository and commit, `data/cacm/cacm.all`, `query.text`, `qrels.text`. 3,204 CACM articles
  (title, abstract when there is one, keywords and authors as the text: query 2 asks for two authors),
  64 queries of which 52 judged. Research use.
- REALTALK: `danny911kr/REALTALK` @ b903e06, only `data/Chat_{1..10}_*.json` (the folder `data/locomo/` is
  the held-out LoCoMo benchmark and is never read). Ten real two-person messaging-app chats over 21 days
  (LoCoMo's schema), one turn per document with the text `speaker: clean_text`, and their memory-probing
  questions judged by evidence turn ids. The repository states no licence (README: "please cite" Lee et al.,
  2025, arXiv:2502.13270), so its text is used here for measurement only and never committed.
  Each chat is its own collection (its own organization in the bench): one chat is one person's history,
  closer to what a search in this product sees than ten unrelated chats pooled (which would also let one
  chat's "Kevin" answer another chat's question). Evidence ids are normalised (a trailing full stop or
  inner space removed, `;`-separated lists split, a range `Dn:a-Dn:b` within one session expanded); an id
  that still matches no turn is dropped and counted, and a question left with no evidence is not scored.
  `realtalk_unanswerable` gives, per chat, questions of OTHER chats that name someone never named in it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

IR_REPO = "fbergh/IR_Project"
IR_COMMIT = "1249c3f6797bbce7df8bc675a5dbf7b11fa779e6"
REALTALK_REPO = "danny911kr/REALTALK"
REALTALK_COMMIT = "b903e06"
REALTALK_CHATS = [
    "Chat_1_Emi_Elise",
    "Chat_2_Kevin_Elise",
    "Chat_3_Kevin_Paola",
    "Chat_4_Emi_Paola",
    "Chat_5_Nicolas_Nebraas",
    "Chat_6_Vanessa_Nicolas",
    "Chat_7_Nebraas_Vanessa",
    "Chat_8_Akib_Muhhamed",
    "Chat_9_Fahim_Akib",
    "Chat_10_Fahim_Muhhamed",
]

FILES: dict[str, tuple[str, str, list[str]]] = {
    "npl": (IR_REPO, IR_COMMIT, ["data/npl/doc-text", "data/npl/query-text", "data/npl/rlv-ass"]),
    "cisi": (IR_REPO, IR_COMMIT, ["data/cisi/CISI.ALL", "data/cisi/CISI.QRY", "data/cisi/CISI.REL"]),
    "cacm": (IR_REPO, IR_COMMIT, ["data/cacm/cacm.all", "data/cacm/query.text", "data/cacm/qrels.text"]),
    "realtalk": (REALTALK_REPO, REALTALK_COMMIT, [f"data/{c}.json" for c in REALTALK_CHATS]),
}
"""Per set: its repository, the commit read, and the files copied (never `data/locomo/`)."""

SOURCES: dict[str, str] = {
    "npl": f"NPL (Vaswani) test collection, github.com/{IR_REPO} @ {IR_COMMIT}; classic test collection, research use",
    "cisi": f"CISI test collection, github.com/{IR_REPO} @ {IR_COMMIT}; classic test collection, research use",
    "cacm": f"CACM test collection, github.com/{IR_REPO} @ {IR_COMMIT}; classic test collection, research use",
    "realtalk": f"REALTALK (Lee et al. 2025, arXiv:2502.13270), github.com/{REALTALK_REPO} @ {REALTALK_COMMIT}; "
    "no licence stated in the repository (cite the paper); measurement only, never committed",
}
"""Each set's source and licence, for the docs and the bench's result."""

SETS = tuple(FILES)


def cache_root() -> Path:
    """Where the sets are cached: $AC_CONTEXT_BENCH_CACHE, else ~/.cache/ac-context-bench."""
    return Path(os.environ.get("AC_CONTEXT_BENCH_CACHE") or Path.home() / ".cache" / "ac-context-bench")


@dataclass
class RealSet:
    """One judged set: documents, queries, judgments, and which collection each document and query is in."""

    name: str
    documents: list[tuple[str, str]]
    queries: list[tuple[str, str]]
    judgments: dict[str, dict[str, int]]
    source: str
    collection_of_document: dict[str, str] = field(default_factory=dict)
    """Document id -> its collection (one organization in the bench); empty: one collection, the set's name."""
    collection_of_query: dict[str, str] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)

    def collections(self) -> dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]]:
        """Collection -> (its documents, its judged queries); a query with no judgment is left out."""
        out: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {}
        for doc in self.documents:
            out.setdefault(self.collection_of_document.get(doc[0], self.name), ([], []))[0].append(doc)
        for q in self.queries:
            if self.judgments.get(q[0]):
                out.setdefault(self.collection_of_query.get(q[0], self.name), ([], []))[1].append(q)
        return out


# -- import ------------------------------------------------------------------------------------------------


def _mirror(mirror_root: Path, repo: str) -> Path:
    return mirror_root / repo.replace("/", "+") / "repo"


def import_sets(mirror_root: Path, cache: Path | None = None) -> dict[str, Any]:
    """Copy every set's files present in the mirrors into the cache; the manifest lists what was copied."""
    cache = cache or cache_root()
    entries: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for name, (repo, commit, paths) in FILES.items():
        git_dir = _mirror(mirror_root, repo)
        if not git_dir.exists():
            skipped[name] = f"no mirror at {git_dir}"
            continue
        try:
            full = subprocess.run(
                ["git", "--git-dir", str(git_dir), "rev-parse", f"{commit}^{{commit}}"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            blobs = [
                subprocess.run(
                    ["git", "--git-dir", str(git_dir), "show", f"{full}:{p}"], check=True, capture_output=True
                ).stdout
                for p in paths
            ]
        except subprocess.CalledProcessError as e:
            skipped[name] = f"git failed: {e.stderr!r}"[:300]
            continue
        folder = cache / name
        folder.mkdir(parents=True, exist_ok=True)
        for path, data in zip(paths, blobs, strict=True):
            (folder / Path(path).name).write_bytes(data)
            entries.append(
                {
                    "set": name,
                    "repo": repo,
                    "commit": full,
                    "path": path,
                    "file": f"{name}/{Path(path).name}",
                    "sha256": hashlib.sha256(data).hexdigest(),
                }
            )
    manifest = {"files": entries, "skipped": skipped, "sources": SOURCES}
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


# -- parsers -----------------------------------------------------------------------------------------------


def _smart(text: str, fields: tuple[str, ...]) -> list[tuple[str, str]]:
    """SMART records (`.I n`, then `.X` field markers): per record its number and the named fields joined."""
    records: list[tuple[str, str]] = []
    number: str | None = None
    current: str | None = None
    parts: dict[str, list[str]] = {}
    for line in [*text.splitlines(), ".I end"]:
        if line.startswith(".I "):
            if number is not None:
                joined = " ".join(" ".join(" ".join(parts[f]).split()) for f in fields if parts.get(f))
                records.append((number, joined.strip()))
            number, current, parts = line.split()[1], None, {}
        elif re.fullmatch(r"\.[A-Z]\s*", line[:3]) and len(line.strip()) == 2:
            current = line[:2]
        elif current in fields:
            parts.setdefault(current, []).append(line.strip())
    return records


def _pairs(text: str) -> dict[str, dict[str, int]]:
    """`query doc ...` lines (CISI.REL, CACM qrels.text): binary judgments."""
    judged: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 2:
            judged.setdefault(str(int(cols[0])), {})[str(int(cols[1]))] = 1
    return judged


def _slash_records(text: str) -> list[tuple[str, list[str]]]:
    """NPL's format: a record is its number on one line, its lines, then a line holding `/`."""
    records: list[tuple[str, list[str]]] = []
    lines: list[str] = []
    for line in text.splitlines():
        if line.strip() == "/":
            if lines:
                records.append((lines[0].strip(), lines[1:]))
            lines = []
        elif line.strip() or lines:
            lines.append(line)
    if lines:
        records.append((lines[0].strip(), lines[1:]))
    return records


def _read(cache: Path, name: str) -> dict[str, str] | None:
    paths = [cache / name / Path(p).name for p in FILES[name][2]]
    if not all(p.is_file() for p in paths):
        return None
    return {
        Path(p).name: path.read_text(encoding="utf-8", errors="replace")
        for p, path in zip(FILES[name][2], paths, strict=True)
    }


def _npl(files: dict[str, str]) -> RealSet:
    documents = [(n, " ".join(" ".join(lines).split())) for n, lines in _slash_records(files["doc-text"])]
    queries = [(n, " ".join(" ".join(lines).split()).lower()) for n, lines in _slash_records(files["query-text"])]
    judgments = {n: {d: 1 for line in lines for d in line.split()} for n, lines in _slash_records(files["rlv-ass"])}
    return RealSet("npl", [d for d in documents if d[1]], queries, judgments, SOURCES["npl"])


def _cisi(files: dict[str, str]) -> RealSet:
    documents = _smart(files["CISI.ALL"], (".T", ".A", ".W"))
    queries = _smart(files["CISI.QRY"], (".W",))
    return RealSet("cisi", [d for d in documents if d[1]], queries, _pairs(files["CISI.REL"]), SOURCES["cisi"])


def _cacm(files: dict[str, str]) -> RealSet:
    documents = _smart(files["cacm.all"], (".T", ".W", ".K", ".A"))
    queries = _smart(files["query.text"], (".W",))
    return RealSet("cacm", [d for d in documents if d[1]], queries, _pairs(files["qrels.text"]), SOURCES["cacm"])


def _evidence_ids(raw: str, known: set[str]) -> list[str]:
    """One evidence entry, normalised: split lists, drop stray full stops and spaces, expand a short range."""
    out: list[str] = []
    for part in re.split(r"[;,]", raw):
        part = part.strip().rstrip(".").replace(" ", "")
        if part in known:
            out.append(part)
            continue
        span = re.fullmatch(r"D(\d+):(\d+)-D?(\d+)?:?(\d+)", part)
        if span and (span.group(3) in (None, span.group(1))) and 0 <= int(span.group(4)) - int(span.group(2)) <= 10:
            ids = [f"D{span.group(1)}:{i}" for i in range(int(span.group(2)), int(span.group(4)) + 1)]
            out.extend(i for i in ids if i in known)
    return out


def _realtalk(files: dict[str, str]) -> RealSet:
    documents: list[tuple[str, str]] = []
    queries: list[tuple[str, str]] = []
    judgments: dict[str, dict[str, int]] = {}
    doc_coll: dict[str, str] = {}
    query_coll: dict[str, str] = {}
    raw = exact = dropped = unscored = 0
    for chat in REALTALK_CHATS:
        data = json.loads(files[f"{chat}.json"])
        coll = chat.split("_", 2)[0].lower() + chat.split("_", 2)[1]  # chat1 .. chat10
        known: set[str] = set()
        sessions = sorted((k for k in data if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        for key in sessions:
            for turn in data[key]:
                text = (turn.get("clean_text") or "").strip()
                if not text:
                    continue
                doc_id = f"{coll}:{turn['dia_id']}"
                known.add(turn["dia_id"])
                documents.append((doc_id, f"{turn['speaker']}: {text}"))
                doc_coll[doc_id] = coll
        for i, qa in enumerate(data.get("qa", [])):
            ids: list[str] = []
            for entry in qa.get("evidence", []):
                raw += 1
                exact += entry in known
                found = _evidence_ids(str(entry), known)
                dropped += not found
                ids.extend(found)
            qid = f"{coll}:q{i}"
            query_coll[qid] = coll
            queries.append((qid, str(qa["question"])))
            if ids:
                judgments[qid] = {f"{coll}:{d}": 1 for d in ids}
            else:
                unscored += 1
    stats = {
        "evidence_ids": raw,
        "matched_as_written": exact,
        "matched_after_normalising": raw - dropped,
        "dropped_matching_no_turn": dropped,
        "questions_without_evidence_not_scored": unscored,
    }
    return RealSet("realtalk", documents, queries, judgments, SOURCES["realtalk"], doc_coll, query_coll, stats)


PARSERS = {"npl": _npl, "cisi": _cisi, "cacm": _cacm, "realtalk": _realtalk}


def load(name: str, cache: Path | None = None) -> RealSet | None:
    """One set from the cache, or None when its files are absent."""
    files = _read(cache or cache_root(), name)
    if files is None:
        return None
    s = PARSERS[name](files)
    judged = [q for q, _ in s.queries if s.judgments.get(q)]
    s.stats = {
        "documents": len(s.documents),
        "queries": len(s.queries),
        "judged_queries": len(judged),
        "judgments": sum(len(s.judgments[q]) for q in judged),
    } | s.stats
    return s


def load_all(cache: Path | None = None, names: tuple[str, ...] = SETS) -> tuple[dict[str, RealSet], dict[str, str]]:
    """Every present set, and the absent ones with why (never an error)."""
    present: dict[str, RealSet] = {}
    skipped: dict[str, str] = {}
    for name in names:
        s = load(name, cache)
        if s is None:
            skipped[name] = (
                f"files absent under {(cache or cache_root()) / name} (run: python -m bench.real_sets import)"
            )
        else:
            present[name] = s
    return present, skipped


_NOT_NAMES = {
    "i",
    "what",
    "when",
    "where",
    "who",
    "why",
    "how",
    "which",
    "does",
    "did",
    "do",
    "is",
    "was",
    "are",
    "were",
    "has",
    "have",
    "had",
    "can",
    "could",
    "would",
    "will",
    "should",
    "in",
    "on",
    "the",
    "a",
    "and",
}


def realtalk_unanswerable(s: RealSet, per_collection: int = 20) -> dict[str, list[str]]:
    """Per chat, up to `per_collection` questions of other chats that it cannot answer: each names at least one
    capitalised word (a person, mostly) and none of its capitalised words occurs anywhere in the chat's text.
    Taken round-robin over the other chats, in their order, so the choice is fixed."""
    words: dict[str, set[str]] = {}
    for doc_id, text in s.documents:
        words.setdefault(s.collection_of_document[doc_id], set()).update(re.findall(r"[a-z]+", text.lower()))
    by_chat: dict[str, list[str]] = {}
    for qid, text in s.queries:
        by_chat.setdefault(s.collection_of_query[qid], []).append(text)
    out: dict[str, list[str]] = {}
    for chat, vocabulary in words.items():
        others = [qs for c, qs in by_chat.items() if c != chat]
        chosen: list[str] = []
        for i in range(max(map(len, others), default=0)):
            for qs in others:
                if i >= len(qs) or len(chosen) >= per_collection:
                    continue
                names = {w.lower() for w in re.findall(r"\b[A-Z][a-z]+", qs[i])} - _NOT_NAMES
                if names and not any(n in vocabulary for n in names):
                    chosen.append(qs[i])
        out[chat] = chosen
    return out


def main(argv: list[str]) -> int:
    """`python -m bench.real_sets import [--mirror-root DIR]`; `python -m bench.real_sets stats`."""
    if argv[:1] == ["import"]:
        root = Path(argv[argv.index("--mirror-root") + 1]) if "--mirror-root" in argv else Path("/work/.mirror")
        manifest = import_sets(root)
        print(json.dumps({"cache": str(cache_root()), "files": len(manifest["files"]), "skipped": manifest["skipped"]}))
        return 0
    if argv[:1] == ["stats"]:
        present, skipped = load_all()
        print(json.dumps({n: s.stats for n, s in present.items()} | {"skipped": skipped}, indent=1))
        return 0
    print(main.__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
