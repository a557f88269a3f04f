"""OpenTelemetry over the real service (issue 46, item 2): one trace per brief with a span per source, the
`knowledge_search` statement's span and the GenAI conventions' names; memory reads, writes and erasure, the
ingestion steps and the Inngest run as spans; and no document, memory or query text in any span, event or
metric unless the operator turns capture on."""

from __future__ import annotations

from collections import Counter
from typing import Any

import asyncpg.connection
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from context.policies import FRONT_DOOR, FRONT_DOOR_KNOWLEDGE_LIMIT
from functions.inngest.knowledge_ingest import EVENT_UPLOADED, FUNCTION_ID, RETRIES
from knowledge.ingestion.registration import register_upload
from state import telemetry
from tests.factories import Factory
from tests.integration.functions.conftest import FAKE_MODEL
from tests.integration.telemetry.conftest import Recorded, Traced

DOC_MARK = "Wallaroozinc"
MEMORY_MARK = "Xylophonique"
QUERY_MARK = "Quokkamarmot"
DOCUMENT = (
    f"# Pricing\n\nThe {DOC_MARK} tier costs eleven zorkmids a month and includes the {DOC_MARK} dashboard. "
    f"Every {DOC_MARK} customer gets a named engineer.\n"
).encode()
MEMORY_TEXT = f"Answer in {MEMORY_MARK} German, briefly"
QUERY = f"{QUERY_MARK}: what does the {DOC_MARK} tier cost?"
MARKS = (DOC_MARK, MEMORY_MARK, QUERY_MARK)


async def _scenario(recorded: Recorded, factory: Factory) -> dict[str, Any]:
    """Ingest a document, remember, brief (the front door), forget, erase: each through the service."""
    service = recorded.service
    tenant = await factory.tenant(users=1)
    org, user = tenant.id, tenant.user
    agent = await factory.definition(org)
    runs = [await factory.run(org, definition_id=agent) for _ in range(2)]

    registered = await register_upload(
        service.db, service.services.object_store, organization_id=org, data=DOCUMENT, filename="pricing.md"
    )
    event = {"name": EVENT_UPLOADED, "data": {"source_id": str(registered.source_id), "organization_id": str(org)}}
    run = await service.executor.run(FUNCTION_ID, event, retries=RETRIES)
    assert run.status == "completed", run.output

    invocation = {"organization_id": str(org), "definition_id": str(agent), "user_id": str(user)}
    remembered = await service.http.post(
        "/v1/memory/remember",
        headers=service.auth,
        json={
            "invocation": {**invocation, "run_id": str(runs[0])},
            "arguments": {"attribute": "preference.language", "text": MEMORY_TEXT, "scope": "user"},
        },
    )
    assert remembered.status_code < 300, remembered.text
    memory_id = remembered.json()["memory_id"]

    answer = await service.http.post(
        "/v1/context/briefs",
        headers=service.auth,
        json={"organization_id": str(org), "user_id": str(user), "query": QUERY},
    )
    assert answer.status_code == 200, answer.text
    brief = answer.json()["brief"]
    assert DOC_MARK in brief["text"] and MEMORY_MARK in brief["text"], "the brief holds both texts"
    request = _one(recorded.finished(), "POST /v1/context/briefs")
    brief_spans = [s for s in recorded.finished() if s.context.trace_id == request.context.trace_id]

    forgot = await service.http.post(
        "/v1/memory/forget",
        headers=service.auth,
        json={"invocation": {**invocation, "run_id": str(runs[1])}, "arguments": {"memory_id": memory_id}},
    )
    assert forgot.status_code < 300, forgot.text
    listed = await service.http.get("/v1/keys", params={"cursor": QUERY}, headers=service.auth)
    assert listed.status_code == 422, "a query string that holds what someone typed (a bad cursor here)"
    erased = await service.http.post(
        "/v1/erasures/users", headers=service.auth, json={"organization_id": str(org), "user_id": str(user)}
    )
    assert erased.status_code == 200, erased.text
    return {"org": org, "brief": brief, "brief_spans": brief_spans, "memory_id": memory_id, "source": registered}


