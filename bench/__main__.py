"""Run every benchmark module `bench/bench_*.py` and write its result to `bench/results/<name>.json`.

Each module exposes `run() -> dict`; `python -m bench [name ...]` runs the named ones only, and
`python -m bench --page-only` runs none. The results are committed: a run replaces the results of the
benches it ran. Each result carries `_wall_s` and `_machine_speed` (the machine's single-core speed just
before and after). After the runs, `bench/results/medians.svg` charts every median latency found in the
results on disk, `bench/results/goals.md` lists every goal a result reports beside its figure
(`bench/_goals.py`), and `docs/benchmarks.md` is written from the same results (generated, never edited by
hand). Benchmarks report medians and ratios measured in one run; nothing here asserts a timing.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
import time
from pathlib import Path

from bench._goals import render as render_goals
from bench._goals import render_page
from bench._plot import medians, render_svg

RESULTS = Path(__file__).parent / "results"
PAGE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def machine_speed() -> float:
    """Seconds one core takes for ten million steps of a Python loop: the yardstick beside every result.

    The machines here are shared and their speed drifts (the same loop took 0.37 s and 1.65 s on two days),
    so a figure is only comparable with another measured at a similar yardstick.
    """
    started = time.perf_counter()
    i = 0
    while i < 10_000_000:
        i += 1
    return round(time.perf_counter() - started, 3)


def main(argv: list[str]) -> int:
    RESULTS.mkdir(parents=True, exist_ok=True)
    if argv == ["--page-only"]:
        write_reports(RESULTS, PAGE)
        return 0
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("bench_"))
    wanted = [a if a.startswith("bench_") else f"bench_{a}" for a in argv]
    if wanted:
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(names)}", file=sys.stderr)
            return 2
        names = wanted
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        before = machine_speed()
        started = time.perf_counter()
        result = module.run()
        result["_wall_s"] = round(time.perf_counter() - started, 3)
        result["_machine_speed"] = {"python_loop_10m_s_before": before, "python_loop_10m_s_after": machine_speed()}
        path = RESULTS / f"{name.removeprefix('bench_')}.json"
        path.write_text(json.dumps(result, indent=2, default=str) + "\n")
        print(f"== {name} -> {path}")
        print(json.dumps(result, indent=2, default=str))
    write_reports(RESULTS, PAGE)
    return 0


def write_reports(results_dir: Path, page: Path) -> None:
    """The chart, the goal table and the benchmarks page, from every result in `results_dir`."""
    results = [(path.stem, json.loads(path.read_text())) for path in sorted(results_dir.glob("*.json"))]
    rows = [row for name, result in results for row in medians(name, result)]
    (results_dir / "medians.svg").write_text(render_svg(rows))
    print(f"== chart of {len(rows)} medians -> {results_dir / 'medians.svg'}")
    table = render_goals(results)
    (results_dir / "goals.md").write_text(table)
    print(f"== every goal beside its figure -> {results_dir / 'goals.md'}")
    print(table)
    page.write_text(render_page(results, rows))
    print(f"== the benchmarks page -> {page}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
