"""Test models only in tests (issue 25): a `test/*` embedding model is refused wherever a person names a model
(`switch-model`, with or without `--send-event`; the settings' default model) unless
`AC_CONTEXT_ALLOW_TEST_MODELS` is on, as the test suite's conftest sets it; the refusal names the real models."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from functions.cli import app
from knowledge.embedding.registry import (
    ALLOW_TEST_MODELS_ENV,
    EMBEDDING_MODELS,
    TEST_MODEL_PREFIX,
    FakeEmbedder,
    offered_models,
    require_real_model,
)
from knowledge.errors import UnknownEmbeddingModelError
from state import settings as state_settings
from state.settings import Settings
from tests.support import cli_error_line

REAL = "local/wordllama-l2-supercat-256, openai/text-embedding-3-small"
NO_PROGRESS = re.compile(r"^$")


@pytest.fixture
def outside_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOW_TEST_MODELS_ENV)


def test_the_suite_turns_test_models_on() -> None:
    require_real_model(FakeEmbedder.model_id)  # the conftest's setting: no refusal


@pytest.mark.usefixtures("outside_tests")
def test_a_test_model_is_refused_outside_the_test_suite_naming_the_real_models() -> None:
    with pytest.raises(UnknownEmbeddingModelError) as caught:
        require_real_model("test/hash-64")
    assert caught.value.code == "embedding_model_unknown"
    assert str(caught.value.message) == f"test/hash-64 is a test model; real models: {REAL}"
    require_real_model("local/wordllama-l2-supercat-256")  # a real model passes


@pytest.mark.parametrize("value", ["0", "", "no"])
def test_only_an_on_value_allows_test_models(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(ALLOW_TEST_MODELS_ENV, value)
    with pytest.raises(UnknownEmbeddingModelError):
        require_real_model("test/hash-32")


@pytest.mark.usefixtures("outside_tests")
@pytest.mark.parametrize("send_event", [False, True])
def test_switch_model_refuses_a_test_model_in_one_line_before_it_opens_or_sends_anything(
    monkeypatch: pytest.MonkeyPatch, send_event: bool
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none")  # never reached
    args = ["switch-model", "test/hash-64"] + (["--send-event"] if send_event else [])
    line = cli_error_line(CliRunner().invoke(app, args), "embedding_model_unknown", progress=NO_PROGRESS)
    assert f"test/hash-64 is a test model; real models: {REAL}" in line


@pytest.mark.usefixtures("outside_tests")
def test_the_settings_refuse_a_test_model_as_the_default_model() -> None:
    with pytest.raises(ValidationError, match=f"test/hash-64 is a test model; real models: {REAL}"):
        Settings(embedding_model="test/hash-64")
    assert Settings(embedding_model="test/hash-64", allow_test_models=True).embedding_model == "test/hash-64"


def test_the_settings_restate_the_prefix_and_the_real_models_of_knowledge() -> None:
    assert state_settings._TEST_MODEL_PREFIX == TEST_MODEL_PREFIX
    assert list(state_settings._REAL_MODELS) == offered_models(EMBEDDING_MODELS)
