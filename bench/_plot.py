"""A dependency-free SVG chart of every median latency the benchmarks reported.

It walks each result for keys that hold a median in milliseconds (`median_ms…` keys, or `median` inside a
`…_ms` object) and draws one horizontal bar per measurement, on one log scale, so a reader sees at a glance
where the time goes. It never measures anything itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from html import escape
from typing import Any

__all__ = ["medians", "render_svg"]


def medians(name: str, result: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, float]]:
    """Every (label, median ms) pair of one benchmark result."""
    for key, value in result.items():
        label = f"{prefix}{key}"
        if isinstance(value, Mapping):
            if key.endswith("_ms") and isinstance(value.get("median"), int | float):
                yield f"{name}: {label.removesuffix('_ms')}", float(value["median"])
            elif isinstance(value.get("median_ms"), int | float):
                yield f"{name}: {label}", float(value["median_ms"])
            else:
                yield from medians(name, value, prefix=f"{label}/")
        elif key.startswith("median_ms") and isinstance(value, int | float) and not isinstance(value, bool):
            yield f"{name}: {prefix}{key.removeprefix('median_ms').strip('_') or 'median'}", float(value)


def render_svg(rows: list[tuple[str, float]], *, title: str = "Benchmark medians (ms, log scale)") -> str:
    """An SVG bar chart of `rows`, one bar per (label, milliseconds)."""
    width, label_w, bar_w, row_h, top = 1100, 520, 480, 18, 40
    height = top + row_h * len(rows) + 20
    lo = min((v for _, v in rows if v > 0), default=0.01)
    hi = max((v for _, v in rows), default=1.0)
    lo_log, hi_log = math.log10(max(lo, 1e-3)) - 0.1, math.log10(max(hi, 1e-3)) + 0.1

    def scale(v: float) -> float:
        return bar_w * (math.log10(max(v, 1e-3)) - lo_log) / (hi_log - lo_log)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" '
        'font-size="11">',
        f'<text x="10" y="20" font-size="14">{escape(title)}</text>',
    ]
    for i, (label, value) in enumerate(rows):
        y = top + i * row_h
        parts.append(f'<text x="10" y="{y + 12}">{escape(label[:80])}</text>')
        parts.append(
            f'<rect x="{label_w}" y="{y + 2}" width="{scale(value):.1f}" height="{row_h - 5}" fill="#4a7ab8"/>'
        )
        parts.append(f'<text x="{label_w + scale(value) + 6:.1f}" y="{y + 12}">{value:g} ms</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
