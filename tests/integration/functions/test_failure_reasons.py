"""A document that fails leaves none of its text behind: not in its reason, not in Inngest, not in the logs.

Each bad document carries a marker in the text a parser chokes on: a PDF whose content stream breaks at
it (pypdf's message quotes 80 bytes of the stream), an HTML page whose marked section is named by it (bs4
rejects it, quoting the keyword), a DOCX (refused as unsupported) and a text file that is not UTF-8. Over
the three faces (`ac-context ingest`, an HTTP upload played to `knowledge-ingest` over the real
`/api/inngest`, and the list the HTTP API answers) the stored reason is a code and a detail of the
vocabulary (`knowledge.reasons`), the error body Inngest receives is the code and the source id (no stack,
no path), and no log record, its formatted traceback included, holds the marker.
"""

from __future__ import annotations

import json
import logging
import traceback
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from functions.app import create_app
from functions.inngest.knowledge_ingest import EVENT_UPLOADED, FUNCTION_ID, RETRIES
from knowledge.documents.extract import extract_text
from knowledge.documents.objects import LocalObjectStore
from knowledge.errors import ExtractionError
from knowledge.reasons import in_vocabulary
from state.db import Database
from state.settings import load_settings
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, Service, fake_embedders
from tests.integration.functions.support import asgi_client
from tests.integration.functions.test_dev_in_process import AUTH, _wait_for

MARKER = "ZQXMARKER7731"
"""Stands for a sentence of the document ("salary of <name> is 90000")."""


def _pdf(content: bytes) -> bytes:
    """A one-page PDF written by hand around the content stream `content`, with a correct xref table."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> "
        b"/Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)


SENTENCE = f"salary of {MARKER} is 90000".encode()
BAD: dict[str, tuple[str, bytes, str]] = {
    # A ")" where an operand belongs: pypdf raises "Invalid Elementary Object starting with b')' ...: <bytes>".
    "malformed pdf": (
        "pay.pdf",
        _pdf(b"BT /F1 12 Tf 72 700 Td ) " + SENTENCE + b" Tj ET"),
        "document_malformed: page 1 cannot be read",
    ),
    # html.parser rejects an unknown marked-section keyword, and bs4's ParserRejectedMarkup quotes it.
    "malformed html": (
        "pay.html",
        b"<html><body><p>salary of</p><![" + MARKER.encode() + b" is 90000]></body></html>",
        "document_malformed: the HTML page cannot be parsed",
    ),
    "docx": (
        "pay.docx",
        b"PK\x03\x04\x14\x00\x00\x00word/document.xml<w:t>" + SENTENCE + b"</w:t>",
        "document_type_unsupported: the document type is not supported; upload PDF, Markdown, HTML or plain UTF-8 text",
    ),
    "text not utf-8": (
        "pay.txt",
        SENTENCE + b" \xc3\x28 " + SENTENCE,
        "document_type_unsupported: the file is not UTF-8 text (invalid byte at offset 33); save it as UTF-8 or "
        "upload a PDF",
    ),
}


def _json(output: str) -> Any:
    lines = output.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(("[", "{")))
    return json.loads("\n".join(lines[start:]))


async def _reason(service: Service, source_id: UUID) -> str:
    async with service.db.connection() as conn:
        row = await conn.fetchrow("SELECT status, failure_reason FROM agent.knowledge_sources WHERE id = $1", source_id)
        models = await conn.fetch(
            "SELECT failure_reason FROM agent.knowledge_source_models WHERE source_id = $1", source_id
        )
    assert row is not None and row["status"] == "failed", row
    for model in models:
        assert MARKER not in (model["failure_reason"] or ""), "a readiness row's reason quotes the document"
    return str(row["failure_reason"])


def _logged_marker(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Every log record that holds the marker, its formatted traceback (exc_info) included."""
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    return [formatter.format(r) for r in caplog.records if MARKER in formatter.format(r)]


def _assert_bare(body: Any, code: str, source_id: UUID) -> None:
    """An error body Inngest keeps: the code and the source id, no stack, no path, nothing of the document."""
    assert isinstance(body, dict), body
    assert body.get("message") == f"{code}: source {source_id}", body
    assert not body.get("stack"), f"a stack trace went to Inngest: {body}"
    text = json.dumps(body)
    assert MARKER not in text and "Traceback" not in text and ".py" not in text and "/work" not in text, body


