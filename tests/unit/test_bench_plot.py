from __future__ import annotations

import xml.etree.ElementTree as ET

from bench._plot import medians, render_svg


def test_medians_are_found_in_each_shape_the_benchmarks_write() -> None:
    result = {
        "search_latency": {"as_tenant_ms": {"median": 18.4, "p95": 22.7}, "chunks": 100000},
        "reads": {"memory_run": {"median_ms": 3.7, "p95_ms": 4.6}},
        "pack": {"100": {"median_ms_front_door_budgets": 1.2, "kept_tokens": 2580}},
        "flag": True,
    }
    assert sorted(medians("b", result)) == [
        ("b: pack/100/front_door_budgets", 1.2),
        ("b: reads/memory_run", 3.7),
        ("b: search_latency/as_tenant", 18.4),
    ]


def test_the_chart_is_valid_svg_with_one_bar_per_median() -> None:
    svg = render_svg([("a <b>", 0.05), ("c", 240.0)])
    root = ET.fromstring(svg)
    bars = root.findall("{http://www.w3.org/2000/svg}rect")
    assert len(bars) == 2
    assert float(bars[1].get("width", "0")) > float(bars[0].get("width", "0"))
