"""Every ingestion path runs the one core (`knowledge.ingestion.core`) and fails a bad document the same way.

The paths: `ac-context ingest` (the real command group), an upload over HTTP played to `knowledge-ingest`
over the real `/api/inngest`, a batch over HTTP played to `knowledge-ingest-batch`, a retry from the CLI
(`ac-context sources retry`) and from Inngest (`knowledge/source.retry.requested`), a re-sync of a URI
(`knowledge/source.sync.requested`), a re-embed (`knowledge-reembed-source`), the in-process switch
(`knowledge.switchover.run_switch`) and `ac-context demo` (what `make demo` runs). For each bad document
(encrypted, empty, a PDF with no text layer) the reason stored, and the one each path reports, is one string.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

import functions._services
import functions.demo.knowledge
import functions.inngest.knowledge_ingest
import knowledge.ingestion.core
from functions.inngest.knowledge_ingest import EVENT_RETRY, EVENT_SYNC, EVENT_UPLOADED, FUNCTION_ID, RETRIES
from functions.inngest.knowledge_ingest_batch import BATCH_FUNCTION_ID, EVENT_BATCH
from functions.inngest.knowledge_switch import EVENT_REEMBED, REEMBED_FUNCTION_ID, REEMBED_RETRIES
from knowledge.embedding.live_model import begin_switch
from knowledge.embedding.registry import FakeEmbedder
from knowledge.ingestion.core import Step
from knowledge.ingestion.registration import register_upload, register_uri
from knowledge.ingestion.sweep import retry_source
from knowledge.switchover import run_switch
from state.demo_tenant import DEMO
from tests.factories import Factory
from tests.integration.functions.conftest import FAKE_MODEL, Service

SAMPLES = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "pdf" / "py-pdf-sample-files"
BAD = {
    "encrypted": ("locked.pdf", SAMPLES / "005-libreoffice-writer-password" / "libreoffice-writer-password.pdf"),
    "empty": ("blank.md", b"   \n\n  "),
    "no text layer": ("scan.pdf", SAMPLES / "007-imagemagick-images" / "imagemagick-CCITTFaxDecode.pdf"),
}
CODES = {"encrypted": "pdf_encrypted", "empty": "document_empty", "no text layer": "pdf_no_text"}


class Fake32(FakeEmbedder):
    """A second model for the in-process switch (not pool-safe: built by the resumable steps)."""

    model_id = "test/hash-32"
    dimensions = 32


def _bytes(kind: str) -> tuple[str, bytes]:
    name, source = BAD[kind]
    return name, source.read_bytes() if isinstance(source, Path) else source


async def _stored(service: Service, source_id: UUID) -> tuple[str, str | None]:
    async with service.db.connection() as conn:
        row = await conn.fetchrow("SELECT status, failure_reason FROM agent.knowledge_sources WHERE id = $1", source_id)
    assert row is not None
    return row["status"], row["failure_reason"]


async def _failed(service: Service, source_id: UUID) -> str:
    status, reason = await _stored(service, source_id)
    assert status == "failed" and reason, (status, reason)
    return reason


def _json(output: str) -> Any:
    """The JSON a command printed (after its progress bars, which share the runner's output)."""
    lines = output.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(("[", "{")))
    return json.loads("\n".join(lines[start:]))


def _bare(message: str, source_id: UUID) -> str:
    """The stored reason of an Inngest path's error, which must be only `<code>: source <id>`."""
    code, _, subject = message.partition(": ")
    assert subject == f"source {source_id}", message
    return _REASONS[code]


_REASONS = {
    "pdf_encrypted": "pdf_encrypted: the PDF is encrypted and no password was given; upload an unencrypted copy",
    "document_empty": "document_empty: the document is empty",
    "pdf_no_text": "pdf_no_text: the PDF has 1 page but no text layer (scanned images?); run OCR first",
}


async def _demo_source(service: Service, filename: str, organization_id: UUID | None = DEMO.organization_id) -> UUID:
    """The source the demo registered for `filename` in its scope (the demo tenant, or None: the platform)."""
    async with service.db.connection() as conn:
        found = await conn.fetchval(
            "SELECT id FROM agent.knowledge_sources WHERE organization_id IS NOT DISTINCT FROM $1 AND filename = $2",
            organization_id, filename,
        )  # fmt: skip
    assert found is not None, f"the demo registered no {filename}"
    return UUID(str(found))


def _data(source_id: UUID, org: UUID, **extra: Any) -> dict[str, Any]:
    return {"source_id": str(source_id), "organization_id": str(org), **extra}


