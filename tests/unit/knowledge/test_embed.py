from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from context.tokens import estimate_tokens
from knowledge.embedding import providers as _embed_providers
from knowledge.embedding.registry import (
    DEFAULT_EMBEDDING_MODEL,
    EMBEDDING_MODELS,
    Embedder,
    EmbedderRegistry,
    Embeddings,
    FakeEmbedder,
    OpenAIEmbedder,
    WordLlamaEmbedder,
    check_embeddings,
    get_embedder,
    plan_batches,
    register_embedder,
)
from knowledge.errors import (
    EmbeddingAuthError,
    EmbeddingDimensionError,
    EmbeddingProviderError,
    UnknownEmbeddingModelError,
)

# --- the contract, batching and checks -------------------------------------------------------------


async def test_fake_embedder_returns_unit_rows_in_input_order() -> None:
    fake = FakeEmbedder(batch_size=4)
    texts = [f"text number {i}" for i in range(10)]
    vectors = await fake.embed(texts)
    assert vectors.shape == (10, 64) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert fake.calls == [4, 4, 2]
    again = await FakeEmbedder().embed(texts[3:4])
    assert np.array_equal(again[0], vectors[3]), "deterministic, and row 3 belongs to text 3"


async def test_fake_embedder_places_shared_words_closer() -> None:
    a, b, c = await FakeEmbedder().embed(["invoice payment due", "payment of the invoice", "mountain hiking trail"])
    assert float(a @ b) > float(a @ c)


async def test_embedding_nothing_returns_an_empty_matrix() -> None:
    assert (await FakeEmbedder().embed([])).shape == (0, 64)


@pytest.mark.parametrize("bad", [[""], ["ok", "   "]])
async def test_empty_texts_are_refused(bad: list[str]) -> None:
    with pytest.raises(ValueError, match="is empty"):
        await FakeEmbedder().embed(bad)


async def test_a_single_string_is_refused() -> None:
    with pytest.raises(TypeError):
        await FakeEmbedder().embed("one string")


class WrongDimensions(Embedder):
    model_id: ClassVar[str] = "test/wrong"
    dimensions: ClassVar[int] = 8

    async def _embed_batch(self, texts: list[str]) -> Embeddings:
        return np.ones((len(texts), 7), dtype=np.float32)


async def test_vectors_of_the_wrong_dimensions_are_refused_before_anyone_stores_them() -> None:
    with pytest.raises(EmbeddingDimensionError, match=r"shape \(1, 7\); expected \(1, 8\)"):
        await WrongDimensions().embed(["x"])


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        ([[1.0, 0.0]], "shape"),
        ([[1.0, 0.0, 0.0], [1.0, 0.0]], "different lengths"),
        ([[float("nan"), 0.0, 0.0]], "NaN"),
        ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], "shape"),
    ],
)
def test_check_embeddings_refuses_bad_shapes_and_values(vectors: list[list[float]], message: str) -> None:
    with pytest.raises(EmbeddingDimensionError, match=message):
        check_embeddings(vectors, model_id="m", dimensions=3, count=1)


@given(
    texts=st.lists(st.text(min_size=1, max_size=200), max_size=60),
    max_items=st.integers(1, 10),
    max_tokens=st.none() | st.integers(1, 200),
)
def test_batches_keep_order_and_respect_both_caps(texts: list[str], max_items: int, max_tokens: int | None) -> None:
    batches = plan_batches(texts, max_items=max_items, max_tokens=max_tokens)
    assert [t for b in batches for t in b] == texts
    for batch in batches:
        assert 1 <= len(batch) <= max_items
        if max_tokens is not None and len(batch) > 1:
            assert sum(estimate_tokens(t) for t in batch) <= max_tokens


def test_an_oversize_text_travels_alone() -> None:
    assert [len(b) for b in plan_batches(["a" * 400, "b", "c"], max_items=10, max_tokens=50)] == [1, 2]


# --- the registry ----------------------------------------------------------------------------------


def test_known_models_and_their_dimensions() -> None:
    assert dict(EMBEDDING_MODELS) == {
        "local/wordllama-l2-supercat-256": 256,
        "openai/text-embedding-3-small": 1536,
        "test/hash-64": 64,
    }
    assert DEFAULT_EMBEDDING_MODEL == "local/wordllama-l2-supercat-256"


def test_unknown_model_is_refused_listing_the_known_ids() -> None:
    with pytest.raises(UnknownEmbeddingModelError, match="unknown embedding model 'nope/x'; known: local/") as info:
        get_embedder("nope/x")
    assert info.value.code == "embedding_model_unknown" and not info.value.retryable


