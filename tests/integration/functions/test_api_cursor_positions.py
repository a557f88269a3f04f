"""A forged cursor position is 422 `invalid_cursor` on every list, never a 5xx (state/paging.py).

A caller can decode a `next_cursor`, keep its list name and fingerprint, and rewrite the position. The
rule: whatever the position holds (a timestamp PostgreSQL or Python cannot hold once moved to UTC, an
integer outside its column's type, text with NUL or a lone surrogate, a malformed UUID, a value of the
wrong JSON type), the list answers 200 or 422 `invalid_cursor`; the position is checked in the core, once,
so no list reaches the database with it. The lists are every caller of `state.paging.start`: memories,
receipts, keys, organizations, sources and a source's chunks (`test_every_paged_list_is_covered` holds
the set). A property test draws positions over those shapes; the issue's own reproductions are named cases.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from functions.inngest.knowledge_ingest import EVENT_UPLOADED
from functions.inngest.knowledge_ingest import FUNCTION_ID as INGEST
from functions.inngest.knowledge_ingest import RETRIES as INGEST_RETRIES
from knowledge.ingestion.registration import register_upload
from state.api_keys import mint_key
from state.brief_receipts import page_citing, page_segments
from state.paging import InvalidCursorError, fingerprint
from state.receipts import begin_receipt, finish_receipt
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.support import error_code
from tests.integration.memory.helpers import make_world, world_memory

ROOT = Path(__file__).resolve().parents[3]
LONG = "\n\n".join(f"## Part {i}\n\n" + " ".join(f"word{i}x{j}" for j in range(120)) for i in range(6))


@dataclass(frozen=True)
class Listing:
    """One paged list over HTTP: its path and filters, and the kinds of its cursor's position."""

    name: str
    path: str
    params: dict[str, str]
    shape: tuple[str, ...]
    fingerprint: str = ""


def _encode(parts: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(parts).encode()).decode().rstrip("=")


def _decode(cursor: str) -> list[Any]:
    return json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))  # type: ignore[no-any-return]


async def _lists(service: Service, factory: Factory) -> list[Listing]:
    """Two rows in every list, and each list with the fingerprint of its real `next_cursor`."""
    world = await make_world(factory)
    org = world.org
    await factory.organization()
    for i in range(2):
        await world_memory(service.db, world, text=f"fact {i}", attribute=f"observation.n{i}")
        await mint_key(service.db, organization_id=org, name=f"k{i}")
        async with service.db.connection() as conn:
            receipt = await begin_receipt(conn, "source", organization_id=org, target_id=uuid4(), requested_by="t")
            await finish_receipt(conn, receipt.id)
    registered = await register_upload(
        service.db, service.services.object_store, organization_id=org, data=LONG.encode(), filename="doc.md"
    )
    await register_upload(service.db, service.services.object_store, organization_id=org, data=b"two", filename="b.md")
    event = {"name": EVENT_UPLOADED, "data": {"source_id": str(registered.source_id), "organization_id": str(org)}}
    await service.executor.run(INGEST, event, retries=INGEST_RETRIES)
    stamp_id, stamp_key, ordinal = ("timestamp", "uuid"), ("timestamp", "key_id"), ("int4",)
    lists = [
        Listing("memories", "/v1/memory/memories", {"organization_id": str(org)}, stamp_id),
        Listing("receipts", "/v1/receipts", {"organization_id": str(org)}, stamp_id),
        Listing("keys", "/v1/keys", {"organization_id": str(org)}, stamp_key),
        Listing("organizations", "/v1/organizations", {}, stamp_id),
        Listing("sources", "/v1/knowledge/sources", {"organization_id": str(org)}, stamp_id),
        Listing("chunks", f"/v1/knowledge/sources/{registered.source_id}/chunks", {"organization_id": str(org)},
                ordinal),
    ]  # fmt: skip
    found = []
    for listing in lists:
        page = await service.http.get(listing.path, params={**listing.params, "limit": "1"}, headers=service.auth)
        assert page.status_code == 200 and page.json()["next_cursor"], (listing.name, page.text)
        name, fingerprint, *position = _decode(page.json()["next_cursor"])
        assert name == listing.name and len(position) == len(listing.shape), (name, position)
        found.append(Listing(listing.name, listing.path, listing.params, listing.shape, fingerprint))
    return found


async def _ask(service: Service, listing: Listing, position: list[Any]) -> httpx.Response:
    cursor = _encode([listing.name, listing.fingerprint, *position])
    params = {**listing.params, "cursor": cursor, "limit": "2"}
    return await service.http.get(listing.path, params=params, headers=service.auth)


def _judge(answer: httpx.Response, listing: Listing, position: list[Any]) -> None:
    what = f"{listing.name} list, position {position!r}: {answer.status_code} {answer.text[:300]}"
    assert answer.status_code in (200, 422), f"a forged cursor position is never a 5xx ({what})"
    if answer.status_code == 422:
        assert error_code(answer) == "invalid_cursor", what


