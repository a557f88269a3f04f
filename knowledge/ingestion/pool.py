"""The ingestion process pool: PDF pages, whole small documents and embedding slices on every core.

`IngestPool(workers)` starts its worker processes (spawned, never forked from a process with threads and an
event loop) on first use. The functions it runs live here, at module level, so they pickle by name. A
knowledge error raised in a worker comes back as its class and message and is raised again in the caller,
so a pooled failure carries the same code and reason as one raised in-process. A worker that dies breaks
only the call that was running: the pool is rebuilt and the call fails with a retryable error.

Workers die with this process at any moment, their start included: each receives the read end of a
lifeline pipe whose write end only this process holds, and leaves when it reads end-of-file; a worker
killed before it can watch (still importing) is killed by the reaper (`knowledge.ingestion._reaper`), a tiny
process started before the first worker that waits on the same pipe. The resource tracker then ends by
itself. See docs/decisions.md, "How do the ingestion workers die with their parent?".

`extract_pooled` spreads the pages of a large PDF over the workers. The PDF is opened here (decryption, the
page count and the drawn content and their limits, the title) exactly as `extract_text` opens it, so a
decompression bomb is refused before any worker reads a page; its pages are then read in contiguous ranges,
one per worker, and joined in page order. A range stops at its first unreadable page or first bound passed,
returning the pages before it, and this process accounts the ranges' text again in page order, so the first
failure in page order is the one a single process meets first: the pooled text and failure reason equal
`extract_text`'s (tests compare every corpus PDF, and each bound). Small PDFs and every other type are
extracted in a thread.

This module must never touch the database or the object store, and never block the event loop.
"""

from __future__ import annotations

import asyncio
import atexit
import multiprocessing
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path, PurePath
from typing import Any, Final, TypeVar

import numpy as np

from knowledge.documents.chunk import chunk_text
from knowledge.documents.extract import (
    DEFAULT_EXTRACT_LIMITS,
    ExtractedDocument,
    ExtractLimits,
    TextBudget,
    extract_text,
    extract_text_async,
    finish_pdf,
    open_pdf_checked,
    pdf_capture,
    pdf_capture_end,
    pdf_pages_text_of,
    pdf_title,
)
from knowledge.embedding.embedder import Embedder, Embeddings
from knowledge.errors import EmptyDocumentError, KnowledgeError, KnowledgeRuntimeError
from knowledge.reasons import Reason

__all__ = [
    "POOLED_PDF_BYTES",
    "POOLED_PDF_PAGES",
    "Failure",
    "IngestPool",
    "Prepared",
    "default_workers",
    "embed_slice",
    "extract_pooled",
    "prepare_document",
    "prepare_documents",
    "raise_failure",
    "shared_pool",
]

T = TypeVar("T")


def default_workers() -> int:
    """One worker per CPU core this process may use."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - platforms without affinity
        return max(os.cpu_count() or 1, 1)


@dataclass(frozen=True, slots=True)
class Prepared:
    """The chunks of one document, ready to embed."""

    texts: list[str]
    """Chunk texts in ordinal order."""
    tokens: list[int]
    """Estimated tokens of each chunk."""


@dataclass(frozen=True, slots=True)
class Failure:
    """A knowledge error raised while preparing a document, as it crosses a process boundary."""

    error: type[KnowledgeError]
    """The error's class (pickled by name)."""
    message: str
    """Its message."""
    reason: Reason | None = None
    """Its stored reason (`knowledge.reasons`), when it has its own."""

    @classmethod
    def of(cls, exc: KnowledgeError) -> Failure:
        """The `Failure` that carries `exc` across a process boundary."""
        return cls(type(exc), exc.message, exc.reason)

    def raised(self) -> KnowledgeError:
        """The error this `Failure` carries, as the worker raised it."""
        return self.error(self.message, reason=self.reason)


def raise_failure(failure: Failure) -> None:
    """Raise the error a `Failure` carries, as the worker raised it."""
    raise failure.raised()


