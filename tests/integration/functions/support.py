"""Test doubles for the functions layer: a scripted source, a counting builder, a recording Inngest client,
a small app that serves given functions at `/api/inngest` in production mode, and the fake live model."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import httpx
import inngest
from fastapi import FastAPI
from pydantic import BaseModel

from context.builder import DefaultContextBuilder
from context.models import (
    ContextBrief,
    ContextItem,
    ContextPolicy,
    ContextRequest,
    ContextSourceSpec,
)
from context.options import ConversationOptions
from context.packer import ContextPacker
from context.registry import ContextSourceRegistry
from functions.inngest.client import create_client
from functions.inngest.serve import serve
from knowledge.embedding.registry import FakeEmbedder
from state.db import Connection

ORG = UUID("00000000-0000-4000-8000-0000000000a1")
USER = UUID("00000000-0000-4000-8000-0000000000a2")
DEFINITION = UUID("00000000-0000-4000-8000-0000000000a3")
RUN = UUID("00000000-0000-4000-8000-0000000000a4")


async def use_platform_model(
    conn: Connection, model_id: str = FakeEmbedder.model_id, dimensions: int = FakeEmbedder.dimensions
) -> None:
    """Register `model_id` with its partial index and make it the platform's live model (before any source)."""
    await conn.execute(
        "INSERT INTO agent.embedding_models (model_id, dimensions) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        model_id,
        dimensions,
    )
    await conn.execute("SELECT agent.ensure_embedding_model_index($1)", model_id)
    await conn.execute(
        "UPDATE public.knowledge_settings SET active_embedding_model = $1 WHERE organization_id IS NULL", model_id
    )


def error_code(response: httpx.Response) -> str:
    """The machine-readable code of an API error answer."""
    return str(response.json()["error"]["code"])


def new_signing_key() -> str:
    """A signing key in Inngest's format."""
    return "signkey-test-" + secrets.token_hex(32)


@dataclass
class ScriptedConversation:
    """A `conversation` source whose answer the test changes, and which can fail its next reads."""

    facts: list[str] = field(default_factory=lambda: ["The deal is in stage proposal."])
    fail_next: int = 0
    reads: int = 0
    name: str = "conversation"
    options_schema: type[BaseModel] = ConversationOptions

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        self.reads += 1
        if self.fail_next > 0:
            self.fail_next -= 1
            raise ConnectionError("conversation store unreachable")
        return [ContextItem(source=self.name, kind="conversation", title="user", body=fact) for fact in self.facts]


class CountingBuilder:
    """A real builder over given sources that counts its builds."""

    def __init__(self, *sources: Any) -> None:
        self.inner = DefaultContextBuilder(ContextSourceRegistry(sources), ContextPacker())
        self.calls = 0

    async def build(self, request: ContextRequest, policy: ContextPolicy) -> ContextBrief:
        self.calls += 1
        return await self.inner.build(request, policy)


def conversation_policy(*, required: bool = True, refresh_on_resume: bool = True) -> ContextPolicy:
    """A one-source policy."""
    return ContextPolicy(
        sources=[ContextSourceSpec(name="conversation", required=required, token_budget=500)],
        total_token_budget=1000,
        refresh_on_resume=refresh_on_resume,
    )


def segment_event(
    segment: int, *, waited: bool, policy: ContextPolicy, query: str = "What stage is the deal in?"
) -> dict[str, Any]:
    """The event data of `context/segment.brief.requested`, as JSON."""
    return {
        "name": "context/segment.brief.requested",
        "data": {
            "run_id": str(RUN),
            "segment": segment,
            "waited": waited,
            "request": {
                "subject": {"organization_id": str(ORG), "user_id": str(USER), "definition_id": str(DEFINITION)},
                "query": query,
                "entities": [],
                "run_id": str(RUN),
            },
            "policy": policy.model_dump(mode="json"),
        },
    }


class RecordingInngest(inngest.Inngest):
    """An Inngest client whose `send` records events instead of posting them."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sent: list[inngest.Event] = []
        self.fail_sends = False
        self.failure: Exception = ConnectionError("event API unreachable")

    async def send(self, events: inngest.Event | list[inngest.Event], *, skip_middleware: bool = False) -> list[str]:
        batch = events if isinstance(events, list) else [events]
        if self.fail_sends:
            raise self.failure
        self.sent.extend(batch)
        return [f"evt-{len(self.sent) - i}" for i in range(len(batch))]


def production_client(signing_key: str) -> inngest.Inngest:
    """The project's client in production mode with `signing_key`."""
    return create_client({"INNGEST_SIGNING_KEY": signing_key})


def serve_functions(client: inngest.Inngest, functions: list[inngest.Function[Any]]) -> FastAPI:
    """A bare app serving `functions` at `/api/inngest`."""
    app = FastAPI()
    serve(app, client, functions)
    return app


def asgi_client(app: FastAPI) -> httpx.AsyncClient:
    """An HTTP client bound to the app in-process."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


MakeFn = Callable[[inngest.Inngest], inngest.Function[Any]]