def test_get_embedder_returns_one_instance_per_model() -> None:
    assert get_embedder("test/hash-64") is get_embedder("test/hash-64")
    assert isinstance(get_embedder(DEFAULT_EMBEDDING_MODEL), WordLlamaEmbedder)


def test_duplicate_registration_is_refused() -> None:
    with pytest.raises(ValueError, match="already registered"):
        register_embedder("test/hash-64", FakeEmbedder, dimensions=64)


def test_a_factory_building_another_model_is_refused() -> None:
    registry = EmbedderRegistry()
    registry.register("test/other", FakeEmbedder, dimensions=64)
    with pytest.raises(EmbeddingDimensionError, match="built 'test/hash-64'"):
        registry.get("test/other")


def test_registry_dimensions_and_membership() -> None:
    registry = EmbedderRegistry()
    registry.register("test/hash-64", FakeEmbedder, dimensions=64)
    assert registry.dimensions("test/hash-64") == 64 and "test/hash-64" in registry
    assert dict(registry.models) == {"test/hash-64": 64}
    with pytest.raises(UnknownEmbeddingModelError):
        registry.dimensions("x")


# --- WordLlama, the offline default ------------------------------------------------------------------


async def test_wordllama_embeds_unit_vectors_of_256_dimensions_with_meaning() -> None:
    embedder = get_embedder("local/wordllama-l2-supercat-256")
    query, near, far = await embedder.embed(
        ["How do I reset my password?", "Steps to change a forgotten account password", "The cat sat on the mat"]
    )
    assert query.shape == (256,)
    assert np.allclose(np.linalg.norm([query, near, far], axis=1), 1.0, atol=1e-5)
    assert float(query @ near) > float(query @ far)


async def test_wordllama_is_loaded_once_and_safe_to_call_concurrently() -> None:
    embedder = WordLlamaEmbedder(batch_size=3)
    texts = [f"document {i} about topic {i % 3}" for i in range(20)]
    results = await asyncio.gather(*(embedder.embed(texts) for _ in range(4)))
    assert all(np.array_equal(results[0], r) for r in results[1:])
    assert _embed_providers._load_wordllama() is _embed_providers._load_wordllama()


def test_the_direct_loader_embeds_exactly_as_wordllama_itself(tmp_path: Path) -> None:
    import shutil

    import wordllama

    tokenizer, _ = _embed_providers._wordllama_files()
    (tmp_path / "tokenizers").mkdir()
    shutil.copyfile(tokenizer, tmp_path / "tokenizers" / tokenizer.name)  # where its loader looks
    theirs = wordllama.WordLlama.load("l2_supercat", dim=256, cache_dir=tmp_path, disable_download=True)
    texts = [
        "How do I reset my password?",
        "",
        "   ",
        "Ünïcödé, emoji 🙂 and 中文 mixed with <script>alert(1)</script>",
        "word " * 3000,
        *(f"document {i} about topic {i % 7}" for i in range(150)),  # more than one tokenizer batch of 64
    ]
    expected = np.asarray(theirs.embed(texts, norm=False, batch_size=64), dtype=np.float32)
    assert np.array_equal(_embed_providers._load_wordllama().embed(texts), expected)


# --- OpenAI, against a real HTTP server speaking its embeddings protocol ------------------------------


@dataclass
class FakeOpenAI:
    """Scripted answers: each queued (status, headers) is used once, then every request succeeds."""

    url: str = ""
    script: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str] = field(default_factory=list)
    dimensions: int = 1536


def vector_for(text: str, dimensions: int) -> list[float]:
    vector = [0.0] * dimensions
    vector[int(hashlib.sha256(text.encode()).hexdigest(), 16) % dimensions] = 1.0
    return vector


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAI]:
    state = FakeOpenAI()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.auth.append(self.headers.get("Authorization", ""))
            status, headers = state.script.pop(0) if state.script else (200, {})
            if self.path != "/v1/embeddings":
                status = 404
            if status == 200:
                data = [
                    {"object": "embedding", "index": i, "embedding": vector_for(text, state.dimensions)}
                    for i, text in enumerate(body["input"])
                ][::-1]  # out of order on purpose: the client must sort by index
                payload = {
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                }
            else:
                payload = {"error": {"message": f"scripted {status}", "type": "test", "code": None}}
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()
    server.server_close()


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def openai_embedder(server: FakeOpenAI, sleeps: Sleeps | None = None, **options: Any) -> OpenAIEmbedder:
    return OpenAIEmbedder(api_key="sk-test", base_url=server.url, sleep=sleeps or Sleeps(), **options)


