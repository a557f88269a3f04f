"""A wave's write is cut into transactions of whole sources, in order."""

from __future__ import annotations

from uuid import uuid4

from knowledge.ingestion.bulk import _parts
from knowledge.ingestion.pool import Prepared


def test_parts_keep_each_source_whole_and_in_order() -> None:
    sizes = [400, 400, 400, 1500, 10, 990]
    prepared = {uuid4(): Prepared(["t"] * n, [1] * n) for n in sizes}
    parts = _parts(prepared, 1000)
    assert [[len(p.texts) for p in part.values()] for part in parts] == [[400, 400], [400], [1500], [10, 990]]
    assert [sid for part in parts for sid in part] == list(prepared)
    assert _parts({}, 1000) == []
