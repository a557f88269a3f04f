from __future__ import annotations

import pickle

import pytest
from pydantic import BaseModel, Field

from context.errors import (
    ContextError,
    ContextMisuseError,
    DuplicateSourceError,
    ForbiddenSourceOptionError,
    PolicyPublishError,
    UnknownContextSourceError,
)
from context.options import SOURCE_OPTIONS, EmptyOptions, KnowledgeOptions, SourceOptions
from context.registry import ContextSourceRegistry, SchemaOnlySource
from tests.unit.context.helpers import ScriptedSource, policy, request, spec
from tests.unit.context.helpers import publish_locs as _locs

PUBLISHING = ContextSourceRegistry.for_publishing()


def test_lookup_by_name_and_a_specific_error_for_an_unknown_name() -> None:
    source = ScriptedSource("memory")
    registry = ContextSourceRegistry([source])
    assert registry.get("memory") is source and registry.find("memory") is source
    assert "memory" in registry and len(registry) == 1 and list(registry) == [source]
    assert registry.find("knowledge") is None
    with pytest.raises(UnknownContextSourceError) as caught:
        registry.get("knowledge")
    assert isinstance(caught.value, LookupError) and caught.value.code == "unknown_context_source"


def test_a_duplicate_never_replaces_the_first_source() -> None:
    with pytest.raises(DuplicateSourceError) as caught:
        ContextSourceRegistry([ScriptedSource("memory"), ScriptedSource("memory")])
    assert isinstance(caught.value, ValueError) and caught.value.code == "duplicate_context_source"


def test_the_publishing_registry_holds_every_declared_schema() -> None:
    assert PUBLISHING.names == list(SOURCE_OPTIONS)
    assert len(PUBLISHING.names) == 10
    for name in PUBLISHING.names:
        assert PUBLISHING.get(name).options_schema is SOURCE_OPTIONS[name]


async def test_a_schema_only_source_cannot_read() -> None:
    source = SchemaOnlySource("memory", EmptyOptions)
    with pytest.raises(ContextError):
        await source.retrieve(request(), spec("memory"))


@pytest.mark.parametrize(
    "field",
    [
        "organization", "organization_id", "org_id", "orgId", "OrganisationIds", "user", "user_id", "UserId",
        "tenant", "tenant_id", "filter", "row_filter", "where", "where_clause", "rows", "owner", "account_id",
        "subject_key", "principal", "member_ids", "sql", "query",
    ],
)  # fmt: skip
def test_a_schema_that_declares_a_tenancy_or_row_filter_is_refused(field: str) -> None:
    schema = type("Wide", (BaseModel,), {"__annotations__": {field: "str | None"}, field: None})
    with pytest.raises(ForbiddenSourceOptionError) as caught:
        ContextSourceRegistry([ScriptedSource("knowledge", options_schema=schema)])
    assert field in str(caught.value) and isinstance(caught.value, ValueError)


def test_an_aliased_filter_is_refused_too() -> None:
    class Aliased(BaseModel):
        scope_of: str | None = Field(default=None, alias="organization_id")

    with pytest.raises(ForbiddenSourceOptionError):
        ContextSourceRegistry([ScriptedSource("knowledge", options_schema=Aliased)])


def test_a_bool_switch_may_name_a_scope_but_never_a_row() -> None:
    ContextSourceRegistry([ScriptedSource("knowledge", options_schema=KnowledgeOptions)])

    class RowSwitch(SourceOptions):
        filter_rows: bool = False

    with pytest.raises(ForbiddenSourceOptionError):
        ContextSourceRegistry([ScriptedSource("knowledge", options_schema=RowSwitch)])


def test_the_publish_check_collects_every_problem_with_its_path() -> None:
    bad = policy(
        spec("memory", 0),
        spec("crm_search", 100),
        spec("knowledge", 100, options={"include_platform": 1, "depth": 3}),
        spec("memory", 100, enabled=False),
        spec("dossier", 100, required=True),
        total=0,
    )
    with pytest.raises(PolicyPublishError) as caught:
        PUBLISHING.validate(bad)
    err = caught.value
    assert _locs(err) == [
        ("sources", 0, "token_budget"),
        ("sources", 1, "name"),
        ("sources", 2, "options", "depth"),
        ("sources", 2, "options", "include_platform"),
        ("sources", 3, "name"),
        ("sources", 4, "required"),
        ("total_token_budget",),
    ]
    assert all(e["msg"] for e in err.errors)
    assert isinstance(err, ValueError) and isinstance(err, ContextMisuseError) and err.code == "policy_invalid"
    assert "sources.1.name" in str(err)


def test_options_are_validated_even_for_a_disabled_source() -> None:
    with pytest.raises(PolicyPublishError) as caught:
        PUBLISHING.validate(policy(spec("run_history", 0, enabled=False, options={"lookback_hours": 721})))
    assert _locs(caught.value) == [("sources", 0, "options", "lookback_hours")]


def test_a_valid_policy_publishes_and_is_returned() -> None:
    pol = policy(spec("knowledge", 100, options={"include_platform": True}), spec("memory", 0, enabled=False))
    assert PUBLISHING.validate(pol) is pol


def test_publish_turns_a_payload_error_into_one_publish_error() -> None:
    payload = {"sources": [{"name": "memory", "token_budget": -1, "limit": "3"}], "total_token_budget": True}
    with pytest.raises(PolicyPublishError) as caught:
        PUBLISHING.publish(payload)
    assert set(_locs(caught.value)) == {
        ("sources", 0, "token_budget"),
        ("sources", 0, "limit"),
        ("total_token_budget",),
    }
    ok = PUBLISHING.publish({"sources": [{"name": "memory", "token_budget": 5}], "total_token_budget": 5})
    assert ok.sources[0].name == "memory"


def test_publish_errors_survive_pickling_for_retries() -> None:
    with pytest.raises(PolicyPublishError) as caught:
        PUBLISHING.validate(policy(spec("nope", 1)))
    again = pickle.loads(pickle.dumps(caught.value))
    assert again.errors == caught.value.errors and str(again) == str(caught.value)


def test_every_options_schema_is_strict_closed_and_frozen() -> None:
    for name, schema in SOURCE_OPTIONS.items():
        config = schema.model_config
        assert (config.get("strict"), config.get("extra"), config.get("frozen")) == (True, "forbid", True), name
        assert schema.model_validate({}) is not None  # every option has a default


def test_the_memory_sources_take_an_order_of_recency_or_relevance_and_nothing_else() -> None:
    pol = policy(
        spec("memory", 100, options={"order": "relevance"}), spec("personal_memory", 100, options={"order": "recency"})
    )
    assert PUBLISHING.validate(pol) == pol
    for bad in ("random", 1, True, None):
        with pytest.raises(PolicyPublishError) as caught:
            PUBLISHING.validate(policy(spec("memory", 100), spec("personal_memory", 100, options={"order": bad})))
        assert _locs(caught.value) == [("sources", 1, "options", "order")]
        assert caught.value.code == "policy_invalid"