def prepare_document(
    data: bytes, media_type: str | None, filename: str | None, limits: ExtractLimits, size: int, max_chunks: int
) -> Prepared | Failure:
    """Extract and chunk one document; a knowledge error becomes a `Failure` (other errors propagate)."""
    try:
        extracted = extract_text(
            data, media_type=media_type, filename=filename, limits=limits.with_chunk_cap(max_chunks, size)
        )
        chunks = chunk_text(extracted.text, size=size, max_chunks=max_chunks)
    except KnowledgeError as exc:
        return Failure.of(exc)
    if not chunks:
        return Failure.of(EmptyDocumentError.because("the document contains no text to chunk"))
    return Prepared([c.text for c in chunks], [c.tokens for c in chunks])


def prepare_documents(
    documents: list[tuple[bytes, str | None, str | None]], limits: ExtractLimits, size: int, max_chunks: int
) -> list[Prepared | Failure]:
    """`prepare_document` for each of several documents (one pool task for many small ones)."""
    return [prepare_document(data, media, name, limits, size, max_chunks) for data, media, name in documents]


_EMBEDDERS: dict[type[Embedder], Embedder] = {}


def embed_slice(embedder_type: type[Embedder], texts: list[str]) -> Embeddings:
    """Embed texts with this process's instance of a pool-safe embedder type."""
    embedder = _EMBEDDERS.get(embedder_type)
    if embedder is None:
        embedder = _EMBEDDERS[embedder_type] = embedder_type()
    return asyncio.run(embedder.embed(texts))


def pdf_pages(
    data: bytes, password: str | None, start: int, stop: int, limits: ExtractLimits
) -> tuple[list[str], list[str], Failure | None]:
    """The raw text and repair notices of a page range up to its first failing page, and that `Failure`."""
    try:
        texts, notices, failure = pdf_pages_text_of(data, password, start, stop, limits)
    except KnowledgeError as exc:  # the PDF does not open here
        return [], [], Failure.of(exc)
    return texts, notices, None if failure is None else Failure.of(failure)


def _ready(n: int) -> int:
    return n


def _init_worker(lifeline: Connection) -> None:
    # One process per core already: a tokenizer that also spreads over every core would oversubscribe them.
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    # A worker holds both ends of its task queue, so it never sees the parent vanish: a parent killed with
    # SIGKILL would leave it waiting forever. Watch the lifeline instead: only the parent holds its write
    # end, so a read returns end-of-file the moment the parent dies or closes the pool, and at once when
    # that happened while this worker was still importing. (The reaper kills a worker still importing.)
    threading.Thread(target=_exit_with_parent, args=(lifeline,), daemon=True, name="parent-watch").start()


def _exit_with_parent(lifeline: Connection) -> None:
    try:
        lifeline.recv_bytes()
    except (EOFError, OSError):
        pass
    os._exit(0)