@pytest.mark.parametrize("kind", list(BAD))
async def test_every_path_fails_the_same_bad_document_with_the_same_reason(
    service: Service, factory: Factory, cli: Any, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, data = _bytes(kind)
    reasons: dict[str, str] = {}  # what each path stored
    reported: dict[str, str] = {}  # what each path said to its caller

    # The CLI: `ac-context ingest FILE` (the batch sequence, run here).
    org = await factory.organization()
    path = tmp_path / "docs" / name
    path.parent.mkdir()
    path.write_bytes(data)
    done = await cli("ingest", str(path), "--org", str(org), "--json")
    assert done.exit_code == 1, done.output
    (row,) = _json(done.output)
    reported["cli ingest"] = row["failure_reason"]
    reasons["cli ingest"] = await _failed(service, UUID(row["source_id"]))

    # An upload over HTTP, played to `knowledge-ingest` over /api/inngest.
    upload_org = await factory.organization()
    created = await service.http.post(
        "/v1/knowledge/sources", headers=service.auth, files={"file": (name, data)},
        data={"organization_id": str(upload_org)},
    )  # fmt: skip
    assert created.status_code == 202, created.text
    uploaded = UUID(created.json()["source_id"])
    run = await service.executor.run(FUNCTION_ID, {"name": EVENT_UPLOADED, "data": _data(uploaded, upload_org)})
    assert run.status == "failed" and run.function_attempts == 1
    reported["upload"] = _bare(run.output["message"], uploaded)
    reasons["upload"] = await _failed(service, uploaded)

    # A retry from Inngest: reset, then `knowledge/source.retry.requested`.
    assert (await retry_source(service.db, uploaded, organization_id=upload_org)).reset
    run = await service.executor.run(FUNCTION_ID, {"name": EVENT_RETRY, "data": _data(uploaded, upload_org)})
    assert run.status == "failed" and run.function_attempts == 1
    reported["retry (inngest)"] = _bare(run.output["message"], uploaded)
    reasons["retry (inngest)"] = await _failed(service, uploaded)

    # A batch over HTTP, played to `knowledge-ingest-batch`.
    batch_org = await factory.organization()
    answer = await service.http.post(
        "/v1/knowledge/sources:batch", headers=service.auth, files=[("file", (name, data))],
        data={"organization_id": str(batch_org)},
    )  # fmt: skip
    assert answer.status_code == 202, answer.text
    batched = UUID(answer.json()["sources"][0]["source_id"])
    event = {"name": EVENT_BATCH, "data": {"organization_id": str(batch_org), "source_ids": [str(batched)]}}
    run = await service.executor.run(BATCH_FUNCTION_ID, event, retries=RETRIES)
    assert run.status == "completed" and run.output["failed"] == 1, run.output
    reasons["batch"] = await _failed(service, batched)

    # A retry from the CLI: `ac-context sources retry ID` resets it and runs the core here.
    done = await cli("sources", "retry", str(batched), "--json")
    assert done.exit_code == 1, done.output
    reported["retry (cli)"] = _json(done.output)["failure_reason"]
    reasons["retry (cli)"] = await _failed(service, batched)

    # A re-sync: a URI's new content, played to `knowledge/source.sync.requested`.
    sync_org = await factory.organization()
    store = service.services.object_store
    uri = f"https://help.example/{kind.replace(' ', '-')}"
    live = await register_uri(service.db, store, organization_id=sync_org, uri=uri, data=b"# Fine\n\nReadable text.")
    run = await service.executor.run(FUNCTION_ID, {"name": EVENT_UPLOADED, "data": _data(live.source_id, sync_org)})
    assert run.status == "completed", run.output
    new = await register_uri(service.db, store, organization_id=sync_org, uri=uri, data=data, filename=name)
    assert new.outcome == "resync"
    run = await service.executor.run(FUNCTION_ID, {"name": EVENT_SYNC, "data": _data(new.source_id, sync_org)})
    assert run.status == "failed" and run.function_attempts == 1
    reported["re-sync"] = _bare(run.output["message"], new.source_id)
    reasons["re-sync"] = await _failed(service, new.source_id)
    assert await _stored(service, live.source_id) == ("ready", None), "the live version keeps serving"

    # A re-embed: `knowledge-reembed-source` of a pending source under the live model.
    reembed_org = await factory.organization()
    pending = await register_upload(service.db, store, organization_id=reembed_org, data=data, filename=name)
    event = {"name": EVENT_REEMBED, "data": _data(pending.source_id, reembed_org, model=FAKE_MODEL)}
    run = await service.executor.run(REEMBED_FUNCTION_ID, event, retries=REEMBED_RETRIES)
    assert run.status == "failed" and run.function_attempts == 1
    reported["re-embed"] = _bare(run.output["message"], pending.source_id)
    reasons["re-embed"] = await _failed(service, pending.source_id)

    # The in-process switch: a pending upload in its scope is built under both models, and fails on its own.
    switch_org = await factory.organization()
    await service.executor.run(FUNCTION_ID, {"name": EVENT_UPLOADED, "data": _data(live.source_id, sync_org)})
    waiting = await register_upload(service.db, store, organization_id=switch_org, data=data, filename=name)
    plan = await begin_switch(service.db, switch_org, Fake32.model_id, embedder=Fake32())
    lookup = {FAKE_MODEL: FakeEmbedder(), Fake32.model_id: Fake32()}
    flipped = await run_switch(service.db, store, plan, embedders=lookup.__getitem__)
    assert flipped.to_model == Fake32.model_id, "an unreadable upload never stops the switch"
    reasons["switch (in process)"] = await _failed(service, waiting.source_id)

    # The demo: `ac-context demo` with this document as its only one, in the demo tenant.
    demo_doc = functions.demo.knowledge._Document(DEMO.organization_id, name, data)
    monkeypatch.setattr(functions.demo.knowledge, "_documents", lambda: [demo_doc])
    monkeypatch.setenv("COLUMNS", "400")  # one table row per line: the reason is printed whole
    done = await cli("demo")
    assert done.exit_code == 0, done.output
    (line,) = [line for line in done.output.splitlines() if f"│ {name} " in line]
    reported["demo"] = line.split("│")[3].strip().removeprefix("failed: ")
    reasons["demo"] = await _failed(service, await _demo_source(service, name))

    assert len(set(reasons.values())) == 1, reasons
    reason = reasons["upload"]
    assert reason.startswith(f"{CODES[kind]}: "), reason
    # Inngest hears the code and the source id only: its run history outlives the source (`_bare`).
    assert reported == dict.fromkeys(reported, reason), "every path tells its caller the stored reason"


def _spy_on_the_core(taken: list[tuple[str, list[str]]]) -> Any:
    """A stand-in for `ingest_source_steps` that runs the core and records the names of the steps it took."""
    core = knowledge.ingestion.core.ingest_source_steps

    def spy(source_id: UUID, **options: Any) -> Any:
        names: list[str] = []
        taken.append(("durable" if options.get("durable") else "inline", names))
        steps = core(source_id, **options)
        try:
            step: Step = next(steps)
            while True:
                names.append(step.name)
                try:
                    result = yield step
                except Exception as exc:  # a failed step, thrown back into the core
                    step = steps.throw(exc)
                else:
                    step = steps.send(result)
        except StopIteration as done:
            return done.value

    return spy


async def test_a_retry_from_the_cli_and_from_inngest_run_the_same_core_sequence(
    service: Service, factory: Factory, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both enter `knowledge.ingestion.core.ingest_source_steps` and take the same steps, in the same order."""
    taken: list[tuple[str, list[str]]] = []
    spy = _spy_on_the_core(taken)
    monkeypatch.setattr(knowledge.ingestion.core, "ingest_source_steps", spy)
    monkeypatch.setattr(functions.inngest.knowledge_ingest, "ingest_source_steps", spy)
    name, data = _bytes("encrypted")
    sources = []
    for _ in range(2):
        org = await factory.organization()
        registered = await register_upload(
            service.db, service.services.object_store, organization_id=org, data=data, filename=name
        )
        run = await service.executor.run(
            FUNCTION_ID, {"name": EVENT_UPLOADED, "data": _data(registered.source_id, org)}
        )
        assert run.status == "failed"
        sources.append((registered.source_id, org))
    taken.clear()

    done = await cli("sources", "retry", str(sources[0][0]), "--json")
    assert done.exit_code == 1, done.output
    (inline,) = [names for how, names in taken if how == "inline"]
    assert (await retry_source(service.db, sources[1][0], organization_id=sources[1][1])).reset
    run = await service.executor.run(FUNCTION_ID, {"name": EVENT_RETRY, "data": _data(*sources[1])})
    assert run.status == "failed"
    durable = [names for how, names in taken if how == "durable"]
    assert durable, "the Inngest retry entered the core"
    replayed = list(dict.fromkeys(n for names in durable for n in names))  # each request replays from the top

    assert inline == replayed == ["plan", f"ingest {FAKE_MODEL}"]
    assert _json(done.output)["failure_reason"].partition(":")[0] == run.output["message"].partition(":")[0]
    assert run.output["message"] == f"pdf_encrypted: source {sources[1][0]}"


async def test_the_demo_makes_each_of_its_documents_ready_through_the_core_sequence(
    service: Service, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ac-context demo` registers its documents and runs `ingest_source_steps` on each: no loop of its own."""
    taken: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(knowledge.ingestion.core, "ingest_source_steps", _spy_on_the_core(taken))
    docs = functions.demo.knowledge._documents()
    done = await cli("demo")
    assert done.exit_code == 0, done.output
    assert [names for _how, names in taken] == [["plan", f"ingest {FAKE_MODEL}"]] * len(docs), taken
    for doc in docs:
        assert await _stored(service, await _demo_source(service, doc.filename, doc.organization_id)) == ("ready", None)
    taken.clear()
    again = await cli("demo")
    assert again.exit_code == 0, again.output
    assert [names for _how, names in taken] == [["plan"]] * len(docs), "a second run builds nothing"


ROOT = Path(__file__).resolve().parents[3]
FEATURES = ROOT.parent / "shared" / "corpus" / "markdown" / "fastapi-docs" / "features.md"


INTERFACES = ("inngest", "api", "cli", "demo", "console")
"""The interface rooms of `functions` (docs/architecture.md); the console's headers wrap every request."""


def _room(module: str) -> str | None:
    """The room of a module: `functions.<interface>`, `functions`, `knowledge.ingestion` (the core, its steps, bulk,
    the pool), `knowledge`, `state`, `context` or `memory`; None outside the project's packages (the SDK, FastAPI,
    asyncpg, the tests)."""
    top, _, rest = module.partition(".")
    if top == "functions":
        interface = rest.partition(".")[0]
        return f"functions.{interface}" if interface in INTERFACES else "functions"
    if top == "knowledge":
        return "knowledge.ingestion" if rest.partition(".")[0] == "ingestion" else "knowledge"
    return top if top in ("state", "context", "memory") else None


class Walk:
    """Records, for every call into a project module, the rooms of the call path that reaches it.

    A call path is the frame being called and its callers (`f_back`, which follows the awaits of a running
    coroutine chain). Its rooms are read from the outermost frame in, frames outside the project dropped
    and consecutive frames of one room collapsed into one: `functions.inngest -> knowledge.ingestion ->
    knowledge -> state`. A room entered twice on one call path (`knowledge -> state -> knowledge`: the
    inner room calls back into one it was called from) is a re-entry; leaving a room and entering it again
    later on another call path (`knowledge` calls `state`, returns, and calls `state` again) is not.
    """

    def __init__(self) -> None:
        self.paths: set[tuple[str, ...]] = set()
        self.files: set[str] = set()

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        room = _room(frame.f_globals.get("__name__", ""))
        if room is None:
            return
        self.files.add(frame.f_code.co_filename)
        rooms: list[str] = []
        walker = frame
        while walker is not None:
            here = _room(walker.f_globals.get("__name__", ""))
            if here is not None and (not rooms or rooms[-1] != here):
                rooms.append(here)
            walker = walker.f_back
        self.paths.add(tuple(reversed(rooms)))

    def reentries(self) -> list[tuple[str, ...]]:
        """The call paths that enter a room twice."""
        return sorted(p for p in self.paths if len(set(p)) != len(p))

    def rooms(self) -> set[str]:
        """Every room the walk entered."""
        return {room for path in self.paths for room in path}


async def test_an_upload_walks_inngest_then_the_core_then_knowledge_then_the_database_entering_no_room_twice(
    service: Service, factory: Factory
) -> None:
    """The walk of `knowledge-ingest` over the real `/api/inngest`, from an uploaded source to a ready one."""
    org = await factory.organization()
    registered = await register_upload(
        service.db, service.services.object_store, organization_id=org, data=FEATURES.read_bytes(),
        filename=FEATURES.name,
    )  # fmt: skip
    event = {"name": EVENT_UPLOADED, "data": _data(registered.source_id, org)}
    walk = Walk()
    threading.setprofile(walk)
    sys.setprofile(walk)
    try:
        run = await service.executor.run(FUNCTION_ID, event)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]

    assert run.status == "completed" and run.output["ready"] is True, run.output
    assert walk.reentries() == [], "a room entered twice on one call path"
    # The deepest path through the core, ties broken by name: the console's and the edge's wrappers make other
    # paths as long, and a set's order changes with each process's string hashes.
    deepest = max((p for p in walk.paths if "knowledge.ingestion" in p), key=lambda p: (len(p), p))
    assert deepest[-3:] == ("knowledge.ingestion", "knowledge", "state"), deepest
    assert "functions.inngest" in deepest and deepest.index("functions.inngest") < deepest.index("knowledge.ingestion")
    files = sorted(str(Path(f).relative_to(ROOT)) for f in walk.files if f.startswith(str(ROOT)))
    print(f"\nrooms: {sorted(walk.rooms())}\ndeepest path: {' -> '.join(deepest)}\n{len(files)} files: {files}")
