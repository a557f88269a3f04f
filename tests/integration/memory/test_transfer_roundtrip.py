"""The round trip of memory that moves (issue 46, item 4), over HTTP against the real app and database.

An organization created here holds two people, an agent definition, CRM rows and chains of every shape:
superseded revisions, a chain forgotten and then remembered again, a forgotten chain, an expired one, chains
about a company and a person, one about a company that will not exist where it goes, and a text full of
hostile characters. It is exported (`GET /v1/memory/export`), erased (`POST /v1/erasures/organizations`:
its row, CRM rows and memories go), and imported (`POST /v1/memory/imports`) into a NEW organization whose
people, definition and CRM rows the factories made again with the same emails, names and ids. The chains,
their order, heads, tombstones, subjects, times and a brief's memory items are the same (compared by
content, never by id); the chain about the missing company is refused and counted on the receipt; the
same file imported again writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from state.db import Database
from state.organizations import create_organization
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.memory.helpers import raw_memory
from tests.integration.memory.transfer_helpers import running_app

HOSTILE = (
    'Zoë said "ship it"\\n; DROP TABLE agent.memories; -- <script>alert(1)</script>\u2028\u2029\r\n'
    "\ttabs \u202eevil\u202c \U0001f389 \\u0000-not-a-null {}[] ,:  trailing spaces  "
)
"""A memory text that a careless export or import would change: quotes, escapes, separators, bidi, emoji."""
NOW = datetime.now(UTC)


@pytest.fixture
async def app(db: Database, tmp_path: Path) -> AsyncIterator[Service]:
    """The whole service on the test database (the fake embedder is the live model)."""
    async with running_app(db, tmp_path) as running:
        yield running


async def seed(db: Database, factory: Factory) -> dict[str, Any]:
    """The exporting organization (created here, so its erasure removes its row and what cascades from it)."""
    org = (await create_organization(db, "Exporter")).id
    ada = await factory.user(org, email="ada@example.test", display_name="Ada")
    bo = await factory.user(org, email="Bo@Example.test", display_name="Bo")
    agent = await factory.definition(org, name="Account agent")
    company = await factory.company(org, name="Contoso")
    person = await factory.person(org, full_name="Grace Hopper")
    gone = await factory.company(org, name="Fabrikam")
    mem = {"db": db, "org": org, "definition": agent}
    day = timedelta(days=1)

    c_ref = [{"kind": "crm.company", "id": str(company), "label": "Contoso"}]
    a = await raw_memory(**mem, refs=c_ref, attribute="observation.buying_process", text="Buys alone",
                         created_at=NOW - 9 * day)  # fmt: skip
    b = await raw_memory(**mem, refs=c_ref, attribute="observation.buying_process", text="Buys through a committee",
                         supersedes=a, created_at=NOW - 8 * day)  # fmt: skip
    await raw_memory(**mem, refs=c_ref, attribute="observation.buying_process", text="Committee of three",
                     supersedes=b, created_at=NOW - 7 * day)  # fmt: skip
    lang = await raw_memory(**mem, scope="user", user=ada, attribute="preference.language", text="Answer in German",
                            created_at=NOW - 6 * day)  # fmt: skip
    tomb = await raw_memory(**mem, scope="user", user=ada, attribute="preference.language", text=None,
                            forgotten=True, supersedes=lang, created_at=NOW - 5 * day)  # fmt: skip
    await raw_memory(**mem, scope="user", user=ada, attribute="preference.language", text="Answer in English",
                     supersedes=tomb, created_at=NOW - 4 * day)  # fmt: skip
    fmt = await raw_memory(**mem, scope="user", user=bo, attribute="preference.format", text="Use tables",
                           created_at=NOW - 6 * day)  # fmt: skip
    await raw_memory(**mem, scope="user", user=bo, attribute="preference.format", text=None, forgotten=True,
                     supersedes=fmt, created_at=NOW - 3 * day)  # fmt: skip
    p_ref = [{"kind": "crm.person", "id": str(person)}]
    await raw_memory(**mem, refs=p_ref, attribute="observation.style", text=HOSTILE, created_at=NOW - 5 * day)
    g_ref = [{"kind": "crm.company", "id": str(gone), "label": "Fabrikam"}]
    await raw_memory(**mem, refs=g_ref, attribute="observation.budget", text="Budget frozen", created_at=NOW - 5 * day)
    await raw_memory(**mem, attribute="observation.team", text="The team meets on Mondays", created_at=NOW - 2 * day,
                     expires_at=NOW + 30 * day)  # fmt: skip
    await raw_memory(**mem, scope="user", user=ada, attribute="observation.mood", text="Tired this week",
                     created_at=NOW - 3 * day, expires_at=NOW - day)  # fmt: skip
    return {"org": org, "ada": ada, "bo": bo, "company": company, "person": person, "gone": gone}


async def chains(db: Database, org: UUID) -> list[list[dict[str, Any]]]:
    """Every chain of the organization as content (no ids): walked by supersedes, in a stable order."""
    async with db.connection() as conn:
        rows = await conn.fetch(
            "SELECT m.*, lower(u.email) AS email, d.name AS definition_name,"
            " NOT EXISTS (SELECT 1 FROM agent.memories c WHERE c.supersedes_id = m.id) AS head"
            " FROM agent.memories m JOIN agent.definitions d ON d.id = m.definition_id"
            " LEFT JOIN public.users u ON u.id = m.user_id WHERE m.organization_id = $1",
            org,
        )
    by_parent = {r["supersedes_id"]: r for r in rows if r["supersedes_id"] is not None}
    out = []
    for root in sorted((r for r in rows if r["supersedes_id"] is None), key=lambda r: (r["created_at"], r["text"])):
        chain, row = [], root
        while row is not None:
            refs = row["subject_refs"] if isinstance(row["subject_refs"], list) else json.loads(row["subject_refs"])
            chain.append({
                "definition": row["definition_name"], "scope": row["scope"], "email": row["email"],
                "attribute": row["subject_key"].split(":", 2)[2], "refs": refs, "text": row["text"],
                "tombstone": row["forgotten_at"] is not None, "head": row["head"], "created_at": row["created_at"],
                "expires_at": row["expires_at"], "forgotten_at": row["forgotten_at"],
                "run": row["proposed_by_run_id"],
            })  # fmt: skip
            row = by_parent.get(row["id"])
        out.append(chain)
    return out


async def memory_items(app: Service, org: UUID, user: UUID, entities: list[dict[str, str]]) -> list[Any]:
    """The memory items of a front-door brief for `user` about `entities`: section and line, in the brief's order."""
    body = {"organization_id": str(org), "user_id": str(user), "query": "How do they buy?", "entities": entities}
    answer = await app.http.post("/v1/context/briefs", json=body, headers=app.auth)
    assert answer.status_code == 200, answer.text
    brief = answer.json()["brief"]
    items, section = [], ""
    for line in brief["text"].splitlines():
        if line.startswith("## "):
            section = line
        elif section in {"## Personal memory", "## Memory"} and line.startswith("- [agent.memory "):
            items.append((section, line.split("] ", 1)[1]))  # the revision's id is not content
    assert items, brief["text"]
    return items


