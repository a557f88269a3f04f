from __future__ import annotations

import asyncio
import logging
import pickle

import pytest

from context.builder import DefaultContextBuilder, RequiredContextSourceError
from context.errors import ContextSourceFailure
from context.models import ContextItem, ContextRequest, ContextSourceSpec, CutCandidate
from context.options import EmptyOptions
from context.packer import ContextPacker
from context.registry import ContextSourceRegistry
from tests.support import HANG_S
from tests.unit.context.helpers import ScriptedSource, item, policy, request, spec


def _builder(*sources: object, timeout: float = HANG_S) -> DefaultContextBuilder:
    return DefaultContextBuilder(ContextSourceRegistry(sources), ContextPacker(), source_timeout_s=timeout)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [True, "1", None])
def test_a_timeout_that_is_not_a_number_fails_construction(timeout: object) -> None:
    with pytest.raises(ValueError):
        DefaultContextBuilder(ContextSourceRegistry([]), ContextPacker(), source_timeout_s=timeout)  # type: ignore[arg-type]


def test_the_default_timeout_is_one_second_and_ints_are_accepted() -> None:
    assert DefaultContextBuilder(ContextSourceRegistry([]), ContextPacker())._timeout == 1.0
    assert DefaultContextBuilder(ContextSourceRegistry([]), ContextPacker(), source_timeout_s=2)._timeout == 2.0


async def test_reads_run_concurrently() -> None:
    gate = asyncio.Event()
    held = [ScriptedSource(name, answer=[item(name)], gate=gate) for name in ("memory", "knowledge", "dossier")]
    build = asyncio.create_task(_builder(*held).build(request(), policy(*(spec(s.name) for s in held))))
    # Serial reads would hold the first read on the closed gate and never start the second.
    await asyncio.wait_for(asyncio.gather(*(s.started.wait() for s in held)), HANG_S)
    gate.set()
    brief = await asyncio.wait_for(build, HANG_S)
    assert brief.failed_sources == [] and [s.calls for s in held] == [1, 1, 1]


async def test_the_brief_is_the_same_whatever_order_the_reads_finish_in() -> None:
    names = ("application", "memory", "knowledge")
    briefs = []
    for delays in ((0.0, 0.01, 0.02), (0.02, 0.01, 0.0), (0.01, 0.0, 0.02)):
        sources = [
            ScriptedSource(n, answer=[item(n, f"{n}1", key="k:1:a"), item(n, f"{n}2")], delay=d)
            for n, d in zip(names, delays, strict=True)
        ]
        briefs.append(await _builder(*sources).build(request(), policy(*(spec(n) for n in reversed(names)))))
    assert briefs[0] == briefs[1] == briefs[2]
    assert briefs[0].dropped == {"knowledge": 1, "memory": 1, "application": 0}


@pytest.mark.parametrize(
    "answer", [None, ("tuple",), [{"source": "memory"}], "items"], ids=["none", "tuple", "dict", "str"]
)
async def test_an_answer_that_is_not_a_list_of_items_fails_its_source(answer: object) -> None:
    class Odd:
        name = "memory"
        options_schema = EmptyOptions

        async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
            return answer  # type: ignore[return-value]

    brief = await _builder(Odd()).build(request(), policy(spec("memory")))
    assert brief.failed_sources == ["memory"]


async def test_a_failure_is_logged_with_the_source_and_the_reason(caplog: pytest.LogCaptureFixture) -> None:
    broken = ScriptedSource("knowledge", error=RuntimeError("pgvector down"))
    with caplog.at_level(logging.WARNING, logger="context.builder"):
        await _builder(broken).build(request(), policy(spec("knowledge")))
    [record] = caplog.records
    assert "knowledge" in record.getMessage() and "pgvector down" in record.getMessage()


async def test_a_read_that_cancels_itself_is_a_failure_not_a_cancelled_build() -> None:
    selfish = ScriptedSource("knowledge", error=asyncio.CancelledError())
    fine = ScriptedSource("memory", answer=[item("memory")])
    brief = await _builder(selfish, fine).build(request(), policy(spec("knowledge"), spec("memory")))
    assert brief.failed_sources == ["knowledge"] and "## Memory" in brief.text


async def test_a_name_the_policy_repeats_is_read_once() -> None:
    source = ScriptedSource("memory", answer=[item("memory")])
    brief = await _builder(source).build(request(), policy(spec("memory"), spec("memory")))
    assert source.calls == 1 and brief.dropped == {"memory": 0}


async def test_a_schema_only_registry_reports_every_source_unavailable() -> None:
    builder = DefaultContextBuilder(ContextSourceRegistry.for_publishing(), ContextPacker())
    brief = await builder.build(request(), policy(spec("memory"), spec("knowledge")))
    assert brief.failed_sources == ["memory", "knowledge"]


async def test_an_optional_failure_beside_a_required_success_still_packs() -> None:
    ok = ScriptedSource("conversation", answer=[item("conversation", "You", "hi")])
    broken = ScriptedSource("memory", error=ContextSourceFailure("down"))
    brief = await _builder(ok, broken).build(request(), policy(spec("conversation", required=True), spec("memory")))
    assert brief.failed_sources == ["memory"] and "- You: hi" in brief.text


async def test_the_required_error_survives_pickling_for_a_step_retry() -> None:
    broken = ScriptedSource("application", error=RuntimeError("x"))
    with pytest.raises(RequiredContextSourceError) as caught:
        await _builder(broken).build(request(), policy(spec("application", required=True)))
    again = pickle.loads(pickle.dumps(caught.value))
    assert again.sources == ["application"] and again.code == "required_context_source_failed"


class _CuttingSource(ScriptedSource):
    """A source that also says what it cut before the packer, as the knowledge source does in explain mode."""

    def __init__(self, name: str, cut_source: str | None = None) -> None:
        super().__init__(name, answer=[item(name, "kept one")])
        self.explained_calls = 0
        self._cut_source = cut_source or name

    async def retrieve_explained(
        self, request: ContextRequest, spec: ContextSourceSpec
    ) -> tuple[list[ContextItem], list[CutCandidate]]:
        self.explained_calls += 1
        cut = CutCandidate(
            source=self._cut_source,
            kind="knowledge",
            ref=None,
            title="below the floor",
            tokens=12,
            rank=2,
            score=0.1,
            rule="relevance_floor",
            message="fused score 0.10 under the relevance floor 0.30",
        )
        return await self.retrieve(request, spec), [cut]


async def test_explain_mode_carries_the_cuts_of_a_source_that_reports_them() -> None:
    source = _CuttingSource("knowledge")
    brief, why = await _builder(source).build_explained(request(), policy(spec("knowledge")))
    assert [(c.title, c.rule) for c in why.cut] == [("below the floor", "relevance_floor")]
    assert [e.title for e in why.items] == ["kept one"], "a cut candidate is never given to the packer"
    assert brief == await _builder(source).build(request(), policy(spec("knowledge")))
    assert source.explained_calls == 1, "a plain build never asks a source for its cuts"


async def test_a_cut_that_names_another_source_fails_its_source() -> None:
    brief, why = await _builder(_CuttingSource("knowledge", cut_source="memory")).build_explained(
        request(), policy(spec("knowledge"))
    )
    assert brief.failed_sources == ["knowledge"] and why.cut == []
