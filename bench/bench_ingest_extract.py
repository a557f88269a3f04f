"""Ingestion throughput without a database: extract, chunk and embed (WordLlama) on the shared corpus.

Documents: the GeoTopo 117-page PDF and every FastAPI Markdown page. Each stage is timed on its own, so
the split shows where an ingestion spends its time; the insert share is added by the database benchmark.
`bomb_refusal` times how long extraction takes to refuse the 2,000-page shared-stream bomb and its 64 KiB
variant: the figure the tests no longer bound (docs/decisions.md, "Why do tests assert no wall-clock bound?").
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from knowledge.documents.chunk import DEFAULT_CHUNK_TOKENS, chunk_text
from knowledge.documents.extract import extract_text
from knowledge.embedding.registry import get_embedder
from tests.unit.knowledge.pdf_bombs import shared_stream_bomb

CORPUS = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpus"
GEOTOPO = CORPUS / "pdf" / "py-pdf-sample-files" / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"
FASTAPI = CORPUS / "markdown" / "fastapi-docs"
MODEL = "local/wordllama-l2-supercat-256"


def _measure(name: str, paths: list[Path]) -> dict[str, Any]:
    embedder = get_embedder(MODEL)
    asyncio.run(embedder.embed(["warm up the model"]))  # loading the model is not ingestion throughput
    blobs = [(p.name, p.read_bytes()) for p in paths]
    started = time.perf_counter()
    documents = [extract_text(data, filename=filename) for filename, data in blobs]
    extract_s = time.perf_counter() - started
    started = time.perf_counter()
    chunks = [c.text for d in documents for c in chunk_text(d.text)]
    chunk_s = time.perf_counter() - started
    started = time.perf_counter()
    vectors = asyncio.run(embedder.embed(chunks))
    embed_s = time.perf_counter() - started
    pages = sum(d.pages for d in documents)
    total = extract_s + chunk_s + embed_s
    return {
        "corpus": name,
        "documents": len(documents),
        "bytes": sum(len(data) for _, data in blobs),
        "pages": pages,
        "chunks": len(chunks),
        "vector_shape": list(vectors.shape),
        "seconds": {"extract": round(extract_s, 3), "chunk": round(chunk_s, 3), "embed": round(embed_s, 3)},
        "share": {k: round(v / total, 3) for k, v in (("extract", extract_s), ("chunk", chunk_s), ("embed", embed_s))},
        "pages_per_s": round(pages / total, 1),
        "chunks_per_s": round(len(chunks) / total, 1),
        "chunks_per_s_by_stage": {
            "chunk": round(len(chunks) / chunk_s, 1) if chunk_s else None,
            "embed": round(len(chunks) / embed_s, 1) if embed_s else None,
        },
        "pages_per_s_extract": round(pages / extract_s, 1) if extract_s else None,
    }


def _bomb_refusal() -> dict[str, Any]:
    """Seconds from the bytes to the refusal, best of three, for each shared-stream bomb."""
    bombs = {"shared-400k.pdf": shared_stream_bomb(), "shared-64k.pdf": shared_stream_bomb(stream_bytes=64 * 1024)}
    figures: dict[str, Any] = {}
    for name, data in bombs.items():
        times, refusal = [], ""
        for _ in range(3):
            started = time.perf_counter()
            try:
                extract_text(data, filename=name)
            except Exception as exc:
                refusal = f"{type(exc).__name__}: {str(exc)[:80]}"
            times.append(time.perf_counter() - started)
        figures[name] = {"seconds_best_of_3": round(min(times), 3), "refusal": refusal or "not refused"}
    return figures


def run() -> dict[str, Any]:
    markdown = sorted(FASTAPI.rglob("*.md"))
    return {
        "model": MODEL,
        "chunk_tokens": DEFAULT_CHUNK_TOKENS,
        "note": "no database: the insert share is measured by the ingestion benchmark with Postgres",
        "geotopo_pdf": _measure("GeoTopo-komprimiert.pdf (117 pages)", [GEOTOPO]),
        "fastapi_markdown": _measure(f"fastapi-docs ({len(markdown)} Markdown pages)", markdown),
        "bomb_refusal": _bomb_refusal(),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
