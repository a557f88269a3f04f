"""An organization erasure nothing can race (issue 38): uploads, batches, memory writes and brief builds sent over
HTTP while `POST /v1/erasures/organizations` runs leave no row, no object and no 500; every write refused
is 409 `organization_erasing` in the error envelope, and the receipt is complete."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from uuid import UUID

import httpx

from state.organizations import create_organization
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.support import error_code
from tests.integration.test_erasure_canary import marker, tables_holding

WRITERS = 4
"""Writers of each kind running beside the erasure."""
MOST_WRITES = 100
"""Each writer stops after this many rounds even if the erasure has not ended (it cannot, while writes land)."""


async def rows_of(service: Service, org: UUID) -> dict[str, int]:
    """Every table of `public` and `agent` with an organization_id column holding rows of `org`."""
    found: dict[str, int] = {}
    async with service.db.connection() as conn:
        tables = await conn.fetch(
            "SELECT format('%I.%I', table_schema, table_name) AS name FROM information_schema.columns"
            " WHERE table_schema IN ('public', 'agent') AND column_name = 'organization_id'"
            " AND table_name NOT IN ('removal_receipts') ORDER BY 1"
        )
        for t in tables:
            n = await conn.fetchval(f"SELECT count(*) FROM {t['name']} WHERE organization_id = $1", org)
            if n:
                found[t["name"]] = n
    return found


async def test_writes_racing_an_organization_erasure_leave_nothing_and_get_409(
    service: Service, factory: Factory, tmp_path: Path
) -> None:
    mark = marker()
    org = (await create_organization(service.db, f"Org {mark}")).id
    user = await factory.user(org)
    definition = await factory.definition(org)
    o = str(org)
    runs = [  # a run writes at most 20 memories: a fresh run every 10 rounds keeps the limit out of the way
        [await factory.run(org, definition_id=definition, status="running", user_id=user) for _ in range(10)]
        for _w in range(WRITERS)
    ]
    for n in range(3):  # something to erase before the race starts
        seeded = await service.http.post(
            "/v1/knowledge/sources", headers=service.auth,
            files={"file": (f"seed-{n}.md", f"# Seed {n} {mark}".encode())}, data={"organization_id": o},
        )  # fmt: skip
        assert seeded.status_code == 202, seeded.text
    erasing = asyncio.Event()
    answers: list[tuple[str, httpx.Response]] = []

    async def upload(w: int) -> None:
        n = after = 0
        while after < 2 and n < MOST_WRITES:  # write until the erasure ends, and twice after
            n, after = n + 1, after + erasing.is_set()
            form = {"file": (f"w{w}-{n}.md", f"# Upload {w} {n} {mark}".encode())}
            answers.append(("upload", await service.http.post(
                "/v1/knowledge/sources", headers=service.auth, files=form, data={"organization_id": o})))  # fmt: skip
            items = [{"filename": f"b{w}-{n}-{i}.md", "content": f"# Batch {w} {n} {i} {mark}"} for i in range(2)]
            body = {"organization_id": o, "items": items}
            answers.append(("batch", await service.http.post(
                "/v1/knowledge/sources:batch", headers=service.auth, json=body)))  # fmt: skip

    invocation = {"organization_id": o, "definition_id": str(definition), "user_id": str(user)}

    async def remember(w: int) -> None:
        n = after = 0
        while after < 2 and n < MOST_WRITES:
            n, after = n + 1, after + erasing.is_set()
            arguments = {"attribute": f"observation.w{w}n{n}", "text": f"note {n} {mark}", "scope": "organization"}
            body = {"invocation": {**invocation, "run_id": str(runs[w][(n - 1) // 10])}, "arguments": arguments}
            answers.append(("remember", await service.http.post(
                "/v1/memory/remember", headers=service.auth, json=body)))  # fmt: skip

    async def brief(w: int) -> None:
        n = after = 0
        while after < 2 and n < MOST_WRITES:
            n, after = n + 1, after + erasing.is_set()
            answers.append(("brief", await service.http.post(
                "/v1/context/briefs", headers=service.auth,
                json={"organization_id": o, "user_id": str(user), "query": f"upload {w} {n}"})))  # fmt: skip

    async def erase() -> httpx.Response:
        while sum(1 for kind, a in answers if kind != "brief" and a.status_code < 300) < 2 * WRITERS:
            await asyncio.sleep(0.01)  # the writers are under way
        try:
            return await service.http.post(
                "/v1/erasures/organizations", headers=service.auth, json={"organization_id": o}
            )
        finally:
            erasing.set()

    writers = [f(w) for w in range(WRITERS) for f in (upload, remember, brief)]
    erased, *_ = await asyncio.wait_for(asyncio.gather(erase(), *writers), timeout=600)

    assert erased.status_code == 200, erased.text
    receipt = erased.json()
    assert receipt["status"] == "complete" and receipt["kind"] == "organization"
    assert receipt["counts"]["agent.knowledge_sources"] >= 3 and receipt["counts"]["public.organizations"] == 1
    statuses = Counter((kind, a.status_code) for kind, a in answers)
    failed = [(kind, a.text) for kind, a in answers if a.status_code >= 500]
    assert failed == [], f"no 500 while the erasure runs: {statuses} {failed[:3]}"
    refused = [(kind, a) for kind, a in answers if kind != "brief" and a.status_code >= 400]
    assert refused, f"some writes were refused during the erasure: {statuses}"
    codes = Counter(error_code(a) for _kind, a in refused)
    assert set(codes) <= {"organization_erasing", "organization_not_found", "invalid_invocation"}, codes
    assert codes["organization_erasing"] >= 1, f"writes during the erasure answer 409 organization_erasing: {codes}"
    assert all(a.status_code == 409 for _k, a in refused if error_code(a) == "organization_erasing")
    assert all(a.status_code == 404 for _k, a in refused if error_code(a) == "organization_not_found")
    assert await rows_of(service, org) == {}, "no row of the organization is left in any table"
    assert await tables_holding(service.db, mark) == {}, "its marker is in no row"
    root = tmp_path / "objects"
    left = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and o in str(p)]
    assert left == [], f"no object under its prefix: {left}"
