"""`knowledge-ingest` driven over HTTP by the executor harness (signed, JSON round trips), and through
`inngest.experimental.mocked.trigger` for its step logic."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from uuid import UUID

import inngest
import pytest
from inngest.experimental import mocked

from functions.inngest.knowledge_ingest import EVENT_SYNC, EVENT_UPLOADED, FUNCTION_ID, RETRIES, make_knowledge_ingest
from functions.inngest.knowledge_ingest_batch import BATCH_FUNCTION_ID, EVENT_BATCH
from knowledge.embedding.registry import EmbedderRegistry, FakeEmbedder
from knowledge.errors import EmbeddingProviderError
from knowledge.ingestion.registration import register_upload
from tests.factories import Factory
from tests.integration.functions.conftest import FAKE_BATCH, FAKE_MODEL, Service

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus"
FEATURES = CORPUS / "markdown" / "fastapi-docs" / "features.md"
ENCRYPTED = (
    CORPUS / "pdf" / "py-pdf-sample-files" / "005-libreoffice-writer-password" / "libreoffice-writer-password.pdf"
)
SMALL_STEP_BYTES = 300


async def upload(service: Service, org: UUID | None, path: Path) -> UUID:
    registered = await register_upload(
        service.db, service.services.object_store, organization_id=org, data=path.read_bytes(), filename=path.name
    )
    return registered.source_id


async def source_row(service: Service, source_id: UUID) -> Any:
    async with service.db.connection() as conn:
        return await conn.fetchrow(
            "SELECT status, failure_reason, (SELECT count(*) FROM agent.knowledge_chunks c WHERE c.source_id = s.id) "
            "AS chunks FROM agent.knowledge_sources s WHERE id = $1",
            source_id,
        )


def uploaded(source_id: UUID, org: UUID | None) -> dict[str, Any]:
    return {"name": EVENT_UPLOADED, "data": {"source_id": str(source_id), "organization_id": str(org) if org else None}}


async def ingest(service: Service, org: UUID | None, path: Path) -> tuple[UUID, Any]:
    """Upload `path` and play its `knowledge-ingest` run: the source and the run."""
    source_id = await upload(service, org, path)
    return source_id, await service.executor.run(FUNCTION_ID, uploaded(source_id, org), retries=RETRIES)


def _small_and_textless(run: Any) -> None:
    for name, output in run.step_outputs.items():
        encoded = json.dumps(output)
        assert len(encoded) < SMALL_STEP_BYTES, (
            f"step {name} returned {len(encoded)} bytes: steps return ids and counts"
        )
        assert "FastAPI" not in encoded, f"step {name} leaked document text into Inngest's run state"


async def _chunks(service: Service, source_id: UUID) -> list[tuple[int, str, bool]]:
    async with service.db.connection() as conn:
        rows = await conn.fetch(
            "SELECT ordinal, text, embedding IS NOT NULL AS embedded FROM agent.knowledge_chunks "
            "WHERE source_id = $1 ORDER BY ordinal",
            source_id,
        )
    return [(r["ordinal"], r["text"], r["embedded"]) for r in rows]


class ProviderEmbedder(FakeEmbedder):
    """The fake as a provider's model would be: it does not declare `pool_safe`, so it embeds in this
    process and `knowledge-ingest` builds it with the resumable chain (one step per batch)."""


async def test_an_ingestion_under_a_local_model_is_one_ingest_step_that_returns_only_small_json(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    source_id, run = await ingest(service, org, FEATURES)

    assert run.status == "completed", run.output
    assert run.output["ready"] is True
    row = await source_row(service, source_id)
    assert row["status"] == "ready" and row["chunks"] > FAKE_BATCH
    assert run.step_names == ["plan", f"ingest {FAKE_MODEL}"], "a local model is built by the bulk core at once"
    assert run.step_outputs[f"ingest {FAKE_MODEL}"] == {"ready": True, "chunks": row["chunks"]}
    _small_and_textless(run)
    assert service.services.metrics.ingestion_outcomes.labels(outcome="ready")._value.get() == 1


async def test_a_providers_model_keeps_one_resumable_step_per_batch_and_writes_the_same_chunks(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    local_id, local = await ingest(service, org, FEATURES)
    provider = EmbedderRegistry()
    provider.register(FAKE_MODEL, lambda: ProviderEmbedder(batch_size=FAKE_BATCH), dimensions=FakeEmbedder.dimensions)
    service.services.embedders = provider
    other = await factory.organization()
    source_id, run = await ingest(service, other, FEATURES)

    assert local.status == run.status == "completed", run.output
    row = await source_row(service, source_id)
    assert row["status"] == "ready" and row["chunks"] > FAKE_BATCH
    embeds = [name for name in run.step_names if name.startswith(f"embed {FAKE_MODEL} batch")]
    assert len(embeds) == -(-row["chunks"] // FAKE_BATCH), "one step per embedding batch"
    assert run.step_names[0] == "plan" and run.step_names[1] == f"extract-and-chunk {FAKE_MODEL}"
    assert run.step_names[-1] == f"mark-ready {FAKE_MODEL}"
    _small_and_textless(run)
    chunks = await _chunks(service, source_id)
    assert chunks == await _chunks(service, local_id), "both shapes write the same chunks, every one embedded"
    assert all(embedded for _, _, embedded in chunks)


async def test_a_non_retriable_bad_pdf_marks_the_source_failed_in_one_attempt(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    source_id, run = await ingest(service, org, ENCRYPTED)

    assert run.status == "failed"
    assert run.function_attempts == 1, "bad input is not retried"
    assert run.step_errors == [], "the extraction step failed without a retry"
    assert "pdf_encrypted" in run.output["message"]
    row = await source_row(service, source_id)
    assert row["status"] == "failed" and row["failure_reason"].startswith("pdf_encrypted:")
    assert run.on_failure is not None and run.on_failure.output == {"source_id": str(source_id), "failed": False}


class BrokenEmbedder(FakeEmbedder):
    """A provider that is down for good."""

    async def _embed_batch(self, texts: list[str]) -> Any:
        raise EmbeddingProviderError("provider answered 503")


class BrokenLocalEmbedder(BrokenEmbedder):
    """The same outage on a local model, which `knowledge-ingest` builds in one step."""

    pool_safe = True


@pytest.mark.parametrize(
    ("embedder", "failing_step"),
    [(BrokenEmbedder, f"embed {FAKE_MODEL} batch 0"), (BrokenLocalEmbedder, f"ingest {FAKE_MODEL}")],
    ids=["resumable chain", "one ingest step"],
)
async def test_retries_exhausted_reach_on_failure(
    service: Service, factory: Factory, embedder: type[FakeEmbedder], failing_step: str
) -> None:
    broken = EmbedderRegistry()
    broken.register(FAKE_MODEL, embedder, dimensions=FakeEmbedder.dimensions)
    service.services.embedders = broken
    org = await factory.organization()
    source_id, run = await ingest(service, org, FEATURES)

    assert run.status == "failed"
    assert run.step_errors == [failing_step] * (RETRIES + 1), "the transient fault is retried"
    assert run.on_failure is not None and run.on_failure.status == "completed"
    row = await source_row(service, source_id)
    assert row["status"] == "failed"
    assert row["failure_reason"] == (
        "failed_after_retries: ingestion failed after its retries; the last error was "
        "embedding_provider_unavailable. Retry the source to ingest it again."
    ), "the last error's code, never its message (knowledge.ingestion.failures.after_retries)"
    if embedder is BrokenLocalEmbedder:
        assert row["chunks"] == 0, "every attempt of the one step rolled back whole"


async def test_a_rerun_of_a_finished_ingestion_is_harmless(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    source_id, first = await ingest(service, org, FEATURES)
    before = await source_row(service, source_id)
    rerun = await service.executor.run(FUNCTION_ID, uploaded(source_id, org), retries=RETRIES)
    after = await source_row(service, source_id)
    assert first.status == rerun.status == "completed"
    assert rerun.step_names == ["plan"], "a ready source has nothing left to build"
    assert dict(before) == dict(after)


def test_mocked_trigger_ingests_a_source_and_fails_a_bad_pdf(service: Service, factory: Factory) -> None:
    loop = asyncio.get_event_loop()
    org = loop.run_until_complete(factory.organization())
    good = loop.run_until_complete(upload(service, org, FEATURES))
    bad = loop.run_until_complete(upload(service, org, ENCRYPTED))
    client = mocked.Inngest(app_id="ac-context", is_production=False)
    fn = make_knowledge_ingest(client, service.slot)

    done = mocked.trigger(fn, inngest.Event(name=EVENT_UPLOADED, data={"source_id": str(good)}), client)
    assert done.status is mocked.Status.COMPLETED and done.output["ready"] is True
    assert loop.run_until_complete(source_row(service, good))["status"] == "ready"

    failed = mocked.trigger(fn, inngest.Event(name=EVENT_UPLOADED, data={"source_id": str(bad)}), client)
    assert failed.status is mocked.Status.FAILED
    assert isinstance(failed.error, inngest.NonRetriableError) and "pdf_encrypted" in str(failed.error)
    assert loop.run_until_complete(source_row(service, bad))["status"] == "failed"

    malformed = mocked.trigger(fn, inngest.Event(name=EVENT_UPLOADED, data={"source_id": "nope"}), client)
    assert isinstance(malformed.error, inngest.NonRetriableError)


async def _play(service: Service, event: inngest.Event) -> Any:
    """Play one recorded event to the function it triggers, over HTTP, as the Inngest server does."""
    fn_id = BATCH_FUNCTION_ID if event.name == EVENT_BATCH else FUNCTION_ID
    return await service.executor.run(fn_id, {"name": event.name, "data": dict(event.data)}, retries=RETRIES)


async def test_the_batch_route_and_the_batched_function_over_http_make_every_good_source_ready(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    items = [
        {"content": f"# Note {n}\n\n" + f"Customer {n} renewed plan {n}. " * 20, "filename": f"n{n}.md"}
        for n in range(40)
    ]
    items += [{"content": "   ", "filename": "blank.md"}, {"content": "\x00\x01\x02" * 300, "filename": "blob.txt"}]
    answer = await service.http.post(
        "/v1/knowledge/sources:batch", headers=service.auth, json={"organization_id": str(org), "items": items}
    )
    assert answer.status_code == 202, answer.text
    sources = answer.json()["sources"]
    assert len(sources) == 42 and {s["outcome"] for s in sources} == {"created"}
    events = [e for e in service.inngest.sent if e.name == EVENT_BATCH]
    assert len(events) == 1 and len(events[0].data["source_ids"]) == 42
    assert events[0].data["organization_id"] == str(org)

    run = await _play(service, events[0])
    assert run.status == "completed", run.output
    assert run.output.pop("seconds").keys() == {"extract", "embed", "write"}
    assert run.output == {"sources": 42, "ready": 40, "failed": 2, "unchanged": 0, "pending": 0}
    for name, output in run.step_outputs.items():
        assert len(json.dumps(output)) < SMALL_STEP_BYTES and "Customer" not in json.dumps(output), name
    rows = {s["source_id"]: await source_row(service, UUID(s["source_id"])) for s in sources}
    assert [r["status"] for r in rows.values()].count("ready") == 40
    assert rows[sources[40]["source_id"]]["failure_reason"].startswith("document_empty:")
    assert rows[sources[41]["source_id"]]["failure_reason"].startswith("document_type_unsupported:")

    again = await _play(service, events[0])  # a redelivered event changes nothing
    assert {k: v for k, v in again.output.items() if k != "seconds"} == {
        "sources": 42, "ready": 0, "failed": 2, "unchanged": 40, "pending": 0,
    }  # fmt: skip


async def test_a_batch_whose_database_write_fails_is_retried_and_resumes(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    items = [{"content": f"# Doc {n}\n\nbody {n} " * 10, "filename": f"d{n}.md"} for n in range(5)]
    await service.http.post(
        "/v1/knowledge/sources:batch", headers=service.auth, json={"organization_id": str(org), "items": items}
    )
    broken = EmbedderRegistry()
    broken.register(FAKE_MODEL, BrokenEmbedder, dimensions=FakeEmbedder.dimensions)
    healthy, service.services.embedders = service.services.embedders, broken
    event = service.inngest.sent[-1]
    failed = await _play(service, event)
    assert failed.status == "failed" and failed.step_errors == ["ingest"] * (RETRIES + 1)
    assert failed.on_failure is not None and failed.on_failure.output == {"sources": 5, "failed": 5}
    service.services.embedders = healthy
    states = [await source_row(service, UUID(i)) for i in event.data["source_ids"]]
    assert {s["status"] for s in states} == {"failed"} and all(s["chunks"] == 0 for s in states)


PRICE = "# P\n\nThe plan is {} euros per seat."


async def _search(service: Service, org: UUID) -> set[str]:
    found = await service.http.post(
        "/v1/knowledge/search", headers=service.auth,
        json={"organization_id": str(org), "query": "plan euros per seat", "include_platform": False},
    )  # fmt: skip
    assert found.status_code == 200, found.text
    return {"old" if "100 euros" in h["text"] else "new" for h in found.json()["hits"]}


async def test_a_uri_resynced_over_http_answers_old_until_its_sync_event_ran_then_new(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    body = {"organization_id": str(org), "uri": "https://help.example/pricing", "media_type": "text/markdown"}
    first = await service.http.post(
        "/v1/knowledge/sources",
        headers=service.auth,
        json={**body, "content": "# P\n\nThe plan is 100 euros per seat."},
    )
    await _play(service, service.inngest.sent[-1])
    assert await _search(service, org) == {"old"}

    same = await service.http.post(
        "/v1/knowledge/sources",
        headers=service.auth,
        json={**body, "content": "# P\n\nThe plan is 100 euros per seat."},
    )
    assert same.status_code == 200 and same.json()["outcome"] == "unchanged" and same.json()["event_id"] is None

    changed = await service.http.post(
        "/v1/knowledge/sources",
        headers=service.auth,
        json={**body, "content": "# P\n\nThe plan is 250 euros per seat."},
    )
    assert changed.status_code == 202
    assert changed.json()["outcome"] == "resync" and changed.json()["replaces"] == first.json()["source_id"]
    sync = service.inngest.sent[-1]
    assert sync.name == EVENT_SYNC and sync.data["source_id"] == changed.json()["source_id"]
    assert await _search(service, org) == {"old"}
    run = await _play(service, sync)
    assert run.status == "completed" and run.output["ready"] is True
    assert await _search(service, org) == {"new"}


async def test_an_ingestion_run_of_a_source_deleted_under_it_completes_as_deleted_without_retries(
    service: Service, factory: Factory
) -> None:
    from knowledge.ingestion.delete import delete_source

    org = await factory.organization()
    source_id = await upload(service, org, FEATURES)
    await delete_source(service.db, service.services.object_store, source_id, organization_id=org, operator=False,
                        requested_by="t")  # fmt: skip
    run = await service.executor.run(FUNCTION_ID, uploaded(source_id, org), retries=RETRIES)
    assert run.status == "completed", "a deleted source is not a failure: the run ends, nothing is retried"
    assert run.output["deleted"] is True and not run.output.get("ready")
    async with service.db.connection() as conn:
        left = await conn.fetchval("SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = $1", source_id)
    assert left == 0
