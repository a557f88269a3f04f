"""PDF bombs uploaded over HTTP and ingested by `knowledge-ingest`, in both of its shapes.

The one `ingest` step (a local model: the bulk core, a large PDF's pages over the process pool) and the
resumable chain (a provider's model: `extract-and-chunk` in this process) each refuse the 2,000-page
shared-stream bomb and its 64 KiB variant on the first attempt, with the resident size of this process (which
does the reading in both shapes) growing by less than 300 MB while they do. How fast is a benchmark's figure
(bench/bench_ingest_extract.py), not a test's: a loaded machine would fail it.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from functions.inngest.knowledge_ingest import EVENT_UPLOADED, FUNCTION_ID, RETRIES
from knowledge.embedding.registry import EmbedderRegistry, FakeEmbedder
from tests.factories import Factory
from tests.integration.functions.conftest import FAKE_BATCH, FAKE_MODEL, Service
from tests.unit.knowledge.pdf_bombs import shared_stream_bomb

GROWTH_BYTES = 300 * 1024 * 1024
BOMBS = {"shared-400k.pdf": shared_stream_bomb(), "shared-64k.pdf": shared_stream_bomb(stream_bytes=64 * 1024)}


class ProviderEmbedder(FakeEmbedder):
    """The fake as a provider's model: not `pool_safe`, so `knowledge-ingest` takes the resumable chain."""


def _rss() -> int:
    for line in Path(f"/proc/{os.getpid()}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class Growth:
    """How far this process's resident size rises above where it was, sampled in a thread."""

    def __init__(self) -> None:
        self.base = self.peak = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss())
            time.sleep(0.005)

    def __enter__(self) -> Growth:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())

    @property
    def grown(self) -> int:
        return self.peak - self.base


@pytest.mark.parametrize("shape", ["one ingest step", "resumable chain"])
@pytest.mark.parametrize("name", list(BOMBS))
async def test_an_uploaded_pdf_bomb_is_refused_at_bounded_memory(
    service: Service, factory: Factory, shape: str, name: str
) -> None:
    if shape == "resumable chain":
        provider = EmbedderRegistry()
        provider.register(FAKE_MODEL, lambda: ProviderEmbedder(batch_size=FAKE_BATCH), dimensions=64)
        service.services.embedders = provider
    org = await factory.organization()
    files = {"file": (name, BOMBS[name], "application/pdf")}
    created = await service.http.post(
        "/v1/knowledge/sources", headers=service.auth, files=files, data={"organization_id": str(org)}
    )
    assert created.status_code == 202, created.text
    event = {"name": EVENT_UPLOADED, "data": dict(service.inngest.sent[-1].data)}

    with Growth() as memory:
        run = await service.executor.run(FUNCTION_ID, event, retries=RETRIES)

    assert run.status == "failed" and run.function_attempts == 1, run.output
    assert "pdf_content_too_large" in run.output["message"]
    listed = await service.http.get("/v1/knowledge/sources", params={"organization_id": str(org)}, headers=service.auth)
    (source,) = listed.json()["sources"]
    assert source["status"] == "failed" and source["failure_reason"].startswith("pdf_content_too_large:")
    # The error Inngest hears has no stack (functions.inngest._steps): the plan says which shape ran.
    one_step = FAKE_MODEL in run.step_outputs["plan"]["one_step"]
    assert one_step == (shape == "one ingest step"), f"the run did not take the {shape}"
    assert memory.grown < GROWTH_BYTES, f"the process grew by {memory.grown / 2**20:.0f} MB"
