"""The two real embedders: WordLlama on the CPU (the offline default) and OpenAI (production).

WordLlama is loaded once per process, from the weights inside its wheel and a tokenizer file copied into a
cache folder, with downloads disabled. OpenAI requests stay within the API's per-request limits and are
retried with exponential backoff on rate limits, connection failures, timeouts and 5xx answers. This
module must never download a model, and never run CPU-bound work on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import shutil
import tempfile
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

import numpy as np

from knowledge.embedding.embedder import Embedder, Embeddings, normalise_rows
from knowledge.errors import EmbeddingAuthError, EmbeddingProviderError

if TYPE_CHECKING:
    import openai

__all__ = ["OpenAIEmbedder", "WordLlamaEmbedder", "wordllama_cache_dir"]

_TOKENIZER_FILE: Final = "l2_supercat_tokenizer_config.json"
_wordllama_lock = threading.Lock()
_wordllama_model: Any = None


def wordllama_cache_dir() -> Path:
    """The folder WordLlama loads its tokenizer from (`$AC_CONTEXT_WORDLLAMA_CACHE`, else the user cache)."""
    configured = os.environ.get("AC_CONTEXT_WORDLLAMA_CACHE")
    if configured:
        return Path(configured).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "ac-context" / "wordllama"


def _import_wordllama() -> Any:
    """Import wordllama without the `logging.basicConfig(level=INFO)` it runs at import time.

    That call would give the root logger a handler and INFO level in every process that embeds, so every
    library's INFO chatter (the embedded server's shutdown log among them) would reach the console.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import wordllama

    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    return wordllama


def _prepare_cache(cache_dir: Path) -> Path:
    """Copy the wheel's tokenizer file to `<cache>/tokenizers/`, where the loader looks for it."""
    wordllama = _import_wordllama()

    source = Path(wordllama.__file__).parent / "tokenizers" / _TOKENIZER_FILE
    for folder in (cache_dir, Path(tempfile.gettempdir()) / f"ac-context-wordllama-{os.getuid()}"):
        target = folder / "tokenizers" / _TOKENIZER_FILE
        try:
            if not target.exists() or target.stat().st_size != source.stat().st_size:
                target.parent.mkdir(parents=True, exist_ok=True)
                partial = target.with_suffix(f".{os.getpid()}.tmp")
                shutil.copyfile(source, partial)
                partial.replace(target)  # atomic, so a concurrent loader never reads half a file
            return folder
        except OSError:
            continue  # a read-only home: fall back to the temporary folder
    raise EmbeddingProviderError("no writable cache folder for the WordLlama tokenizer", retryable=False)


def _load_wordllama() -> Any:
    """The process-wide WordLlama model, loaded on first use under a lock."""
    global _wordllama_model
    with _wordllama_lock:
        if _wordllama_model is None:
            cache = _prepare_cache(wordllama_cache_dir())
            _wordllama_model = _import_wordllama().WordLlama.load(
                "l2_supercat", dim=256, cache_dir=cache, disable_download=True
            )
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
        raw = np.asarray(_load_wordllama().embed(texts, norm=False, batch_size=64), dtype=np.float32)
        return normalise_rows(raw)


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
