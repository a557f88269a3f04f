"""Process settings, read once from the environment (prefix `AC_CONTEXT_`, plus `DATABASE_URL`).

A wrong setting fails at start with a message that names the setting. This module reads the environment
and nothing else: it never connects to a database or starts a server.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from state.errors import SettingsError

__all__ = ["Settings", "get_settings", "load_settings"]


class Settings(BaseSettings):
    """Every knob of the process. Environment names are `AC_CONTEXT_<FIELD>` unless noted."""

    model_config = SettingsConfigDict(env_prefix="AC_CONTEXT_", extra="ignore", frozen=True)

    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("DATABASE_URL", "AC_CONTEXT_DATABASE_URL")
    )
    """A PostgreSQL ≥ 15 with pgvector. None starts the embedded server under `data_dir`."""
    data_dir: Path = Path(".ac-context")
    """Where the embedded server keeps its data, and the local object store its files."""
    pool_min_size: int = Field(default=1, ge=0, le=100)
    """Connections the pool opens at start."""
    pool_max_size: int = Field(default=10, ge=1, le=500)
    """The most connections the pool holds (the builder reads on several at once)."""
    embedding_model: str = "local/wordllama-l2-supercat-256"
    """The model the platform default row names when it is first created."""
    object_store_url: str | None = None
    """`s3://bucket?endpoint_url=…` for S3, R2 or MinIO; None keeps files under `data_dir/objects`."""
    max_upload_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    """The largest document an upload may carry."""
    inngest_mode: Literal["production", "dev"] = "production"
    """`dev` talks to a local Inngest dev server; `production` requires a signing key."""
    api_token: str | None = None
    """The service-to-service bearer token for `/v1/`. None refuses every `/v1/` call."""
    source_timeout_s: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    """The context builder's per-source timeout."""
    ingest_workers: int | None = Field(default=None, ge=1, le=64)
    """Processes that extract PDFs and embed during bulk ingestion; None means one per CPU core."""
    max_chunks_per_source: int = Field(default=20_000, ge=1)
    """Most chunks one knowledge source may hold; a document that needs more fails with `too_many_chunks`."""

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgres://", "postgresql://")):
            raise ValueError("must start with postgresql:// or postgres://")
        return value or None

    @model_validator(mode="after")
    def _pool_sizes(self) -> Settings:
        if self.pool_min_size > self.pool_max_size:
            raise ValueError("pool_min_size must not exceed pool_max_size")
        return self


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment; raise `SettingsError` naming each wrong setting."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = ".".join(str(p) for p in err["loc"]) or "settings"
            env = "DATABASE_URL" if name == "database_url" else f"AC_CONTEXT_{name.upper()}"
            problems.append(f"{env}: {err['msg']}")
        raise SettingsError("invalid settings: " + "; ".join(problems)) from exc


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return load_settings()