@pytest.mark.parametrize("kind", list(BAD))
async def test_a_bad_document_fails_with_a_reason_that_quotes_nothing_on_every_face(
    service: Service, factory: Factory, cli: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    caplog.set_level(logging.DEBUG)
    name, data, expected = BAD[kind]
    code = expected.partition(":")[0]

    # The CLI: `ac-context ingest FILE`.
    org = await factory.organization()
    path = tmp_path / "docs" / name
    path.parent.mkdir()
    path.write_bytes(data)
    done = await cli("ingest", str(path), "--org", str(org), "--json")
    assert done.exit_code == 1, done.output
    assert MARKER not in done.output, "the CLI printed the document's text"
    if name.endswith(".docx"):  # refused by its name before it is read: one line naming the caller's file
        assert done.output.startswith("error: document_type_unsupported: ") and done.output.count("\n") == 1
    else:
        (row,) = _json(done.output)
        assert row["failure_reason"] == expected
        assert await _reason(service, UUID(row["source_id"])) == expected

    # An HTTP upload, played to `knowledge-ingest` over /api/inngest.
    upload_org = await factory.organization()
    created = await service.http.post(
        "/v1/knowledge/sources", headers=service.auth, files={"file": (name, data)},
        data={"organization_id": str(upload_org)},
    )  # fmt: skip
    assert created.status_code == 202, created.text
    assert MARKER not in created.text
    source_id = UUID(created.json()["source_id"])
    event = {"name": EVENT_UPLOADED, "data": {"source_id": str(source_id), "organization_id": str(upload_org)}}
    run = await service.executor.run(FUNCTION_ID, event, retries=RETRIES)
    assert run.status == "failed" and run.function_attempts == 1, run.output
    _assert_bare(run.output, code, source_id)
    assert await _reason(service, source_id) == expected
    assert in_vocabulary(expected)

    # What every list shows.
    listed = await service.http.get(
        "/v1/knowledge/sources", headers=service.auth, params={"organization_id": str(upload_org)}
    )
    assert listed.status_code == 200 and MARKER not in listed.text, listed.text
    assert expected in listed.json()["sources"][0]["failure_reason"]

    assert not _logged_marker(caplog), "a log line carries the document's text"


async def test_a_step_that_fails_until_the_retries_run_out_sends_inngest_only_codes(
    service: Service, factory: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    """A retryable fault (the stored object cannot be read: the store's message names the server's path)."""
    caplog.set_level(logging.DEBUG)
    org = await factory.organization()
    created = await service.http.post(
        "/v1/knowledge/sources", headers=service.auth, files={"file": ("fine.md", b"# Fine\n\nReadable text.")},
        data={"organization_id": str(org)},
    )  # fmt: skip
    source_id = UUID(created.json()["source_id"])
    async with service.db.connection() as conn:
        key = await conn.fetchval("SELECT object_key FROM agent.knowledge_sources WHERE id = $1", source_id)
    stored = service.services.object_store.root / key  # type: ignore[attr-defined]
    stored.unlink()
    stored.mkdir()  # reading it fails with IsADirectoryError: an object store fault, retried

    event = {"name": EVENT_UPLOADED, "data": {"source_id": str(source_id), "organization_id": str(org)}}
    run = await service.executor.run(FUNCTION_ID, event, retries=RETRIES)

    assert run.status == "failed" and len(run.step_error_bodies) == RETRIES + 1, run.step_error_bodies
    for body in [*run.step_error_bodies, run.output]:
        _assert_bare(body, "object_store_unavailable", source_id)
    assert run.on_failure is not None and run.on_failure.status == "completed", run.on_failure
    reason = await _reason(service, source_id)
    assert reason == (
        "failed_after_retries: ingestion failed after its retries; the last error was object_store_unavailable. "
        "Retry the source to ingest it again."
    )
    assert not [r for r in caplog.records if str(service.services.object_store.root) in r.getMessage()], (  # type: ignore[attr-defined]
        "a log line names the server's path"
    )


async def test_the_failure_handler_takes_a_code_from_the_engine_error_and_never_its_text(
    service: Service, factory: Factory
) -> None:
    """Inngest hands `on_failure` the run's last error: its message is the run's text, not the layer's."""
    org = await factory.organization()
    created = await service.http.post(
        "/v1/knowledge/sources", headers=service.auth, files={"file": ("fine.md", b"# Fine\n\nReadable text.")},
        data={"organization_id": str(org)},
    )  # fmt: skip
    source_id = UUID(created.json()["source_id"])
    event = {"name": EVENT_UPLOADED, "data": {"source_id": str(source_id), "organization_id": str(org)}}
    quoting = {"name": "ValueError", "message": f"document_malformed {SENTENCE.decode()}", "stack": "Traceback…"}
    played = await service.executor._on_failure(FUNCTION_ID, event, quoting, "run-1")
    assert played is not None and played.status == "completed", played
    assert await _reason(service, source_id) == (
        "failed_after_retries: ingestion failed after its retries. Retry the source to ingest it again."
    )


def test_a_pypdf_error_record_reaches_the_log_without_the_documents_text(caplog: pytest.LogCaptureFixture) -> None:
    """pypdf logs an unknown font encoding at ERROR with its name, read from the document."""
    caplog.set_level(logging.DEBUG)
    font = b"/BaseFont /Helvetica /Encoding /" + MARKER.encode()
    data = _pdf(b"BT /F1 12 Tf 72 700 Td (hello) Tj ET").replace(b"/BaseFont /Helvetica", font)
    assert extract_text(data).text == "hello"
    assert [r for r in caplog.records if r.name.startswith("pypdf") and r.levelno >= logging.ERROR], "still logged"
    assert not _logged_marker(caplog), "a log line carries the document's text"


@pytest.mark.parametrize("kind", ["malformed pdf", "malformed html"])
def test_an_extraction_error_chains_nothing_of_the_parser(kind: str) -> None:
    """A traceback of the error, as a log handler or an engine would format it, holds nothing of the document."""
    name, data, expected = BAD[kind]
    with pytest.raises(ExtractionError) as info:
        extract_text(data, filename=name)
    assert str(info.value.reason) == expected
    assert MARKER not in "".join(traceback.format_exception(info.value)), "the parser's exception is chained"


@pytest.mark.parametrize("kind", ["malformed pdf", "malformed html"])
async def test_an_upload_run_in_process_fails_with_the_same_reason_and_logs_nothing_of_it(
    db: Database, factory: Factory, tmp_path: Path, fake_live_model: str, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture, kind: str,
) -> None:  # fmt: skip
    """Dev mode with no Inngest server: the outbox runs the ingestion here (`functions.outbox.delivery`)."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("INNGEST_DEV", "1")
    monkeypatch.setenv("INNGEST_BASE_URL", "http://127.0.0.1:9")  # nothing answers here: no Inngest server
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path, inngest_mode="dev", outbox_poll_interval_s=0.05)
    app = create_app(settings, db=db, object_store=LocalObjectStore(tmp_path / "objects"), embedders=fake_embedders())
    name, data, expected = BAD[kind]
    org = str(await factory.organization())
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        assert app.state.functions_mode == "in-process"
        files = {"file": (name, data)}
        created = await http.post("/v1/knowledge/sources", headers=AUTH, files=files, data={"organization_id": org})
        assert created.status_code == 202 and created.json()["event_status"] == "in_process", created.text
        failed = await _wait_for(http, org, "failed")
    assert failed["failure_reason"] == expected
    assert not _logged_marker(caplog), "a log line carries the document's text"


class _LeakyBuilder:
    """A builder whose failure message quotes what it read, as a library's error may."""

    async def build(self, *_: object) -> object:
        raise RuntimeError(f"could not pack: salary of {MARKER} is 90000")


async def test_an_unhandled_error_is_logged_by_its_type_and_frames_never_its_message(
    service: Service, factory: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    org = await factory.organization()
    service.services.builder = _LeakyBuilder()  # type: ignore[assignment]
    with caplog.at_level(logging.DEBUG):
        answer = await service.http.post("/v1/context/briefs", json={"organization_id": str(org)}, headers=service.auth)
    assert answer.status_code == 500 and answer.json()["error"]["code"] == "internal_error", answer.text
    assert MARKER not in answer.text
    logged = [r for r in caplog.records if "unhandled RuntimeError" in r.getMessage()]
    assert logged and ", in build" in logged[0].getMessage(), "the frames are logged, to find the fault by"
    assert _logged_marker(caplog) == [], "no log line carries the error's text"


def test_an_in_process_run_error_is_described_by_its_code_and_type_only() -> None:
    from functions.outbox.delivery import describe_run_error

    assert describe_run_error(RuntimeError(f"salary of {MARKER}")) == "RuntimeError"
    coded = ExtractionError(f"salary of {MARKER}")
    assert describe_run_error(coded) == f"{coded.code}: ExtractionError"
