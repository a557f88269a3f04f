"""The rules of memory that moves, beside the round trip: scope, a refused file, size, a person's export, the
importer's vectors, the target options, and the CLI's `memory export` and `memory import` on a real database.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import asyncpg
import numpy as np
import pytest
from typer.testing import CliRunner

import functions._services
from functions.actions.memory_transfer import export_memories, import_file
from functions.actions.scope import Caller
from functions.cli import app as cli_app
from functions.errors import ApiError
from knowledge.embedding.registry import FakeEmbedder
from memory.transfer import ImportTooLargeError, import_memories
from state.api_keys import mint_key
from state.db import Database
from state.erasure_marks import mark_organization_erasing, mark_person_erasing
from state.settings import get_settings
from tests.factories import Factory
from tests.integration.functions.conftest import FAKE_MODEL, Service, fake_embedders
from tests.integration.functions.support import error_code
from tests.integration.memory.helpers import raw_memory
from tests.integration.memory.transfer_helpers import running_app


@pytest.fixture
async def app(db: Database, tmp_path: Path) -> AsyncIterator[Service]:
    """The whole service on the test database (the fake embedder is the live model)."""
    async with running_app(db, tmp_path) as running:
        yield running


async def seed(db: Database, factory: Factory) -> dict[str, Any]:
    """An organization with two people and a few chains (one superseded, one forgotten)."""
    org = await factory.organization()
    ada = await factory.user(org, email="ada@example.test")
    bo = await factory.user(org, email="bo@example.test")
    agent = await factory.definition(org, name="Account agent")
    mem = {"db": db, "org": org, "definition": agent}
    first = await raw_memory(**mem, scope="user", user=ada, attribute="preference.language", text="German")
    await raw_memory(**mem, scope="user", user=ada, attribute="preference.language", text="English", supersedes=first)
    fmt = await raw_memory(**mem, scope="user", user=bo, attribute="preference.format", text="Tables")
    await raw_memory(**mem, scope="user", user=bo, attribute="preference.format", text=None, forgotten=True,
                     supersedes=fmt)  # fmt: skip
    await raw_memory(**mem, attribute="observation.team", text="Meets on Mondays")
    key = (await mint_key(db, organization_id=org, name="platform")).secret
    return {"org": org, "ada": ada, "bo": bo, "agent": agent, "key": {"Authorization": f"Bearer {key}"}}


async def count(db: Database, sql: str, *args: Any) -> int:
    async with db.connection() as conn:
        return int(await conn.fetchval(sql, *args))


async def export(app: Service, org: UUID, headers: dict[str, str], **params: str) -> bytes:
    answer = await app.http.get("/v1/memory/export", params={"organization_id": str(org), **params}, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.content


def upload(org: UUID, data: bytes, **fields: str) -> dict[str, Any]:
    file = ("m.jsonl", data, "application/x-ndjson")
    return {"data": {"organization_id": str(org), **fields}, "files": {"file": file}}


async def test_an_organization_key_exports_and_imports_its_own_organization_only(
    app: Service, factory: Factory
) -> None:
    a, b = await seed(app.db, factory), await seed(app.db, factory)
    mine = await export(app, a["org"], a["key"])
    assert len(mine.splitlines()) == 5

    theirs = await app.http.get("/v1/memory/export", params={"organization_id": str(b["org"])}, headers=a["key"])
    assert theirs.status_code == 403 and error_code(theirs) == "organization_forbidden", theirs.text
    into_theirs = await app.http.post("/v1/memory/imports", **upload(b["org"], mine), headers=a["key"])
    assert into_theirs.status_code == 403 and error_code(into_theirs) == "organization_forbidden", into_theirs.text
    assert await count(app.db, "SELECT count(*) FROM agent.memories WHERE organization_id = $1", b["org"]) == 5

    stranger = await factory.user(b["org"])
    person = await app.http.get("/v1/memory/export", headers=a["key"],
                                params={"organization_id": str(a["org"]), "user_id": str(stranger)})  # fmt: skip
    assert person.status_code == 404 and error_code(person) == "user_not_found", "another organization's person"


async def test_a_persons_export_holds_their_user_chains_only_and_imports_to_the_member_named(
    app: Service, factory: Factory
) -> None:
    a = await seed(app.db, factory)
    lines = [json.loads(x) for x in (await export(app, a["org"], app.auth, user_id=str(a["ada"]))).splitlines()]
    assert [(x["text"], x["user"]["email"]) for x in lines] == [("German", "ada@example.test"),
                                                                 ("English", "ada@example.test")]  # fmt: skip
    assert all("embedding" not in x and "vector" not in x for x in lines), "a file carries no vector"

    target = await factory.organization()
    someone = await factory.user(target, email="someone.else@example.test")
    agent = await factory.definition(target, name="Another name")
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    refused = await app.http.post("/v1/memory/imports", **upload(target, data), headers=app.auth)
    assert refused.status_code == 200
    assert refused.json()["counts"] == {"chains_refused_definition_not_found": 1,
                                        "revisions_refused_definition_not_found": 2}  # fmt: skip

    named = upload(target, data, definition_id=str(agent), user_id=str(someone))
    answer = await app.http.post("/v1/memory/imports", **named, headers=app.auth)
    assert answer.status_code == 200, answer.text
    assert answer.json()["counts"] == {"chains_imported": 1, "revisions_imported": 2, "vectors_stored": 1}
    async with app.db.connection() as conn:
        rows = await conn.fetch(
            "SELECT m.text, m.user_id, m.definition_id, m.subject_key, e.embedding_model, e.embedding::text AS v"
            " FROM agent.memories m LEFT JOIN agent.memory_embeddings e ON e.memory_id = m.id"
            " WHERE m.organization_id = $1 ORDER BY m.created_at, m.id", target,
        )  # fmt: skip
    assert [(r["text"], r["user_id"], r["definition_id"]) for r in rows] == [
        ("German", someone, agent), ("English", someone, agent)
    ]  # fmt: skip
    assert rows[1]["subject_key"] == f"user:{someone}:preference.language", "the key is made for the new owner"
    assert rows[0]["embedding_model"] is None, "a superseded revision is never read, so it gets no vector"
    assert rows[1]["embedding_model"] == FAKE_MODEL, "the head's vector is the importer's live model's"
    expected = (await FakeEmbedder().embed(["English"]))[0]
    assert np.allclose(json.loads(rows[1]["v"]), expected, atol=1e-6)

    foreign = upload(target, data, definition_id=str(a["agent"]))
    wrong = await app.http.post("/v1/memory/imports", **foreign, headers=app.auth)
    assert wrong.status_code == 422 and error_code(wrong) == "memory_import_target_invalid", wrong.text


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(x) for x in data.splitlines()]


def _file(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(x) + "\n" for x in lines).encode()


BROKEN: dict[str, tuple[Any, int, str]] = {
    "not-json": (lambda ls: [*ls[:2], "{not json", *ls[2:]], 3, "memory_import_line_invalid"),
    "another-format": (lambda ls: [ls[0], {**ls[1], "format": "mem0.export"}, *ls[2:]], 2,
                       "memory_import_format_unknown"),
    "a-later-version": (lambda ls: [*ls[:4], {**ls[4], "version": 2}], 5, "memory_import_format_unknown"),
    "an-unknown-field": (lambda ls: [{**ls[0], "embedding": [0.1]}, *ls[1:]], 1, "memory_import_line_invalid"),
    "a-bad-attribute": (lambda ls: [ls[0], {**ls[1], "attribute": "notes.x"}, *ls[2:]], 2,
                        "memory_import_line_invalid"),
    "out-of-order": (lambda ls: [ls[1], ls[0], *ls[2:]], 1, "memory_import_chain_broken"),
    "a-blank-text": (lambda ls: [ls[0], {**ls[1], "text": "\u200b \u3000"}, *ls[2:]], 2, "memory_import_chain_broken"),
    "a-fork": (lambda ls: [ls[0], ls[1], {**ls[1], "id": str(uuid4()), "text": "Dutch"}, *ls[2:]], 3,
               "memory_import_chain_broken"),
    "a-tombstone-with-text": (lambda ls: [*ls[:3], {**ls[3], "text": "back"}, ls[4]], 4, "memory_import_chain_broken"),
    "a-chain-changing-person": (lambda ls: [ls[0], {**ls[1], "scope": "organization", "user": None}, *ls[2:]], 2,
                                "memory_import_chain_broken"),
}  # fmt: skip


@pytest.mark.parametrize("broken", sorted(BROKEN))
async def test_a_malformed_file_is_refused_whole_naming_its_line_and_code(
    app: Service, factory: Factory, broken: str
) -> None:
    a = await seed(app.db, factory)
    lines = _lines(await export(app, a["org"], app.auth))
    edit, line, code = BROKEN[broken]
    edited = edit(lines)
    data = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in edited).encode()
    target = await factory.organization()
    await factory.user(target, email="ada@example.test")
    await factory.user(target, email="bo@example.test")
    await factory.definition(target, name="Account agent")

    answer = await app.http.post("/v1/memory/imports", **upload(target, data), headers=app.auth)

    assert answer.status_code == 422 and error_code(answer) == code, answer.text
    assert answer.json()["error"]["details"] == {"line": line}
    assert answer.json()["error"]["message"].startswith(f"line {line}: ")
    assert await count(app.db, "SELECT count(*) FROM agent.memories WHERE organization_id = $1", target) == 0
    assert await count(app.db, "SELECT count(*) FROM agent.removal_receipts WHERE organization_id = $1", target) == 0
    whole = await app.http.post("/v1/memory/imports", **upload(target, _file(lines)), headers=app.auth)
    assert whole.status_code == 200 and whole.json()["counts"]["revisions_imported"] == 5, "the file as exported"


async def test_a_file_past_the_size_bound_is_refused_before_a_line_is_read(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    with pytest.raises(ImportTooLargeError) as refused:
        await import_memories(db, org, b"x" * 101, requested_by="test", max_bytes=100)
    assert refused.value.code == "memory_import_too_large"


async def test_importing_into_an_organization_with_the_chain_already_refuses_that_chain(
    app: Service, factory: Factory
) -> None:
    a = await seed(app.db, factory)
    data = await export(app, a["org"], app.auth)
    target = await factory.organization()
    agent = await factory.definition(target, name="Account agent")
    await raw_memory(app.db, org=target, definition=agent, attribute="observation.team", text="Meets on Fridays")
    answer = await app.http.post("/v1/memory/imports", **upload(target, data), headers=app.auth)
    assert answer.status_code == 200, answer.text
    assert answer.json()["counts"] == {
        "chains_refused_chain_exists": 1, "revisions_refused_chain_exists": 1,
        "chains_refused_person_not_found": 2, "revisions_refused_person_not_found": 4,
    }, "a chain is never appended to one the organization wrote itself; people with no member are refused"  # fmt: skip
    async with app.db.connection() as conn:
        texts = [r["text"] for r in await conn.fetch("SELECT text FROM agent.memories WHERE organization_id = $1",
                                                     target)]  # fmt: skip
    assert texts == ["Meets on Fridays"]


# --- the command line -------------------------------------------------------------------------------------


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """`ac-context …` through the real group in a thread, on the test database."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("AC_CONTEXT_DEBUG", raising=False)
    monkeypatch.delenv("AC_CONTEXT_API_URL", raising=False)
    monkeypatch.setattr(functions._services, "default_embedders", fake_embedders())

    async def invoke(*args: str) -> Any:
        def call() -> Any:
            get_settings.cache_clear()
            return CliRunner().invoke(cli_app, list(args))

        return await asyncio.to_thread(call)

    yield invoke
    get_settings.cache_clear()


