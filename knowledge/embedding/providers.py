"""The two real embedders: WordLlama on the CPU (the offline default) and OpenAI (production).

WordLlama is loaded once per process, from the tokenizer and weights inside its wheel (read directly, as
its own loader would, so nothing is copied or downloaded). OpenAI requests stay within the API's
per-request limits and are retried with exponential backoff on rate limits, connection failures,
timeouts and 5xx answers. This module must never download a model, and never run CPU-bound work on the event loop.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import random
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

import numpy as np

from knowledge.embedding.embedder import Embedder, Embeddings, normalise_rows
from knowledge.errors import EmbeddingAuthError, EmbeddingProviderError

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIEmbedder", "WordLlamaEmbedder"]

_TOKENIZER_FILE: Final = "l2_supercat_tokenizer_config.json"
_WEIGHTS_FILE: Final = "l2_supercat_256.safetensors"
_TENSOR_KEY: Final = "embedding.weight"
_wordllama_lock = threading.Lock()
_wordllama_model: _StaticTokenModel | None = None


def _wordllama_files() -> tuple[Path, Path]:
    """The tokenizer and the weights inside the installed `wordllama` wheel, found without importing it."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingProviderError("the wordllama package is not installed", retryable=False)
    folder = Path(next(iter(spec.submodule_search_locations)))
    return folder / "tokenizers" / _TOKENIZER_FILE, folder / "weights" / _WEIGHTS_FILE


