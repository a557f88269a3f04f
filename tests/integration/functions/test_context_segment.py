"""`context-segment-brief` through `mocked.trigger`, through HTTP, and through `step.invoke` by a runtime."""

from __future__ import annotations

from typing import Any

import inngest
from inngest.experimental import mocked

from functions.inngest.context_segment import BUILD_STEP, EVENT, FUNCTION_ID, RETRIES, make_context_segment_brief
from tests.integration.functions.executor import InngestExecutor
from tests.integration.functions.support import (
    CountingBuilder,
    ScriptedConversation,
    asgi_client,
    conversation_policy,
    new_signing_key,
    production_client,
    segment_event,
    serve_functions,
)


def mocked_segment(builder: CountingBuilder) -> tuple[inngest.Function[Any], mocked.Inngest]:
    client = mocked.Inngest(app_id="ac-context", is_production=False)
    return make_context_segment_brief(client, builder=lambda: builder), client


def event(segment: int, *, waited: bool, **policy: bool) -> inngest.Event:
    return inngest.Event(
        name=EVENT, data=segment_event(segment, waited=waited, policy=conversation_policy(**policy))["data"]
    )


def test_mocked_trigger_builds_segment_zero_and_reuses_a_later_segment_without_a_wait(session_loop: object) -> None:
    builder = CountingBuilder(ScriptedConversation())
    fn, client = mocked_segment(builder)
    built = mocked.trigger(fn, event(0, waited=False), client)
    assert built.status is mocked.Status.COMPLETED and built.output["action"] == "build"
    assert "stage proposal" in built.output["brief"]["text"]
    reused = mocked.trigger(fn, event(2, waited=False), client)
    assert reused.output["action"] == "reuse" and reused.output["brief"] is None
    assert builder.calls == 1


def test_mocked_trigger_with_a_memoized_build_never_calls_the_builder(session_loop: object) -> None:
    builder = CountingBuilder(ScriptedConversation())
    fn, client = mocked_segment(builder)
    memo = {"text": "memoized", "items": [], "tokens": 1, "per_source_tokens": {}, "dropped": {}, "failed_sources": []}
    replay = mocked.trigger(fn, event(0, waited=False), client, step_stubs={BUILD_STEP: memo})
    assert replay.output["brief"]["text"] == "memoized" and builder.calls == 0


def test_a_required_source_failure_fails_the_step_and_the_final_message_keeps_the_source_names(
    session_loop: object,
) -> None:
    source = ScriptedConversation(fail_next=100)
    builder = CountingBuilder(source)
    fn, client = mocked_segment(builder)
    failed = mocked.trigger(fn, event(0, waited=False), client)
    assert failed.status is mocked.Status.FAILED
    assert "required context source(s) failed: conversation" in str(failed.error)
    assert builder.calls > 1, "a required source failure is retried"

    bad = mocked.trigger(fn, inngest.Event(name=EVENT, data={"segment": -1}), client)
    assert isinstance(bad.error, inngest.NonRetriableError)


async def test_over_http_the_final_failure_message_keeps_the_source_names() -> None:
    source = ScriptedConversation(fail_next=100)
    builder = CountingBuilder(source)
    key = new_signing_key()
    client = production_client(key)
    app = serve_functions(client, [make_context_segment_brief(client, builder=lambda: builder)])
    async with asgi_client(app) as http:
        run = await InngestExecutor(http, signing_key=key).run(
            FUNCTION_ID, segment_event(0, waited=False, policy=conversation_policy()), retries=RETRIES
        )
    assert run.status == "failed"
    assert run.step_errors == [BUILD_STEP] * (RETRIES + 1), "the step is retried until its attempts run out"
    assert "required context source(s) failed: conversation" in run.output["message"]


async def test_the_agent_runtime_can_invoke_the_segment_brief_with_step_invoke() -> None:
    builder = CountingBuilder(ScriptedConversation())
    key = new_signing_key()
    client = production_client(key)
    segment = make_context_segment_brief(client, builder=lambda: builder)

    @client.create_function(fn_id="test-agent-runtime", trigger=inngest.TriggerEvent(event="test/agent.run"))
    async def runtime(ctx: inngest.Context) -> dict[str, Any]:
        answer = await ctx.step.invoke("segment-0-brief", function=segment, data=dict(ctx.event.data))
        assert isinstance(answer, dict)
        return {"action": answer["action"], "text": answer["brief"]["text"]}

    app = serve_functions(client, [segment, runtime])
    data = segment_event(0, waited=False, policy=conversation_policy())["data"]
    async with asgi_client(app) as http:
        run = await InngestExecutor(http, signing_key=key).run(
            "test-agent-runtime", {"name": "test/agent.run", "data": data}
        )
    assert run.status == "completed", run.output
    assert run.output["action"] == "build" and "stage proposal" in run.output["text"]
    assert builder.calls == 1
