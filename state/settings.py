"""Process settings, read once from the environment (prefix `AC_CONTEXT_`, plus `DATABASE_URL`).

A wrong setting fails at start with a message that names the setting. This module reads the environment
and nothing else: it never connects to a database or starts a server.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from state.durations import parse_duration
from state.errors import SettingsError

__all__ = [
    "NEVER",
    "Settings",
    "get_settings",
    "known_environment",
    "load_settings",
    "memory_ttl",
    "unknown_environment",
]

_PREFIX = "AC_CONTEXT_"
_TEST_MODEL_PREFIX = "test/"
"""`knowledge.embedding.registry._TEST_MODEL_PREFIX`: the fakes' ids, refused as the default model outside tests."""
_REAL_MODELS = ("local/wordllama-l2-supercat-256", "openai/text-embedding-3-small")
"""`knowledge.embedding.registry.offered_models` of the default registry, restated for the one-line refusal."""


class Settings(BaseModel):
    """Every knob of the process. Environment names are `AC_CONTEXT_<FIELD>` unless noted.

    Constructing it reads the environment (names in any case); a keyword argument wins over the environment.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, validate_default=True)  # as BaseSettings did

    database_url: str | None = None
    """A PostgreSQL ≥ 15 with pgvector. None starts the embedded server under `data_dir`."""
    data_dir: Path = Path(".ac-context")
    """Where the embedded server keeps its data, and the local object store its files."""
    embedded_idle_minutes: float = Field(default=15.0, ge=0, le=7 * 24 * 60, allow_inf_nan=False)
    """Minutes the embedded server stays up unused after a command, for the next to reuse; 0 stops it at exit."""
    pool_min_size: int = Field(default=1, ge=0, le=100)
    """Connections the pool opens at start."""
    pool_max_size: int = Field(default=10, ge=1, le=500)
    """The most connections the pool holds (the builder reads on several at once)."""
    read_database_urls: str = ""
    """Comma-separated URLs of hot standbys of the primary for briefs, searches and list/show reads (none: all
    reads on the primary)."""
    read_your_writes_wait_ms: float = Field(default=250.0, ge=0, le=60_000, allow_inf_nan=False)
    """How long a read waits for a standby to replay its organization's last write before it runs on the primary."""
    read_max_lag_ms: float = Field(default=1000.0, gt=0, le=3_600_000, allow_inf_nan=False)
    """A standby further behind the primary than this serves no read (each such read runs on the primary)."""
    read_recheck_s: float = Field(default=2.0, gt=0, le=3600, allow_inf_nan=False)
    """How long a standby that failed (down, promoted) is left out before a read tries it again."""
    embedding_model: str = "local/wordllama-l2-supercat-256"
    """The model the platform default row names when it is first created."""
    allow_test_models: bool = False
    """Accept `test/*` embedding models (deterministic fakes): the test suite turns it on, a deployment never."""
    object_store_url: str | None = None
    """`s3://bucket?endpoint_url=…` for S3, R2 or MinIO; None keeps files under `data_dir/objects`."""
    max_upload_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    """The largest document an upload may carry."""
    inngest_mode: Literal["production", "dev"] = "production"
    """`dev` talks to a local Inngest dev server; `production` requires a signing key."""
    api_token: str | None = None
    """The operator token of `/v1/` (beside the API keys in the database). None: only API keys are taken."""
    mcp_key: str | None = None
    """The key `ac-context mcp` acts with (the operator token or an API key; an organization key scopes it to its
    organization); None: the command line's own operator rights."""
    service_url: str | None = None
    """A running service `ac-context` sends its reads to (`search`, `brief`, the lists) with `api_token`, instead
    of opening the database; None: the service whose `service.json` is in `data_dir`, if one runs."""
    organizations_per_minute: int = Field(default=60, ge=1, le=100_000)
    """Organizations `POST /v1/organizations` creates per minute across replicas; past it 429 `rate_limited`."""
    source_timeout_s: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    """The context builder's per-source timeout."""
    readiness_timeout_s: float = Field(default=2.0, gt=0, le=300, allow_inf_nan=False)
    """How long `/readyz` waits for the database (its `SELECT 1`, its migration check) before answering 503."""
    max_json_bytes: int = Field(default=1024 * 1024, ge=1024)
    """The largest body any route but an upload takes; larger answers 413 while it streams in."""
    max_inngest_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    """The largest body `/api/inngest` takes (a run's memoized state rides in it)."""
    inngest_signature_max_age_s: float = Field(default=300.0, gt=0, le=86_400, allow_inf_nan=False)
    """In production, a signed Inngest request whose `t=` is further than this from the clock is refused."""
    inngest_serve_origin: str | None = None
    """The origin Inngest reaches this app at (`https://ctx.example.com`); a sync never takes the `Host`."""
    max_concurrent_briefs: int = Field(default=8, ge=1, le=1000)
    """Briefs one process builds at once; above it a brief answers 503 `overloaded` with `Retry-After`."""
    brief_receipts: bool = True
    """Whether built briefs leave a receipt (ids and counts, never text): "cited by" and segment builds."""
    brief_receipt_days: int = Field(default=30, ge=1, le=3650)
    """Days a brief receipt is kept; older ones are pruned hourly."""
    brief_receipt_buffer: int = Field(default=10_000, ge=1, le=1_000_000)
    """Receipts one process holds unwritten at most; past it a receipt is dropped and counted."""
    overload_retry_after_s: int = Field(default=1, ge=1, le=3600)
    """The `Retry-After` an `overloaded` answer carries."""
    database_retry_interval_s: float = Field(default=2.0, gt=0, le=300, allow_inf_nan=False)
    """How often a process that started without its database tries to open it again."""
    run_functions: Literal["auto", "inngest", "in-process"] = "auto"
    """Where the service runs the work of its events: `auto` runs it in-process in dev mode when no Inngest
    server answers (and sends it to Inngest otherwise); production always sends it to Inngest."""
    outbox_poll_interval_s: float = Field(default=5.0, gt=0, le=3600, allow_inf_nan=False)
    """How often the service looks for outbox events to send (a failed send also waits its backoff)."""
    step_encryption_keys: SecretStr | None = None
    """Comma-separated keys for Inngest step state; the first encrypts, every key decrypts (rotation)."""
    debug: bool = False
    """`ac-context` prints the traceback of a project error instead of its one-line message."""
    telemetry_capture_text: bool = False
    """OpenTelemetry spans may carry document, memory and query text (`state.telemetry`); off by default."""
    ingest_workers: int | None = Field(default=None, ge=1, le=64)
    """Processes that extract PDFs and embed during bulk ingestion; None means one per CPU core."""
    max_chunks_per_source: int = Field(default=20_000, ge=1)
    """Most chunks one knowledge source may hold; a document that needs more fails with `too_many_chunks`."""
    # Extraction bounds, checked before and while a PDF is read (docs/decisions.md, "What bounds one extraction").
    max_pdf_pages: int = Field(default=2_000, ge=1)
    """Most pages one PDF may have (`document_too_many_pages`)."""
    max_pdf_content_bytes: int = Field(default=128 * 1024 * 1024, ge=1024)
    """Most decompressed content a PDF's pages may draw, a shared stream counted per page (`pdf_content_too_large`)."""
    max_pdf_expansion: int = Field(default=100, ge=1)
    """Past 16 MiB, drawn content may be at most this many times the file's size (`pdf_content_too_large`)."""
    max_extracted_text_bytes: int = Field(default=32 * 1024 * 1024, ge=1024)
    """Most text (UTF-8 bytes) one PDF may give (`document_text_too_large`)."""
    max_page_text_bytes: int = Field(default=1024 * 1024, ge=1024)
    """Most text one PDF page may give (`document_text_too_large`)."""
    max_extract_cpu_s: float = Field(default=300.0, gt=0, allow_inf_nan=False)
    """Processor seconds each core may spend reading one document (`document_extraction_timeout`)."""

    # Memory expiry (docs/decisions.md, Memory: "What expiry do observations and preferences get by default?").
    # Durations are state.durations'.
    memory_max_ttl: str = "P1825D"
    """The furthest expiry a memory may carry, from the time it is written (five years); further is refused."""
    memory_observation_may_expire: bool = True
    """Whether an `observation.*` memory may carry an expiry; False refuses one (and needs `never` below)."""
    memory_preference_may_expire: bool = True
    """Whether a `preference.*` memory may carry an expiry; False refuses one (and needs `never` below)."""
    memory_observation_ttl: str = "P90D"
    """The expiry an `observation.*` memory gets when `memory.remember` names none; `never` keeps it."""
    memory_preference_ttl: str = "never"
    """The expiry a `preference.*` memory gets when `memory.remember` names none; `never` keeps it."""

    @field_validator("memory_max_ttl")
    @classmethod
    def _max_ttl(cls, value: str) -> str:
        if parse_duration(value).total_seconds() <= 0:
            raise ValueError("must be longer than zero")
        return value

    @field_validator("memory_observation_ttl", "memory_preference_ttl")
    @classmethod
    def _namespace_ttl(cls, value: str, info: ValidationInfo) -> str:
        if value == NEVER:
            return value
        try:
            ttl = parse_duration(value)
        except ValueError as exc:
            raise ValueError(f"{exc} (or {NEVER!r})") from None
        namespace = str(info.field_name).split("_")[1]
        if ttl.total_seconds() <= 0:
            raise ValueError(f"must be longer than zero (or {NEVER!r})")
        if info.data.get(f"memory_{namespace}_may_expire") is False:
            raise ValueError(f"must be {NEVER!r} while {namespace} memories may not expire")
        longest = info.data.get("memory_max_ttl")
        if longest is not None and ttl > parse_duration(longest):
            raise ValueError(f"must not exceed memory_max_ttl ({longest})")
        return value

    @model_validator(mode="before")
    @classmethod
    def _from_environment(cls, given: object) -> object:
        """Each field's variable from `os.environ`, under the keyword arguments given."""
        if not isinstance(given, dict):
            return given
        environ = {name.upper(): value for name, value in os.environ.items()}
        found = {}
        for field in cls.model_fields:
            for name in _env_names(field):
                if name in environ:
                    found[field] = environ[name]
                    break
        return found | given

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgres://", "postgresql://")):
            raise ValueError("must start with postgresql:// or postgres://")
        if value and "," not in value.partition("?")[0]:  # asyncpg takes several hosts: h1:5432,h2:5432
            from urllib.parse import urlsplit

            try:
                urlsplit(value).port  # noqa: B018 (parsing it is the check: a port that is not a number)
            except ValueError as exc:
                raise ValueError(f"is not a valid URL ({str(exc).replace(value, '…')})") from None
        return value or None

    @field_validator("read_database_urls")
    @classmethod
    def _read_urls(cls, value: str) -> str:
        for url in _split_urls(value):
            if not url.startswith(("postgres://", "postgresql://")):
                raise ValueError("each URL must start with postgresql:// or postgres://")
        return value

    def read_urls(self) -> list[str]:
        """The standby URLs of `read_database_urls`, in order, without blanks or repeats."""
        return list(dict.fromkeys(_split_urls(self.read_database_urls)))

    @model_validator(mode="after")
    def _pool_sizes(self) -> Settings:
        if self.pool_min_size > self.pool_max_size:
            raise ValueError("pool_min_size must not exceed pool_max_size")
        return self

    @model_validator(mode="after")
    def _no_test_model(self) -> Settings:
        # `knowledge.embedding.registry._TEST_MODEL_PREFIX`, restated: state never imports knowledge (a unit test
        # holds them equal).
        if self.embedding_model.startswith(_TEST_MODEL_PREFIX) and not self.allow_test_models:
            raise ValueError(
                f"embedding_model {self.embedding_model} is a test model; real models: {', '.join(_REAL_MODELS)}"
            )
        return self


