"""`context.sources.standard`: the seven application-state sources are the ten in class order, less three."""

from __future__ import annotations

from typing import cast

from context.sources import default_sources
from context.sources.dossier import DossierContextSource
from context.sources.standard import application_sources
from state.db import Database

DB = cast(Database, object())  # construction reads no database


def test_the_seven_are_the_default_ten_without_memory_and_knowledge_in_the_same_order() -> None:
    left_out = {"personal_memory", "knowledge", "memory"}
    expected = [s.name for s in default_sources(DB) if s.name not in left_out]
    assert [s.name for s in application_sources(DB)] == expected
    assert len(expected) == 7


def test_a_dossier_passed_in_is_the_one_registered() -> None:
    dossier = DossierContextSource(DB)
    assert dossier in application_sources(DB, dossier=dossier)