async def test_the_cli_exports_to_stdout_imports_a_file_and_refuses_a_bad_one_in_one_line(
    app: Service, factory: Factory, cli: Any, tmp_path: Path
) -> None:
    a = await seed(app.db, factory)
    exported = await cli("memory", "export", "--org", str(a["org"]))
    assert exported.exit_code == 0, exported.output
    assert exported.stdout.encode() == await export(app, a["org"], app.auth), "the CLI writes what the API streams"

    target = await factory.organization()
    for email in ("ada@example.test", "bo@example.test"):
        await factory.user(target, email=email)
    await factory.definition(target, name="Account agent")
    path = tmp_path / "memory.jsonl"
    path.write_text(exported.stdout, encoding="utf-8")
    imported = await cli("memory", "import", str(path), "--org", str(target), "--json")
    assert imported.exit_code == 0, imported.output
    receipt = json.loads(imported.stdout)
    assert receipt["kind"] == "memory_import" and receipt["requested_by"].startswith("cli")
    assert receipt["counts"] == {"chains_imported": 3, "revisions_imported": 5, "chains_imported_forgotten": 1,
                                 "vectors_stored": 2}  # fmt: skip

    bad = tmp_path / "bad.jsonl"
    bad.write_text(exported.stdout + "[]\n", encoding="utf-8")
    refused = await cli("memory", "import", str(bad), "--org", str(target))
    assert refused.exit_code == 1
    assert refused.output == (
        "error: memory_import_format_unknown: line 6: not an ac-context.memory line (its format tag is missing or"
        " another)\n"
    ), "one line with the code and the line"
    assert await count(app.db, "SELECT count(*) FROM agent.memories WHERE organization_id = $1", target) == 5


