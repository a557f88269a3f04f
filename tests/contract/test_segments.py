"""The spec's minimum contract tests for "When the brief is built", one test per bullet, named after its words.

Each drives the real `context-segment-brief` function through the real `/api/inngest` endpoint (production
mode, signed requests) with the executor harness, and counts the builder's calls.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from context.models import ContextBrief
from context.segments import BRIEF_OPEN, SystemBlock, compose_system_block
from functions.inngest.context_segment import BUILD_STEP, FUNCTION_ID, RETRIES, make_context_segment_brief
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

INSTRUCTIONS = "You are the account researcher. Answer from the brief."


class World:
    """One app serving the segment function over a scripted source and a counting builder."""

    def __init__(self) -> None:
        self.source = ScriptedConversation()
        self.builder = CountingBuilder(self.source)
        self.key = new_signing_key()
        client = production_client(self.key)
        fn = make_context_segment_brief(client, builder=lambda: self.builder)
        self.app = serve_functions(client, [fn])


@pytest.fixture
async def world() -> AsyncIterator[tuple[World, InngestExecutor]]:
    w = World()
    async with asgi_client(w.app) as http:
        yield w, InngestExecutor(http, signing_key=w.key)


async def test_a_segment_after_approval_holds_one_brief_not_two(world: tuple[World, InngestExecutor]) -> None:
    w, executor = world
    policy = conversation_policy()
    first = await executor.run(FUNCTION_ID, segment_event(0, waited=False, policy=policy), retries=RETRIES)
    assert first.status == "completed" and first.output["action"] == "build"
    stored = compose_system_block(INSTRUCTIONS, ContextBrief.model_validate(first.output["brief"]))

    w.source.facts = ["The deal moved to stage won after the approval."]  # the world moved during the wait
    after = await executor.run(FUNCTION_ID, segment_event(1, waited=True, policy=policy), retries=RETRIES)
    assert after.output["action"] == "build", "a segment resuming after an approval rebuilds its brief"
    block = compose_system_block(INSTRUCTIONS, ContextBrief.model_validate(after.output["brief"]), stored=stored)

    assert block.text.count(BRIEF_OPEN) == 1, "a rebuilt brief replaces the system block; it is never appended"
    assert "stage won" in block.text, "the block holds the new brief"
    assert "stage proposal" not in block.text, "the earlier brief must not survive into the new block"
    assert block.text.count(INSTRUCTIONS) == 1
    # No brief given means reuse the stored block, never a block without a brief.
    assert compose_system_block(INSTRUCTIONS, None, stored=block) == block


async def test_a_completed_segment_replay_rebuilds_no_brief(world: tuple[World, InngestExecutor]) -> None:
    w, executor = world
    done = await executor.run(
        FUNCTION_ID, segment_event(0, waited=False, policy=conversation_policy()), retries=RETRIES
    )
    assert done.status == "completed" and w.builder.calls == 1
    assert done.step_names == [BUILD_STEP]

    # The executor replays the handler from the top with the memoized step: the builder is not called.
    w.source.facts = ["A fact the replay must not read."]
    replayed = await executor.post(FUNCTION_ID, done.last_body)
    assert replayed.status_code == 200
    assert w.builder.calls == 1, "a replay of a completed segment uses the memoized brief and never builds"
    assert w.source.reads == 1
    assert replayed.json() == done.output


async def test_a_failed_segment_retry_can_rebuild_one(world: tuple[World, InngestExecutor]) -> None:
    w, executor = world
    w.source.fail_next = 1  # the required conversation source fails the first attempt only
    run = await executor.run(FUNCTION_ID, segment_event(0, waited=False, policy=conversation_policy()), retries=RETRIES)
    assert run.step_errors == [BUILD_STEP], "a required source failure fails the step, and the step is retried"
    assert run.status == "completed"
    assert w.builder.calls == 2, "the retry of a failed segment builds again"
    assert "stage proposal" in run.output["brief"]["text"]


async def test_a_segment_that_resumes_from_a_wait_rebuilds_one_when_the_policy_asks(
    world: tuple[World, InngestExecutor],
) -> None:
    w, executor = world
    resumed = await executor.run(
        FUNCTION_ID, segment_event(3, waited=True, policy=conversation_policy(refresh_on_resume=True)), retries=RETRIES
    )
    assert resumed.output["action"] == "build" and w.builder.calls == 1

    no_refresh = await executor.run(
        FUNCTION_ID, segment_event(3, waited=True, policy=conversation_policy(refresh_on_resume=False)), retries=RETRIES
    )
    no_wait = await executor.run(
        FUNCTION_ID, segment_event(3, waited=False, policy=conversation_policy(refresh_on_resume=True)), retries=RETRIES
    )
    assert no_refresh.output["action"] == "reuse" and no_wait.output["action"] == "reuse"
    assert no_refresh.output["brief"] is None and no_wait.output["brief"] is None
    assert w.builder.calls == 1, "a later segment without a wait, or under a policy that does not refresh, reuses"
    stored = SystemBlock(INSTRUCTIONS, "earlier brief")
    assert compose_system_block(INSTRUCTIONS, None, stored=stored) is stored
