"""No Inngest function sends a stack trace or a server path in its failure output (functions/inngest/failures.py).

Every function the catalog builds is driven to failure through the real `/api/inngest` endpoint, as the
Inngest server drives it (the executor harness): once with an event whose data is malformed, and once with
the database refusing connections (so every step that reads fails, retries, and the function fails). Every
body the SDK sent back (each step error, the function's failure, its on-failure handler's answer) is read as
JSON text, and none may hold a traceback (`Traceback`, `File "`, a `.py` name, `site-packages`) or an
absolute path. The failure still names its error class and says what went wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest

from functions._services import ServiceSlot
from functions.inngest.catalog import build_functions
from tests.integration.functions.conftest import Service
from tests.integration.functions.executor import RunResult
from tests.integration.functions.support import RecordingInngest

FORBIDDEN = ("Traceback", 'File "', ".py", "site-packages", "/work", "/tmp", "/usr", "/home", "/root")
ABSOLUTE_PATH = re.compile(r"(?:^|[\s'\"(=:,\[])/(?:[\w.\-]+/)+[\w.\-]*")
MALFORMED = {
    "source_id": "not-a-uuid", "source_ids": ["x"], "organization_id": "nobody", "request": "not a request",
    "model": 5, "segment": None, "policy": "x",
}  # fmt: skip


def _function_ids() -> list[str]:
    client = RecordingInngest(app_id="ac-context", is_production=False)
    return sorted(fn.id for fn in build_functions(client, ServiceSlot()))


FUNCTIONS = _function_ids()


def _bodies(run: RunResult) -> list[Any]:
    bodies: list[Any] = [*run.step_error_bodies, run.output]
    if run.on_failure is not None:
        bodies += _bodies(run.on_failure)
    return bodies


def _assert_quiet(fn_id: str, run: RunResult) -> None:
    """The run failed, and no body it sent holds a stack or a path; the failure names its class and says why."""
    assert run.status == "failed", f"{fn_id} was meant to fail: {run.status} {run.output!r}"
    for body in _bodies(run):
        text = json.dumps(body)
        for word in FORBIDDEN:
            assert word not in text, f"{fn_id} sent {word!r} to Inngest: {text[:600]}"
        found = ABSOLUTE_PATH.search(text)
        assert found is None, f"{fn_id} sent a path {found.group()!r} to Inngest: {text[:600]}"
    assert isinstance(run.output, dict) and run.output.get("name") and run.output.get("message"), run.output


@pytest.fixture
async def refusing(service: Service, pg_server_url: str, db_url: str) -> AsyncIterator[None]:
    """The test database refuses connections and its open ones are ended, then it is opened again."""
    name = urlsplit(db_url).path.lstrip("/")
    admin = await asyncpg.connect(pg_server_url)
    try:
        await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            name,
        )
        yield
    finally:
        await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        await admin.close()


def test_the_catalog_is_every_function() -> None:
    assert len(FUNCTIONS) >= 7 and all(f.startswith("ac-context-") for f in FUNCTIONS), FUNCTIONS


@pytest.mark.parametrize("fn_id", FUNCTIONS)
async def test_a_function_failing_on_malformed_data_sends_no_stack_or_path(service: Service, fn_id: str) -> None:
    run = await service.executor.run(fn_id, {"name": "test/malformed", "data": MALFORMED}, retries=1)
    if run.status == "completed":
        pytest.skip(f"{fn_id} reads no event data: it cannot fail on it (the database case drives it)")
    _assert_quiet(fn_id, run)


@pytest.mark.parametrize("fn_id", FUNCTIONS)
async def test_a_function_failing_on_the_database_sends_no_stack_or_path(
    service: Service, refusing: None, fn_id: str
) -> None:
    data = {"source_id": "00000000-0000-4000-8000-000000000001", "organization_id": None, "source_ids": []}
    run = await service.executor.run(fn_id, {"name": "test/db-down", "data": data}, retries=1)
    _assert_quiet(fn_id, run)
    if fn_id.endswith(("-ingest", "-sweep-pending", "-expiry-sweep")):
        assert "<path>" in json.dumps(_bodies(run)), "the socket folder in a message is written <path>"