async def test_the_id_an_import_recorded_is_append_only_as_the_rest_of_the_revision(
    app: Service, factory: Factory
) -> None:
    a = await seed(app.db, factory)
    data = await export(app, a["org"], app.auth)
    target = await factory.organization()
    await factory.definition(target, name="Account agent")
    answer = await app.http.post("/v1/memory/imports", **upload(target, data), headers=app.auth)
    assert answer.json()["counts"]["chains_imported"] == 1
    async with app.db.connection() as conn:
        row = await conn.fetchrow("SELECT id, imported_from FROM agent.memories WHERE organization_id = $1", target)
        assert row["imported_from"] == UUID(_lines(data)[-1]["id"]), "the revision records its id in the file"
        with pytest.raises(asyncpg.CheckViolationError, match="append only"):
            await conn.execute("UPDATE agent.memories SET imported_from = NULL WHERE id = $1", row["id"])


async def test_an_import_passes_the_erasure_guard_a_person_being_erased_and_an_organization_being_erased(
    app: Service, factory: Factory
) -> None:
    a = await seed(app.db, factory)
    data = await export(app, a["org"], app.auth)
    target = await factory.organization()
    ada = await factory.user(target, email="ada@example.test")
    await factory.user(target, email="bo@example.test")
    await factory.definition(target, name="Account agent")
    grace = await factory.person(target, full_name="Grace")
    about = {**_lines(data)[-1], "id": str(uuid4()), "subject_refs": [{"kind": "crm.person", "id": str(grace)}],
             "subject_key": f"crm.person:{grace}:observation.team"}  # fmt: skip
    about["chain_id"] = about["id"]
    data += _file([about])
    async with app.db.connection() as conn, conn.transaction():
        await mark_person_erasing(conn, target, ada, subject="", receipt_id=uuid4())
    async with app.db.connection() as conn, conn.transaction():
        await mark_person_erasing(conn, target, await factory.user(target), subject=f"crm.person:{grace}",
                                  receipt_id=uuid4())  # fmt: skip

    answer = await app.http.post("/v1/memory/imports", **upload(target, data), headers=app.auth)
    assert answer.status_code == 200, answer.text
    assert answer.json()["counts"] == {
        "chains_imported": 2, "revisions_imported": 3, "chains_imported_forgotten": 1, "vectors_stored": 1,
        "chains_refused_person_erasing": 2, "revisions_refused_person_erasing": 3,
    }, "nothing is written about a person (as the user, or as the subject) while they are erased"  # fmt: skip

    other = await factory.organization()
    await factory.definition(other, name="Account agent")
    await mark_organization_erasing(app.db, other, receipt_id=uuid4())
    refused = await app.http.post("/v1/memory/imports", **upload(other, data), headers=app.auth)
    assert refused.status_code == 409 and error_code(refused) == "organization_erasing", refused.text
    assert await count(app.db, "SELECT count(*) FROM agent.memories WHERE organization_id = $1", other) == 0
    empty = await app.http.post("/v1/memory/imports", **upload(other, b""), headers=app.auth)
    assert empty.status_code == 409 and error_code(empty) == "organization_erasing", "not even a receipt is written"
    assert await count(app.db, "SELECT count(*) FROM agent.removal_receipts WHERE organization_id = $1", other) == 0


async def test_the_acts_hold_the_scope_whatever_face_calls_them(app: Service, factory: Factory) -> None:
    a, b = await seed(app.db, factory), await seed(app.db, factory)
    data = await export(app, a["org"], app.auth)
    key = Caller(organization_id=a["org"], key_id="k")
    with pytest.raises(ApiError) as refused:
        await import_file(app.services, key, b["org"], data)
    assert refused.value.code == "organization_forbidden"
    with pytest.raises(ApiError) as hidden:
        await export_memories(app.db, key, b["org"])
    assert hidden.value.code == "organization_forbidden"
    assert await count(app.db, "SELECT count(*) FROM agent.memories WHERE organization_id = $1", b["org"]) == 5
