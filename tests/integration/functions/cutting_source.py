"""A context source for explain-mode tests: the real knowledge source, also reporting one candidate it cut.

No source of the project fills `BriefExplanation.cut` yet (the knowledge and memory sources gain it in their
own work); this wrapper speaks the `ExplainingContextSource` protocol so the API, the CLI and the console can
be tested on a cut as the builder hands it over. Its title is hostile text, for the console's escaping test.
"""

from __future__ import annotations

from typing import Any

from context.models import ContextItem, ContextRequest, ContextSourceSpec, CutCandidate
from tests.integration.functions.console_seed import PAYLOADS

CUT_TITLE = f"A cut candidate {PAYLOADS[1]}"


class CuttingKnowledge:
    """The real knowledge source, also reporting one candidate it cut (explain mode), with a hostile title."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.options_schema = inner.options_schema

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        return list(await self.inner.retrieve(request, spec))

    async def retrieve_explained(
        self, request: ContextRequest, spec: ContextSourceSpec
    ) -> tuple[list[ContextItem], list[CutCandidate]]:
        cut = CutCandidate(
            source=self.name, kind="knowledge", ref=None, title=CUT_TITLE, tokens=42, rank=9, score=0.21,
            rule="relevance_floor", message="fused score 0.21 under the relevance floor 0.30",
        )  # fmt: skip
        return await self.retrieve(request, spec), [cut]
