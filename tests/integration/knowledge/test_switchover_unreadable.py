"""A model switch never stops on a pending source that cannot be read (issue 25): each one is marked failed
with its own reason, and the switch goes on to flip."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest

from knowledge.embedding.live_model import begin_switch, live_model, running_switch
from knowledge.ingestion.registration import register_upload
from knowledge.switchover import run_switch
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE2, Kit

SAMPLES = ("pdf", "py-pdf-sample-files")
UNREADABLE = {
    "encrypted.pdf": ("005-libreoffice-writer-password/libreoffice-writer-password.pdf", "pdf_encrypted"),
    "image-only.pdf": ("007-imagemagick-images/imagemagick-CCITTFaxDecode.pdf", "pdf_no_text"),
    "malformed.pdf": ("017-unreadable-meta-data/unreadablemetadata.pdf", "document_malformed"),
}


@pytest.mark.parametrize("name", [*UNREADABLE, "empty.pdf", "truncated.pdf"])
async def test_a_pending_source_that_cannot_be_extracted_fails_with_its_reason_and_the_switch_flips(
    kit: Kit, factory: Factory, corpus: Path, name: str
) -> None:
    org = await factory.organization()
    ready = await kit.ingest(org, "Lifecycle stage: the account moves on.")
    if name in UNREADABLE:
        data = corpus.joinpath(*SAMPLES, UNREADABLE[name][0]).read_bytes()
    elif name == "empty.pdf":
        data = b""
    else:
        whole = corpus.joinpath(*SAMPLES, "001-trivial", "minimal-document.pdf").read_bytes()
        data = whole[: len(whole) // 3]
    registered = await register_upload(
        kit.db, kit.store, organization_id=org, data=data, filename=name, media_type="application/pdf"
    )
    pending: UUID = registered.source_id
    plan = await begin_switch(kit.db, org, FAKE2, embedder=kit.lookup(FAKE2))
    assert pending in plan.source_ids

    flipped = await run_switch(kit.db, kit.store, plan, embedders=kit.lookup)

    assert flipped.to_model == FAKE2 and (await live_model(kit.db, org)).model_id == FAKE2
    assert await running_switch(kit.db, org) is None, "the switch is closed, not left open"
    async with kit.db.connection() as conn:
        row = await conn.fetchrow("SELECT status, failure_reason FROM agent.knowledge_sources WHERE id = $1", pending)
        kept = await conn.fetchval("SELECT status FROM agent.knowledge_sources WHERE id = $1", ready)
    assert row is not None and row["status"] == "failed" and row["failure_reason"], row
    if name in UNREADABLE:
        assert row["failure_reason"].startswith(UNREADABLE[name][1]), row["failure_reason"]
    assert kept == "ready"