def _split_urls(value: str) -> list[str]:
    """The URLs of a comma-separated list; a comma inside a URL (asyncpg's `h1:5432,h2:5432`) stays in it."""
    return [part.strip() for part in re.split(r",\s*(?=postgres(?:ql)?://)", value) if part.strip()]


NEVER = "never"
"""The namespace default that keeps a memory until it is superseded or forgotten."""


def memory_ttl(value: str) -> timedelta | None:
    """A memory default expiry setting as a duration; None for `never`."""
    return None if value == NEVER else parse_duration(value)


_ENV_NAMES = {"database_url": "DATABASE_URL", "inngest_serve_origin": "INNGEST_SERVE_ORIGIN"}
"""The settings read first from a variable without the prefix (the name their ecosystems use)."""


def _env_names(field: str) -> tuple[str, ...]:
    """The variables a field reads, first found wins: its unprefixed name (if any), then `AC_CONTEXT_<FIELD>`."""
    prefixed = f"{_PREFIX}{field.upper()}"
    return (_ENV_NAMES[field], prefixed) if field in _ENV_NAMES else (prefixed,)


def known_environment() -> frozenset[str]:
    """Every `AC_CONTEXT_*` variable a setting reads."""
    return frozenset({f"{_PREFIX}{name.upper()}" for name in Settings.model_fields})


def unknown_environment(environ: Mapping[str, str]) -> list[str]:
    """The `AC_CONTEXT_*` variables of `environ` that no setting reads (a misspelling is never ignored)."""
    known = known_environment()
    return sorted(name for name in environ if name.upper().startswith(_PREFIX) and name.upper() not in known)


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment; raise `SettingsError` naming each wrong or unknown setting."""
    unknown = unknown_environment(os.environ)
    if unknown:
        problems = []
        for name in unknown:
            close = difflib.get_close_matches(name.upper(), sorted(known_environment()), n=1, cutoff=0.75)
            problems.append(f"{name} is not a setting" + (f" (did you mean {close[0]}?)" if close else ""))
        raise SettingsError("invalid settings: " + "; ".join(problems))
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = ".".join(str(p) for p in err["loc"]) or "settings"
            env = _ENV_NAMES.get(name, f"AC_CONTEXT_{name.upper()}")
            problems.append(f"{env}: {err['msg']}")
        raise SettingsError("invalid settings: " + "; ".join(problems)) from exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return load_settings()
