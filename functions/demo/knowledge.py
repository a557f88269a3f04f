"""The knowledge part of `ac-context demo`: ingest a few documents with a progress bar, then search them.

The demo tenant gets two FastAPI tutorial pages and one PDF of the shared corpus when it is there, else a
small built-in Markdown page; the platform scope gets a built-in CRM glossary. Every step is the real
ingestion path (register, extract and chunk, embed batch by batch, mark ready) under the live model, and
running the demo twice registers nothing new. This module must never bypass the ingestion steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from knowledge.documents.objects import LocalObjectStore, ObjectStore, object_store_from_url
from knowledge.embedding.registry import get_embedder
from knowledge.errors import KnowledgeInputError
from knowledge.ingestion.registration import register_upload
from knowledge.ingestion.steps import embed_batch, mark_ready, models_to_build, prepare_chunks, record_failure
from knowledge.search import search
from state.db import Database
from state.demo_tenant import DEMO
from state.settings import get_settings

__all__ = ["DEMO_QUESTION", "demo_knowledge"]

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
DEMO_QUESTION = "What does the lifecycle stage of a company mean, and how do I declare query parameters?"

_GLOSSARY = """# AgencyCore CRM glossary

## Lifecycle stage

The lifecycle stage of a company says where it stands with you: **lead** (known, not yet qualified),
**opportunity** (a deal is open), **customer** (a deal was won) or **churned** (it stopped buying).

## Deal stage

A deal moves through qualification, proposal, negotiation and closed won or closed lost.
"""

_PLAYBOOK = """# Acme sales playbook

A new lead is qualified within two working days. Opportunities above 20,000 EUR need a second reviewer.
"""


@dataclass(frozen=True)
class _Document:
    organization_id: UUID | None
    filename: str
    data: bytes
    title: str | None = None


def _documents() -> list[_Document]:
    """The built-in glossary for the platform, and corpus pages (else the built-in playbook) for the tenant."""
    docs = [_Document(None, "crm-glossary.md", _GLOSSARY.encode(), "AgencyCore CRM glossary")]
    tutorial = CORPUS / "markdown" / "fastapi-docs" / "tutorial"
    pdf = CORPUS / "pdf" / "py-pdf-sample-files" / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf"
    found = [p for p in (tutorial / "query-params.md", tutorial / "path-params.md", pdf) if p.is_file()]
    if not found:
        return [*docs, _Document(DEMO.organization_id, "acme-playbook.md", _PLAYBOOK.encode(), "Acme sales playbook")]
    return docs + [_Document(DEMO.organization_id, p.name, p.read_bytes()) for p in found]


def _store() -> ObjectStore:
    settings = get_settings()
    if settings.object_store_url:
        return object_store_from_url(settings.object_store_url)
    return LocalObjectStore(settings.data_dir / "objects")


async def _ingest(db: Database, store: ObjectStore, doc: _Document, progress: Progress) -> str:
    """Run one document through the steps; returns how it ended."""
    registered = await register_upload(
        db, store, organization_id=doc.organization_id, data=doc.data, filename=doc.filename, title=doc.title
    )
    task = progress.add_task(doc.filename, total=None)
    models = await models_to_build(db, registered.source_id)
    if not models:
        progress.update(task, description=f"{doc.filename} (already ready)", total=1, completed=1)
        return "already ready"
    for model in models:
        embedder = get_embedder(model)
        try:
            prepared = await prepare_chunks(db, store, registered.source_id, model)
        except KnowledgeInputError as exc:
            await record_failure(db, registered.source_id, exc, model)
            progress.update(task, total=1, completed=1)
            return f"failed: {exc.message}"
        progress.update(task, total=prepared.chunk_count, completed=prepared.embedded_count)
        while (batch := await embed_batch(db, registered.source_id, embedder)).embedded:
            progress.advance(task, batch.embedded)
            if batch.remaining == 0:
                break
        await mark_ready(db, registered.source_id, model, store=store)
    return f"ready ({', '.join(models)})"


async def demo_knowledge(db: Database, console: Console) -> None:
    """Ingest the demo documents for the demo tenant and the platform, then print one search's hits."""
    store = _store()
    outcomes: list[tuple[str, str, str]] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("chunks"))
    with Progress(*columns, console=console, transient=False) as progress:
        for doc in _documents():
            scope = "platform" if doc.organization_id is None else "demo tenant"
            outcomes.append((doc.filename, scope, await _ingest(db, store, doc, progress)))
    table = Table("document", "scope", "outcome")
    for row in outcomes:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)

    hits = await search(
        db, DEMO.organization_id, DEMO_QUESTION, include_platform=True, include_organization=True, limit=5
    )
    console.print(f"search: [italic]{DEMO_QUESTION}[/italic]")
    results = Table("#", "source", "part", "scope", "score", "text")
    for rank, hit in enumerate(hits, 1):
        scope = "platform" if hit.source_organization_id is None else "tenant"
        snippet = " ".join(hit.text.split())[:90]
        results.add_row(
            str(rank), Text(hit.source_title), str(hit.ordinal + 1), scope, f"{hit.score:.4f}", Text(snippet)
        )
    console.print(results)