_WRONG_TYPES = st.one_of(
    st.none(), st.booleans(), st.floats(allow_nan=False), st.lists(st.integers(), max_size=2), st.just({})
)
_OFFSETS = st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(lambda m: timezone(timedelta(minutes=m)))
_TEXT = st.text(st.characters(exclude_categories=()), max_size=12)  # surrogates and NUL included
_TIMESTAMPS = st.one_of(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999), timezones=_OFFSETS)
    .map(lambda d: d.isoformat()),
    st.datetimes().map(lambda d: d.isoformat()),  # no offset
    st.sampled_from(["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59.999999-14:00", "0001-01-01T00:00:00+00:00",
                     "9999-12-31T23:59:59.999999+00:00", "infinity", "-infinity", "2026-02-30T00:00:00+00:00"]),
    _TEXT, st.integers(), _WRONG_TYPES,
)  # fmt: skip
_UUIDS = st.one_of(
    st.uuids().map(str),
    st.uuids().map(lambda u: u.hex),
    st.uuids().map(lambda u: f"{u}{'x'}"),
    st.text(st.sampled_from("0123456789abcdefg-{}"), min_size=30, max_size=40),
    _TEXT, st.integers(), _WRONG_TYPES,
)  # fmt: skip
_INTS = st.one_of(
    st.integers(min_value=-(2**31) - 2, max_value=2**31 + 2),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from([2**31, 2**31 - 1, -(2**31), -(2**31) - 1, 2**63, -(2**63) - 1, 2**63 - 1]),
    st.floats(allow_nan=False), st.text(max_size=4), _WRONG_TYPES,
)  # fmt: skip
_KEY_IDS = st.one_of(
    st.text(st.sampled_from("0123456789abcdef"), min_size=16, max_size=16),
    _TEXT, st.sampled_from(["\x00", "0123456789abcde\x00", "\ud800", "a\udfff"]), st.integers(), _WRONG_TYPES,
)  # fmt: skip
_KINDS = {"timestamp": _TIMESTAMPS, "uuid": _UUIDS, "int4": _INTS, "key_id": _KEY_IDS}

# The issue's reproductions, and their neighbours.
NAMED: dict[str, list[list[Any]]] = {
    "timestamp": [["0001-01-01T00:00:00+14:00", str(UUID(int=0))], ["9999-12-31T23:59:59.999999-00:01", str(uuid4())]],
    "int4": [[2**31], [-(2**31) - 1], [2**63], [1.5], [True], ["3"]],
    "key_id": [["2026-12-04T21:00:00+00:00", "\x00"], ["2026-12-04T21:00:00+00:00", "\ud800"]],
}


async def test_the_issues_forged_positions_are_invalid_cursor_on_every_list(service: Service, factory: Factory) -> None:
    lists = await _lists(service, factory)
    tried = 0
    for listing in lists:
        cases: list[list[Any]] = []
        if listing.shape[0] == "timestamp":
            for case in NAMED["timestamp"]:
                cases.append([case[0], *(NAMED["key_id"][0][1:] if listing.shape[1] == "key_id" else case[1:])])
        if listing.shape == ("timestamp", "key_id"):
            cases += NAMED["key_id"]
        if listing.shape == ("int4",):
            cases += NAMED["int4"]
        for position in cases:
            answer = await _ask(service, listing, position)
            assert answer.status_code == 422, f"{listing.name} {position!r}: {answer.status_code} {answer.text[:300]}"
            assert error_code(answer) == "invalid_cursor", (listing.name, position)
            tried += 1
    assert tried >= 12


async def test_any_forged_position_is_200_or_invalid_cursor_never_5xx(service: Service, factory: Factory) -> None:
    lists = await _lists(service, factory)
    loop = asyncio.get_running_loop()

    @st.composite
    def forged(draw: st.DrawFn) -> tuple[Listing, list[Any]]:
        listing = draw(st.sampled_from(lists))
        return listing, [draw(_KINDS[kind]) for kind in listing.shape]

    @settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(forged())
    def holds(case: tuple[Listing, list[Any]]) -> None:
        listing, position = case
        answer = asyncio.run_coroutine_threadsafe(_ask(service, listing, position), loop).result(timeout=60)
        _judge(answer, listing, position)

    await asyncio.to_thread(holds)


def test_every_paged_list_is_covered() -> None:
    """The lists above are every caller of `state.paging.start` (or `read_cursor`): a new list joins the test."""
    names: set[str] = set()
    for path in ROOT.glob("*/**/*.py"):
        if ".venv" in path.parts or "tests" in path.parts:
            continue
        for match in re.finditer(r"\b(?:start|read_cursor)\(\s*cursor,\s*(\"(\w+)\"|(_\w+))", path.read_text()):
            if match.group(2):
                names.add(match.group(2))
            else:
                constant = re.search(rf"^{match.group(3)}\s*=\s*\"(\w+)\"", path.read_text(), re.MULTILINE)
                assert constant, f"{path}: the list name {match.group(3)} is not a literal"
                names.add(constant.group(1))
    assert names == {"memories", "receipts", "keys", "organizations", "sources", "chunks"} | set(CONSOLE_ONLY), names


CONSOLE_ONLY = ("cited_by", "segment_briefs")
"""The console's lists of brief receipts, with no API route: their positions are checked by the same `start`."""


@pytest.mark.parametrize("listing", CONSOLE_ONLY)
async def test_a_forged_position_on_a_console_only_list_is_invalid_cursor(service: Service, listing: str) -> None:
    org = uuid4()
    ids = [str(uuid4())]
    scope = fingerprint(org, "agent.memory", *ids) if listing == "cited_by" else fingerprint(org, None)
    forged = [*NAMED["timestamp"], [True, str(uuid4())], ["2026-12-04T21:00:00+00:00", "x"], [1, 2, 3]]
    for position in forged:
        cursor = _encode([listing, scope, *position])
        with pytest.raises(InvalidCursorError):
            if listing == "cited_by":
                await page_citing(service.db, organization_id=org, ref_kind="agent.memory", ref_ids=ids, cursor=cursor)
            else:
                await page_segments(service.db, organization_id=org, cursor=cursor)
