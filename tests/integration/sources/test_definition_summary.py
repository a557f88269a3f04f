"""The `definition_summary` source: published definitions of the organization and the platform templates."""

from __future__ import annotations

from context.sources.definition_summary import DefinitionSummaryContextSource
from state.db import Database
from tests.integration.sources.helpers import AppFactory, request, spec


async def test_published_own_and_platform_definitions_with_summary_keys(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    other = await app.organization()
    own = await app.definition(org, name="Researcher", safe_summary="Researches accounts.")
    template = await app.definition(None, definition_kind="workflow", name="Onboarding", safe_summary="Onboards.")
    await app.definition(org, name="Draft", status="draft", safe_summary="never shown")
    await app.definition(org, name="Old", status="archived", safe_summary="never shown")
    await app.definition(other, name="Theirs", safe_summary="never shown")
    items = await DefinitionSummaryContextSource(db).retrieve(request(org), spec("definition_summary"))
    assert [i.subject_key for i in items] == [
        f"agent.definition:{own}:summary",
        f"agent.definition:{template}:summary",
    ], "own first, then platform templates; no draft, archived or foreign definition"
    assert items[0].title == "Agent Researcher" and "Researches accounts." in items[0].body
    assert items[1].title == "Workflow Onboarding" and "platform template" in items[1].body
    assert all("never shown" not in i.body for i in items)


async def test_limit_caps_definitions_and_zero_reads_nothing(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    for n in range(4):
        await app.definition(org, name=f"Skill {n}", definition_kind="skill")
    source = DefinitionSummaryContextSource(db)
    assert len(await source.retrieve(request(org), spec("definition_summary", limit=2))) == 2
    assert await source.retrieve(request(org), spec("definition_summary", limit=0)) == []