def _one(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, f"one span {name!r}, got {[s.name for s in spans]}"
    return found[0]


def _children(spans: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def _within(spans: list[ReadableSpan], span: ReadableSpan, ancestor: ReadableSpan) -> bool:
    by_id = {s.context.span_id: s for s in spans}
    current: ReadableSpan | None = span
    while current is not None and current.parent is not None:
        if current.parent.span_id == ancestor.context.span_id:
            return True
        current = by_id.get(current.parent.span_id)
    return False


async def test_a_brief_is_one_trace_with_a_span_per_source_the_search_statement_and_the_conventions_names(
    traced: Traced, factory: Factory
) -> None:
    async with traced() as recorded:
        seen = await _scenario(recorded, factory)
        spans: list[ReadableSpan] = seen["brief_spans"]

        request = _one(spans, "POST /v1/context/briefs")
        everything = recorded.finished()
        build = _one(spans, "context_brief")
        assert [s for s in everything if s.name == "context_brief"] == [build], "one build for one brief"
        assert {s.context.trace_id for s in everything if _within(everything, s, request)} == {
            request.context.trace_id
        }, "one trace per brief"
        assert _within(spans, build, request)
        assert build.attributes is not None and build.attributes["ac.brief.tokens"] == seen["brief"]["tokens"]

        sources = {s.name.removeprefix("context_source "): s for s in _children(spans, build)}
        assert set(sources) == {spec.name for spec in FRONT_DOOR.sources}, "a span per source of the policy"
        for name, span in sources.items():
            attributes = span.attributes or {}
            assert attributes["ac.outcome"] == "ok", (name, attributes)
            assert (
                attributes["ac.context.kept"] + attributes["ac.context.dropped"] == attributes["ac.context.retrieved"]
            )
            assert attributes["ac.context.tokens"] == seen["brief"]["per_source_tokens"].get(name, 0)
        knowledge = sources["knowledge"].attributes or {}
        assert knowledge["ac.context.kept"] >= 1 and knowledge["ac.context.tokens"] > 0

        search = _one(spans, "retrieval knowledge_search")
        assert _within(spans, search, sources["knowledge"]), "the search is the knowledge source's child"
        assert search.attributes is not None
        assert search.attributes["gen_ai.operation.name"] == "retrieval"
        assert search.attributes["gen_ai.data_source.id"] == "knowledge_search"
        assert search.attributes["gen_ai.retrieval.top_k"] == FRONT_DOOR_KNOWLEDGE_LIMIT
        assert search.attributes["gen_ai.request.model"] == FAKE_MODEL
        statements = [s for s in spans if (s.attributes or {}).get("db.system") == "postgresql"]
        assert any(_within(spans, s, search) for s in statements), "the knowledge_search statement's own span"

        reads = [s for s in spans if (s.attributes or {}).get("gen_ai.operation.name") == "search_memory"]
        assert {(s.attributes or {})["ac.context.source"] for s in reads} == {"memory", "personal_memory"}
        for read in reads:
            attributes = read.attributes or {}
            assert attributes["gen_ai.memory.namespace"] == str(seen["org"])
            assert attributes["gen_ai.memory.store.name"] == "agent.memories"
            assert "gen_ai.retrieval.top_k" in attributes and "gen_ai.memory.search.result.count" in attributes

        operations = Counter((s.attributes or {}).get("gen_ai.operation.name") for s in everything)
        assert operations["upsert_memory"] == 1, "the remember"
        assert operations["delete_memory"] == 2, "forget and the person's erasure"
        forget = next(s for s in everything if (s.attributes or {}).get("ac.memory.delete") == "forget")
        assert (forget.attributes or {})["gen_ai.memory.id"] == seen["memory_id"]

        points = recorded.metric_points()
        durations = [p for p in points if p[0] == "ac_context.brief.duration"]
        assert durations and sum(p[2] for p in durations) == 1, "one brief duration recorded"
        outcomes = {p[1]["ac.context.source"] for p in points if p[0] == "ac_context.context.source.outcomes"}
        assert outcomes == {spec.name for spec in FRONT_DOOR.sources}
        memory_ops = {(p[1]["gen_ai.operation.name"], p[2]) for p in points if p[0] == "ac_context.memory.operations"}
        assert ("upsert_memory", 1) in memory_ops and ("delete_memory", 2) in memory_ops


async def test_ingestion_steps_and_the_inngest_run_are_spans_and_the_remember_is_upsert_memory(
    traced: Traced, factory: Factory
) -> None:
    async with traced() as recorded:
        service = recorded.service
        org = await factory.organization()
        registered = await register_upload(
            service.db, service.services.object_store, organization_id=org, data=DOCUMENT, filename="pricing.md"
        )
        event = {"name": EVENT_UPLOADED, "data": {"source_id": str(registered.source_id), "organization_id": str(org)}}
        run = await service.executor.run(FUNCTION_ID, event, retries=RETRIES)
        assert run.status == "completed", run.output
        spans = recorded.finished()
        runs = [s for s in spans if s.name.startswith("inngest_run ")]
        assert len(runs) == run.requests, "one span per request Inngest makes of the run"
        assert {(s.attributes or {})["inngest.run.id"] for s in runs} == {run.run_id}
        steps = [s for s in spans if s.name.startswith("ingest_step ")]
        assert steps and all(any(_within(spans, step, r) for r in runs) for step in steps), "steps inside the run"
        assert {(s.attributes or {})["ac.subject"] for s in steps} == {str(registered.source_id)}

        tenant = await factory.tenant(users=1)
        agent = await factory.definition(tenant.id)
        run_id = await factory.run(tenant.id, definition_id=agent)
        invocation = {
            "organization_id": str(tenant.id),
            "definition_id": str(agent),
            "user_id": str(tenant.user),
            "run_id": str(run_id),
        }
        answer = await service.http.post(
            "/v1/memory/remember",
            headers=service.auth,
            json={
                "invocation": invocation,
                "arguments": {"attribute": "observation.note", "text": MEMORY_TEXT, "scope": "organization"},
            },
        )
        assert answer.status_code < 300, answer.text
        upsert = _one(recorded.finished(), "upsert_memory agent.memories")
        attributes = upsert.attributes or {}
        assert attributes["gen_ai.operation.name"] == "upsert_memory"
        assert attributes["gen_ai.memory.id"] == answer.json()["memory_id"]
        assert attributes["gen_ai.memory.namespace"] == str(tenant.id)
        assert attributes["gen_ai.agent.id"] == str(agent)
    # Nothing leaks past the block: the state is the API's proxies again and asyncpg is unwrapped.
    assert not telemetry.enabled() and type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider"
    assert not hasattr(asyncpg.connection.Connection.fetch, "__wrapped__")


def _texts(recorded: Recorded) -> list[str]:
    """Every string a span, an event, a link or a metric point carries: names, attributes, status."""
    texts: list[str] = []
    for span in recorded.finished():
        texts.append(span.name)
        texts.extend(f"{k}={v}" for k, v in (span.attributes or {}).items())
        texts.append(str(span.status.description or ""))
        for event in span.events:
            texts.append(event.name)
            texts.extend(f"{k}={v}" for k, v in (event.attributes or {}).items())
        for link in span.links:
            texts.extend(f"{k}={v}" for k, v in (link.attributes or {}).items())
        texts.extend(f"{k}={v}" for k, v in span.resource.attributes.items())
    for name, attributes, _ in recorded.metric_points():
        texts.append(name)
        texts.extend(f"{k}={v}" for k, v in attributes.items())
    return texts


@pytest.mark.parametrize("capture_text", [False, True], ids=["default", "capture-on"])
async def test_no_document_memory_or_query_text_is_in_any_span_unless_capture_is_on(
    traced: Traced, factory: Factory, capture_text: bool
) -> None:
    async with traced(capture_text=capture_text) as recorded:
        await _scenario(recorded, factory)
        texts = _texts(recorded)
        assert len(texts) > 100, "the scenario recorded its spans"
        found = {mark: [t for t in texts if mark in t] for mark in MARKS}
        if not capture_text:
            assert found == {mark: [] for mark in MARKS}, "no text in any span, event or metric by default"
        else:
            assert found[QUERY_MARK] and found[MEMORY_MARK], f"capture on: the texts are recorded ({found})"