async def test_export_erase_import_rebuilds_every_chain_and_refuses_the_foreign_subject(
    app: Service, factory: Factory
) -> None:
    db = app.db
    w = await seed(db, factory)
    entities = [{"kind": "crm.company", "id": str(w["company"])}, {"kind": "crm.person", "id": str(w["person"])}]
    before = await chains(db, w["org"])
    items_before = await memory_items(app, w["org"], w["ada"], entities)

    exported = await app.http.get("/v1/memory/export", params={"organization_id": str(w["org"])},
                                      headers=app.auth)  # fmt: skip
    assert exported.status_code == 200, exported.text
    assert exported.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in exported.content.decode().splitlines()]
    assert len(lines) == sum(len(c) for c in before) == 12
    assert all(line["format"] == "ac-context.memory" and line["version"] == 1 for line in lines)
    assert HOSTILE in [line["text"] for line in lines], "the text travels byte for byte"

    erased = await app.http.post("/v1/erasures/organizations", json={"organization_id": str(w["org"])},
                                     headers=app.auth)  # fmt: skip
    assert erased.status_code == 200 and erased.json()["status"] == "complete", erased.text
    assert await chains(db, w["org"]) == []

    # A new organization with the same people, definition and CRM rows (ids kept: the erasure removed them).
    new = (await create_organization(db, "Importer")).id
    ada = await factory.user(new, email="ADA@example.test", display_name="Ada")
    await factory.user(new, email="bo@example.test", display_name="Bo")
    await factory.definition(new, name="Account agent")
    await factory.company(new, id=w["company"], name="Contoso")
    await factory.person(new, id=w["person"], full_name="Grace Hopper")
    await factory.company(await factory.organization(), id=w["gone"], name="Fabrikam elsewhere")  # not the new org's

    form = {"organization_id": str(new)}
    files = {"file": ("memory.jsonl", exported.content, "application/x-ndjson")}
    imported = await app.http.post("/v1/memory/imports", data=form, files=files, headers=app.auth)
    assert imported.status_code == 200, imported.text
    receipt = imported.json()
    assert receipt["kind"] == "memory_import" and receipt["status"] == "complete"
    assert receipt["organization_id"] == str(new) and receipt["target_id"] == str(new)
    assert receipt["counts"] == {
        "chains_imported": 6, "revisions_imported": 11, "chains_imported_expired": 1, "chains_imported_forgotten": 1,
        "chains_refused_subject_not_found": 1, "revisions_refused_subject_not_found": 1, "vectors_stored": 4,
    }, "the foreign subject is refused and counted; live heads with text get a vector"  # fmt: skip
    assert "Budget" not in json.dumps(receipt) and "Fabrikam" not in json.dumps(receipt)

    after = await chains(db, new)
    assert all(r.pop("run") is None for c in after for r in c), "no run wrote an imported revision"
    expected = [c for c in before if c[0]["text"] != "Budget frozen"]
    for revision in (r for c in expected for r in c):
        revision.pop("run")
    assert after == expected, "chains, order, heads, tombstones, subjects and times are the file's"
    assert HOSTILE in [r["text"] for c in after for r in c]

    listed = await app.http.get("/v1/receipts", params={"organization_id": str(new)}, headers=app.auth)
    assert [r["id"] for r in listed.json()["items"]] == [receipt["id"]], "listed like the other receipts"

    expected_items = [i for i in items_before if "Budget frozen" not in i[1]]
    assert len(expected_items) == len(items_before) - 1
    assert await memory_items(app, new, ada, entities) == expected_items, "a brief's memory items are the same"

    again = await app.http.post("/v1/memory/imports", data=form, files=files, headers=app.auth)
    assert again.status_code == 200, again.text
    assert again.json()["counts"] == {
        "chains_already_imported": 6, "revisions_already_imported": 11,
        "chains_refused_subject_not_found": 1, "revisions_refused_subject_not_found": 1,
    }, "the same file twice writes nothing new"  # fmt: skip
    assert [[{k: v for k, v in r.items() if k != "run"} for r in c] for c in await chains(db, new)] == after