class IngestPool:
    """A lazily started pool of `workers` processes for CPU-bound ingestion work."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or default_workers()
        """How many processes run at once."""
        self._executor: ProcessPoolExecutor | None = None
        self._lifeline: Connection | None = None
        self._reaper: subprocess.Popen[bytes] | None = None

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            context = multiprocessing.get_context("spawn")
            # Every worker receives the read end when it is spawned; this process alone keeps the write end.
            reader, self._lifeline = context.Pipe(duplex=False)
            self._reaper = _start_reaper(reader)
            self._executor = ProcessPoolExecutor(
                self.workers, mp_context=context, initializer=_init_worker, initargs=(reader,)
            )
        return self._executor

    async def run(self, call: Callable[..., T], *args: Any) -> T:
        """Run `call(*args)` in a worker process and await its result."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool(), call, *args)
        except BrokenProcessPool as exc:
            await asyncio.to_thread(self.close)
            raise KnowledgeRuntimeError(f"an ingestion worker process died: {exc}", retryable=True) from exc

    async def warm(self) -> None:
        """Start every worker now (each imports the extraction and chunking code), not during the first job."""
        await asyncio.gather(*(self.run(_ready, n) for n in range(self.workers)))

    async def embed(self, embedder: Embedder, texts: list[str]) -> Embeddings:
        """Embed `texts` spread over the workers when the embedder may run there, else in this process."""
        if not texts:
            return np.empty((0, embedder.dimensions), dtype=np.float32)
        if self.workers < 2 or not embedder.runs_in_pool() or len(texts) < 64:
            return await embedder.embed(texts)
        step = -(-len(texts) // self.workers)
        slices = [texts[i : i + step] for i in range(0, len(texts), step)]
        parts = await asyncio.gather(*(self.run(embed_slice, type(embedder), part) for part in slices))
        return np.vstack(parts)

    def close(self) -> None:
        """Stop the worker processes (a later call starts new ones)."""
        executor, self._executor = self._executor, None
        lifeline, self._lifeline = self._lifeline, None
        reaper, self._reaper = self._reaper, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        if lifeline is not None:
            lifeline.close()  # the workers and the reaper see end-of-file: the workers leave, the reaper ends
        if reaper is not None:
            try:
                reaper.wait(timeout=REAPER_WAIT_S)
            except subprocess.TimeoutExpired:
                reaper.kill()
                reaper.wait()


REAPER_WAIT_S = 5.0
"""How long `close` waits for the reaper to finish its last look (it takes some milliseconds)."""


def _start_reaper(lifeline: Connection) -> subprocess.Popen[bytes] | None:
    """Start the reaper on the lifeline's read end (Linux only: it reads /proc), or None where it cannot run."""
    if not os.path.isdir("/proc/self/fd"):
        return None
    fd = lifeline.fileno()
    script = str(Path(__file__).with_name("_reaper.py"))
    return subprocess.Popen(
        [sys.executable, "-I", "-S", script, str(fd), str(os.getpid())],
        pass_fds=(fd,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
    )  # fmt: skip


_shared: IngestPool | None = None


def shared_pool(workers: int | None = None) -> IngestPool:
    """The process-wide pool (one per process, `workers` taken from its first caller), stopped at exit."""
    global _shared
    if _shared is None:
        _shared = IngestPool(workers)
        atexit.register(_shared.close)
    return _shared


POOLED_PDF_BYTES: Final = 256 * 1024
"""PDFs smaller than this are read in one thread: opening them in every worker would cost more."""
POOLED_PDF_PAGES: Final = 8
"""PDFs with fewer pages are read in one thread."""


async def extract_pooled(
    pool: IngestPool | None,
    data: bytes,
    *,
    media_type: str | None = None,
    filename: str | None = None,
    limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS,
    min_bytes: int = POOLED_PDF_BYTES,
    min_pages: int = POOLED_PDF_PAGES,
) -> ExtractedDocument:
    """`extract_text` of `data`, with the pages of a PDF of `min_bytes` and `min_pages` read by the workers."""
    is_pdf = b"%PDF-" in data[:1024]
    if pool is None or pool.workers < 2 or not is_pdf or not min_bytes <= len(data) <= limits.max_bytes:
        return await extract_text_async(data, media_type=media_type, filename=filename, limits=limits)
    pages, title, notices = await asyncio.to_thread(_head, data, limits)
    if pages < min_pages:
        return await extract_text_async(data, media_type=media_type, filename=filename, limits=limits)
    step = -(-pages // pool.workers)
    ranges = [(start, min(start + step, pages)) for start in range(0, pages, step)]
    parts = await asyncio.gather(*(pool.run(pdf_pages, data, None, start, stop, limits) for start, stop in ranges))
    # In page order, each range's text is accounted again as one reader would: the first bound passed, or
    # else the first failure, is the one a single reader meets first.
    budget = TextBudget(limits)
    texts: list[str] = []
    for (start, _), (part, notes, failure) in zip(ranges, parts, strict=True):
        for offset, text in enumerate(part):
            budget.add_page(start + offset, text)
        texts.extend(part)
        notices.extend(notes)
        if failure is not None:
            raise_failure(failure)
    return finish_pdf(texts, pages, title or (PurePath(filename).stem if filename else None), notices)


def _head(data: bytes, limits: ExtractLimits) -> tuple[int, str | None, list[str]]:
    """Open the PDF as `extract_text` does: its page count (within the limit), its title, its notices."""
    notices, token = pdf_capture()
    try:
        reader, pages = open_pdf_checked(data, None, limits)
        title = pdf_title(reader)
    finally:
        pdf_capture_end(token)
    return pages, title, notices
