"""The per-source cap fills the limit (migrations/0103): a preference for variety, never a loss of evidence.

A candidate past its source's cap follows every candidate within its source's cap, by score, and fills the
room the limit leaves; explain names the rule that placed each hit (`rank`, `cap_fill`) and, for a capped
candidate the limit had no room for, `per_source_cap`. The lexical half alone ranks here, so the order is
the chunks' BM25, known from their words.
"""

from __future__ import annotations

from uuid import UUID

from knowledge.search import Fusion, KnowledgeHit, search, search_explained
from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit

LEXICAL = Fusion(dense=0.0, lexical=1.0)


def _manual(sections: int) -> str:
    """A Markdown manual whose every section is its own chunk and names the pump fewer times than the last."""
    return "\n\n".join(
        f"## Section {n}\n\n" + " ".join(["The pump"] * (sections - n) + [f"filler words of section {n}"] * 40)
        for n in range(sections)
    )


async def _world(kit: Kit, org: UUID) -> tuple[UUID, UUID]:
    manual = await kit.ingest(org, _manual(8), title="Pump manual")
    note = await kit.ingest(org, "A short note: the pump is in the basement.", title="Note")
    return manual, note


def _chunks_of(hits: list[KnowledgeHit], source: UUID) -> int:
    return sum(h.source_id == source for h in hits)


async def test_capped_candidates_fill_the_limit_in_score_order_after_every_other_source(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    manual, note = await _world(kit, org)
    kwargs = {"include_organization": True, "embedders": kit.lookup, "fusion": LEXICAL, "min_relevance": 0.0}
    hits = await search(kit.db, org, "pump", limit=8, per_source=3, **kwargs)
    assert _chunks_of(hits, manual) >= 6, "the manual's capped chunks fill the room the note left"
    ranked = [h for h in hits if h.placed == "rank"]
    filled = [h for h in hits if h.placed == "cap_fill"]
    assert hits == ranked + filled, "every hit placed by rank comes before every hit that fills"
    assert _chunks_of(ranked, manual) == 3 and _chunks_of(ranked, note) == 1
    assert {h.source_id for h in filled} == {manual}
    assert [h.score for h in filled] == sorted((h.score for h in filled), reverse=True)
    assert [h.score for h in ranked] == sorted((h.score for h in ranked), reverse=True)
    # Without a cap the same chunks come back, in score order alone.
    uncapped = await search(kit.db, org, "pump", limit=8, per_source=None, **kwargs)
    assert {h.chunk_id for h in uncapped} == {h.chunk_id for h in hits}


async def test_explain_names_the_rule_that_placed_each_hit_and_what_the_cap_cut_for_want_of_room(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    manual, note = await _world(kit, org)
    kwargs = {"include_organization": True, "embedders": kit.lookup, "fusion": LEXICAL, "min_relevance": 0.0}
    kept, cut = await search_explained(kit.db, org, "pump", limit=5, per_source=3, **kwargs)
    assert kept == await search(kit.db, org, "pump", limit=5, per_source=3, **kwargs)
    assert [h.placed for h in kept] == ["rank"] * 4 + ["cap_fill"]
    assert {h.cut for h in cut} == {"per_source_cap"} and {h.source_id for h in cut} == {manual}
    assert all(h.placed is None for h in cut)
    # A cut manual chunk outranks the note's kept chunk by score: the cap, not the score, placed them.
    kept_note = next(h for h in kept if h.source_id == note)
    assert max(h.score for h in cut) > kept_note.score
