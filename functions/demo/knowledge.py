"""The knowledge part of `ac-context demo`: ingest a few documents with a progress bar, then search them.

The demo tenant gets two FastAPI tutorial pages and one PDF of the shared corpus when it is there, else a
small built-in Markdown page; the platform scope gets a built-in CRM glossary. Each document is registered
and then made ready by the one ingestion core (`knowledge.ingestion.ingest_source`, configured as the
service configures it, over the service's object store), so its steps and its failure rule are the ones
every other path runs; running the demo twice registers nothing new. This module must never run an
ingestion step, decide a failure or open an object store of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from functions import _services
from knowledge.documents.extract import extract_limits
from knowledge.ingestion.core import Ingestion, ingest_source
from knowledge.ingestion.registration import register_upload
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


async def _ingest(kit: Ingestion, doc: _Document, progress: Progress) -> str:
    """Register one document and run it through the one core; returns how it ended."""
    registered = await register_upload(
        kit.db, kit.store, organization_id=doc.organization_id, data=doc.data, filename=doc.filename, title=doc.title
    )
    task = progress.add_task(doc.filename, total=None)
    outcome = await ingest_source(kit, registered.source_id)
    if outcome.status == "failed":
        progress.update(task, total=1, completed=1)
        return f"failed: {outcome.failed_reason}"
    if not outcome.built:
        progress.update(task, description=f"{doc.filename} (already ready)", total=1, completed=1)
        return "already ready"
    progress.update(task, total=outcome.chunk_count, completed=outcome.chunk_count)
    if not outcome.ready:
        return f"{outcome.status}: not ready yet"
    return f"ready ({', '.join(outcome.ready_models)})"


async def demo_knowledge(db: Database, console: Console) -> None:
    """Ingest the demo documents for the demo tenant and the platform, then print one search's hits."""
    settings = get_settings()
    # The service's store, embedders, chunk cap and extraction bounds; one thread, no worker pool: four small
    # documents do not pay back starting worker processes (the README's first command stays fast).
    kit = Ingestion(
        db,
        _services.default_object_store(settings),
        _services.default_embedders.get,
        max_chunks=settings.max_chunks_per_source,
        limits=extract_limits(settings),
    )
    outcomes: list[tuple[str, str, str]] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("chunks"))
    with Progress(*columns, console=console, transient=False) as progress:
        for doc in _documents():
            scope = "platform" if doc.organization_id is None else "demo tenant"
            outcomes.append((doc.filename, scope, await _ingest(kit, doc, progress)))
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