async def test_openai_batches_requests_and_restores_input_order(openai_server: FakeOpenAI) -> None:
    texts = [f"chunk {i}" for i in range(7)]
    vectors = await openai_embedder(openai_server, batch_size=3).embed(texts)
    assert [len(r["input"]) for r in openai_server.requests] == [3, 3, 1]
    assert all(r["model"] == "text-embedding-3-small" for r in openai_server.requests)
    assert openai_server.auth == ["Bearer sk-test"] * 3
    assert vectors.shape == (7, 1536)
    assert np.array_equal(vectors, np.array([vector_for(t, 1536) for t in texts], dtype=np.float32))


async def test_openai_batches_stay_under_the_token_cap(openai_server: FakeOpenAI) -> None:
    texts = ["x" * 400] * 5  # 100 estimated tokens each
    await openai_embedder(openai_server, max_batch_tokens=250).embed(texts)
    assert [len(r["input"]) for r in openai_server.requests] == [2, 2, 1]


def test_openai_batch_size_is_capped_at_the_api_limit() -> None:
    assert OpenAIEmbedder(api_key="k").batch_size == 2048
    with pytest.raises(ValueError, match="2048"):
        OpenAIEmbedder(api_key="k", batch_size=2049)


async def test_openai_retries_a_rate_limit_then_succeeds(openai_server: FakeOpenAI) -> None:
    openai_server.script = [(429, {"Retry-After": "2"})]
    sleeps = Sleeps()
    vectors = await openai_embedder(openai_server, sleeps).embed(["hello"])
    assert vectors.shape == (1, 1536)
    assert len(openai_server.requests) == 2
    assert sleeps.delays == [2.0], "the server's Retry-After is honoured"


async def test_openai_retries_a_server_error_with_exponential_backoff(openai_server: FakeOpenAI) -> None:
    openai_server.script = [(500, {}), (502, {}), (503, {})]
    sleeps = Sleeps()
    await openai_embedder(openai_server, sleeps, backoff_base_s=1.0).embed(["hello"])
    assert len(openai_server.requests) == 4
    assert [0.5 <= d <= 1 for d in sleeps.delays[:1]] == [True]
    assert 1 <= sleeps.delays[1] <= 2 and 2 <= sleeps.delays[2] <= 4


async def test_openai_gives_up_after_max_attempts_as_retryable(openai_server: FakeOpenAI) -> None:
    openai_server.script = [(503, {})] * 10
    with pytest.raises(EmbeddingProviderError, match="after 3 attempts") as info:
        await openai_embedder(openai_server, max_attempts=3).embed(["hello"])
    assert info.value.retryable is True
    assert len(openai_server.requests) == 3


async def test_openai_bad_key_is_an_auth_error_without_retries(openai_server: FakeOpenAI) -> None:
    openai_server.script = [(401, {})]
    with pytest.raises(EmbeddingAuthError, match="refused the API key") as info:
        await openai_embedder(openai_server).embed(["hello"])
    assert info.value.retryable is False and info.value.code == "embedding_auth_failed"
    assert len(openai_server.requests) == 1


async def test_openai_bad_request_is_not_retried(openai_server: FakeOpenAI) -> None:
    openai_server.script = [(400, {})]
    with pytest.raises(EmbeddingProviderError, match="refused the embedding request") as info:
        await openai_embedder(openai_server).embed(["hello"])
    assert info.value.retryable is False
    assert len(openai_server.requests) == 1


async def test_openai_vectors_of_the_wrong_size_are_refused(openai_server: FakeOpenAI) -> None:
    openai_server.dimensions = 512
    with pytest.raises(EmbeddingDimensionError):
        await openai_embedder(openai_server).embed(["hello"])


def test_openai_without_an_api_key_fails_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(EmbeddingAuthError, match="set OPENAI_API_KEY"):
        OpenAIEmbedder()


async def test_openai_by_default_cannot_leave_the_test_machine() -> None:
    embedder = OpenAIEmbedder(max_attempts=2, sleep=Sleeps())  # OPENAI_BASE_URL points at a closed local port
    with pytest.raises(EmbeddingProviderError, match="APIConnectionError"):
        await embedder.embed(["hello"])
    with pytest.raises(RuntimeError, match="blocked in unit tests"):
        socket.getaddrinfo("api.openai.com", 443)


def test_embedding_with_wordllama_imports_neither_wordllama_nor_its_download_stack() -> None:
    # A fresh interpreter: the CLI's `search` pays for every module the model's load imports.
    import subprocess
    import sys

    script = (
        "import logging, sys; from knowledge.embedding.providers import _load_wordllama; "
        "_load_wordllama().embed(['hello']); root = logging.getLogger(); "
        "print(len(root.handlers), root.level, 'wordllama' in sys.modules, 'requests' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", str(logging.WARNING), "False", "False"]
