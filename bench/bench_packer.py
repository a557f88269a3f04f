"""Packer and policy-resolution benchmark: medians of several repeats, no assertion on timing.

Packs 100, 1,000 and 10,000 items of all ten kinds from ten sources, with subject-key collisions inside and
across classes, hostile whitespace in bodies, refs and body refs, under the Front Door budgets and under
budgets big enough to keep everything (the render-heavy case). Also times the publish check of the fixed
policies with the schema-only registry (spec target: under 5 ms) and the construction of that registry.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

from context.models import CLASS_ORDER, ContextItem, ContextPolicy, ContextSourceSpec, ResourceRef
from context.packer import ContextPacker
from context.policies import FRONT_DOOR, OUTREACH_PLANNER
from context.registry import ContextSourceRegistry

SIZES = (100, 1_000, 10_000)
REPEATS = 7


def _items(count: int, seed: int = 7) -> list[ContextItem]:
    rng = random.Random(seed)
    keys = [f"crm.company:{n}:{attr}" for n in range(max(count // 20, 1)) for attr in ("stage", "owner")]
    items = []
    for index in range(count):
        kind = CLASS_ORDER[index % len(CLASS_ORDER)]
        keyless = kind in ("conversation", "run_history")
        items.append(
            ContextItem(
                source=kind,
                kind=kind,
                title=f"Fact {index}",
                body=("word " * rng.randint(3, 60)) + ("\n## not a heading\u2028tail" if index % 7 == 0 else ""),
                subject_key=None if keyless or rng.random() < 0.4 else rng.choice(keys),
                ref=ResourceRef(kind="crm.company", id=f"c{index}") if index % 3 else None,
                body_refs=[ResourceRef(kind="crm.person", id=f"p{index % 50}")] if index % 5 == 0 else [],
                tokens=rng.choice([0, 0, rng.randint(3, 80)]),
                rank_in_section=rng.randint(0, 3),
            )
        )
    rng.shuffle(items)  # the builder's answer order is not the pack order
    return items


def _roomy() -> ContextPolicy:
    specs = [ContextSourceSpec(name=kind, token_budget=10_000_000) for kind in CLASS_ORDER]
    return ContextPolicy(sources=specs, total_token_budget=100_000_000)


def _everything() -> ContextPolicy:
    """Every kind enabled, with the Front Door's budgets where it has one."""
    budgets = {s.name: s.token_budget for s in FRONT_DOOR.sources}
    specs = [ContextSourceSpec(name=kind, token_budget=budgets.get(kind, 800)) for kind in CLASS_ORDER]
    return ContextPolicy(sources=specs, total_token_budget=FRONT_DOOR.total_token_budget)


def _median_ms(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    fn()  # warm up
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(samples), 3)


def run() -> dict[str, object]:
    packer = ContextPacker()
    budgeted, roomy = _everything(), _roomy()
    pack: dict[str, object] = {}
    for size in SIZES:
        items = _items(size)
        brief = packer.pack(items, budgeted, failed_sources=["knowledge"])
        full = packer.pack(items, roomy)
        pack[str(size)] = {
            "median_ms_front_door_budgets": _median_ms(lambda i=items: packer.pack(i, budgeted)),
            "median_ms_keep_everything": _median_ms(lambda i=items: packer.pack(i, roomy)),
            "kept_tokens_front_door_budgets": brief.tokens,
            "dropped_front_door_budgets": sum(brief.dropped.values()),
            "dropped_by_precedence_only": sum(full.dropped.values()),
        }
    registry = ContextSourceRegistry.for_publishing()
    resolve = {
        "median_ms_validate_front_door": _median_ms(lambda: registry.validate(FRONT_DOOR), 51),
        "median_ms_validate_outreach_planner": _median_ms(lambda: registry.validate(OUTREACH_PLANNER), 51),
        "median_ms_publish_front_door_payload": _median_ms(
            lambda: registry.publish(FRONT_DOOR.model_dump(mode="json")), 51
        ),
        "median_ms_build_publishing_registry": _median_ms(ContextSourceRegistry.for_publishing, 51),
        "target_ms": 5.0,
    }
    return {
        "pack": pack,
        "policy_resolution": resolve,
        "pack_target_ms": [3, 15],
        "repeats": REPEATS,
    }