class _StaticTokenModel:
    """WordLlama's inference as its own `embed(texts, norm=False)` computes it.

    Each token's row of a static embedding matrix, averaged over the text's tokens (padding masked out).

    Loaded from the wheel's own files with `tokenizers` and `safetensors`, without importing `wordllama`
    (whose import and loader cost 0.3 s of CPU per process, a third of a CLI `search`: it pulls in
    `requests` and a config system for downloads this project disables). A test holds it equal to
    `wordllama.WordLlama.load("l2_supercat", dim=256).embed(...)` on mixed text.
    """

    def __init__(self, tokenizer_file: Path, weights_file: Path) -> None:
        from safetensors import safe_open
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.enable_padding()
        self._tokenizer.no_truncation()
        with safe_open(str(weights_file), framework="np", device="cpu") as weights:
            self._matrix = np.ascontiguousarray(weights.get_tensor(_TENSOR_KEY).astype(np.float32))

    def embed(self, texts: list[str], batch_size: int = 64) -> Embeddings:
        """One averaged, unnormalised vector per text, in `batch_size` tokenizer batches."""
        out = np.empty((len(texts), self._matrix.shape[1]), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            encoded = self._tokenizer.encode_batch(texts[start : start + batch_size], add_special_tokens=False)
            ids = np.array([e.ids for e in encoded], dtype=np.int32)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
            np.clip(ids, 0, self._matrix.shape[0] - 1, out=ids)
            counts = np.maximum(mask.sum(axis=1, keepdims=True), 1.0).astype(np.float32)
            pooled = np.sum(self._matrix[ids] * mask[..., np.newaxis], axis=1, dtype=np.float32) / counts
            out[start : start + len(encoded)] = pooled
        return out


def _load_wordllama() -> _StaticTokenModel:
    """The process-wide WordLlama model, loaded on first use under a lock."""
    global _wordllama_model
    with _wordllama_lock:
        if _wordllama_model is None:
            _wordllama_model = _StaticTokenModel(*_wordllama_files())
        return _wordllama_model


class WordLlamaEmbedder(Embedder):
    """`local/wordllama-l2-supercat-256`: static token embeddings, average-pooled, on the CPU."""

    model_id: ClassVar[str] = "local/wordllama-l2-supercat-256"
    dimensions: ClassVar[int] = 256
    pool_safe: ClassVar[bool] = True

    def __init__(self, *, batch_size: int = 512) -> None:
        self.batch_size = batch_size

    async def _embed_batch(self, texts: list[str]) -> Embeddings:
        return await asyncio.to_thread(self._embed_blocking, texts)

    @staticmethod
    def _embed_blocking(texts: list[str]) -> Embeddings:
        return normalise_rows(_load_wordllama().embed(texts))


class OpenAIEmbedder(Embedder):
    """`openai/text-embedding-3-small` through the OpenAI API, batched and retried."""

    model_id: ClassVar[str] = "openai/text-embedding-3-small"
    dimensions: ClassVar[int] = 1536
    api_model: ClassVar[str] = "text-embedding-3-small"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 30.0,
        max_attempts: int = 6,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        batch_size: int = 2048,
        max_batch_tokens: int = 150_000,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise EmbeddingAuthError(
                f"{self.model_id} needs an API key: set OPENAI_API_KEY or pass api_key", retryable=False
            )
        if not 1 <= batch_size <= 2048:
            raise ValueError(f"batch_size must be within 1..2048 (the API's limit), got {batch_size}")
        self._key = key
        self._base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self._timeout_s = timeout_s
        self._max_attempts = max_attempts
        self._backoff = (backoff_base_s, backoff_max_s)
        self._sleep = sleep
        self.batch_size = batch_size
        # The API allows 300,000 tokens per request; the estimate (bytes / 4) can undercount real tokens
        # for non-Latin text, so the default keeps half of that as a margin.
        self.max_batch_tokens = max_batch_tokens
        self._clients: dict[int, openai.AsyncOpenAI] = {}

    def _client(self) -> openai.AsyncOpenAI:
        """One SDK client per event loop: its connection pool belongs to the loop that opened it."""
        import openai  # the SDK is imported by the first request, never by `import knowledge`

        loop_id = id(asyncio.get_running_loop())
        client = self._clients.get(loop_id)
        if client is None:
            options: dict[str, Any] = {"base_url": self._base_url} if self._base_url else {}
            client = openai.AsyncOpenAI(api_key=self._key, max_retries=0, timeout=self._timeout_s, **options)
            self._clients = {loop_id: client}
        return client

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        import openai

        retryable = (openai.RateLimitError, openai.APIConnectionError, openai.InternalServerError)
        refused = (openai.AuthenticationError, openai.PermissionDeniedError)
        for attempt in range(1, self._max_attempts + 1):
            try:
                response = await self._client().embeddings.create(
                    input=texts, model=self.api_model, encoding_format="float"
                )
            except refused as exc:
                raise EmbeddingAuthError(
                    f"OpenAI refused the API key ({exc.status_code}): check OPENAI_API_KEY"
                ) from exc
            except retryable as exc:
                if attempt == self._max_attempts:
                    raise EmbeddingProviderError(
                        f"OpenAI embeddings failed after {attempt} attempts: {_describe(exc)}", retryable=True
                    ) from exc
                await self._sleep(self._delay(attempt, exc))
            except openai.APIStatusError as exc:
                raise EmbeddingProviderError(
                    f"OpenAI refused the embedding request ({exc.status_code}): {exc.message}",
                    retryable=False,
                ) from exc
            else:
                return [item.embedding for item in sorted(response.data, key=lambda item: item.index)]
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _delay(self, attempt: int, exc: Exception) -> float:
        """Exponential backoff with jitter, or the server's Retry-After when it sends one."""
        base, ceiling = self._backoff
        response = getattr(exc, "response", None)
        retry_after = response.headers.get("retry-after") if response is not None else None
        if retry_after:
            try:
                return min(ceiling, max(0.0, float(retry_after)))
            except ValueError:
                pass  # an HTTP date: fall back to the computed backoff
        delay: float = min(ceiling, base * 2 ** (attempt - 1))
        return delay / 2 + random.uniform(0, delay / 2)


def _describe(exc: Exception) -> str:
    """A short description of an SDK error for a failure reason."""
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__} ({status})" if status else type(exc).__name__
