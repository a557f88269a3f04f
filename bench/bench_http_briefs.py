"""Front door briefs over HTTP on one worker, at the big tenant: complete briefs/s, latency and CPU per brief.

`run()` seeds (or reuses) the big-tenant database of `bench.bench_brief_cost.ensure_seeded` (100,000 chunks
in one organization, its application rows, memories and people) and serves it twice with `ac-context serve`
(one worker, the default brief cap, dev mode), each in a subprocess on 127.0.0.1:

- `after`: this tree's code;
- `before`: the code of `BEFORE_COMMIT` (issue 45's base), extracted with `git archive` into a temporary
  folder and served from there with the same interpreter and packages, and this tree's migrations (one
  database serves both, so the old code runs on today's SQL: the difference is the Python and the sessions).

Both servers stay up for the whole run, and the loads alternate between them block by block (a block is one
server, one load shape, `WARMUP_S` then `SECONDS` measured), the order flipping every round, so the two
figures of a shape come from the same minutes of a shared machine. The load: `c` closed-loop httpx callers,
each with its own client and connection, posting the brief of `bench_brief_cost`'s turn (query, 10
companies, the people, a deal, a conversation) to `POST /v1/context/briefs` with the operator token; a
caller that gets 503 `overloaded` waits its `Retry-After` (a polite client). A `one_source` shape posts the
same turn under an operator's policy with the dossier only: its server CPU per request is the request
path's own cost (edge, body, scopes, route, serialisation, uvicorn) plus a build of one small read.

Reported per server and shape (medians over rounds): complete briefs/s (200 with no failed source), the median and
p99 of the complete briefs as the client saw them, other answers by status and code, the CPU per complete
brief of the server process (with any children: /proc utime + stime) and of the PostgreSQL tree (the
postmaster and every backend), the client's own CPU per brief (it shares the cores), the answer's size,
and the load average of the machine at the block's end. Nothing here asserts a timing.

`python -m bench.bench_http_briefs` prints the result as JSON (`DATABASE_URL` names a server to seed on and
reuse; else an embedded one in a temporary folder, seeded each run: minutes).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import asyncpg
import httpx

BEFORE_COMMIT = "a71b856"
"""Issue 45's base (main with the static knowledge_search): the request path before issue 45's HTTP work."""
SHAPES: tuple[tuple[str, int], ...] = (("full", 1), ("full", 8), ("full", 32), ("one_source", 1), ("one_source", 8))
"""(brief, concurrency) of each block: the whole front door brief, and the dossier-only brief."""
ROUNDS = 3
SECONDS = 8.0
WARMUP_S = 2.0
TIMEOUT_S = 60.0
TOKEN = "bench-http-briefs-token-0123456789"
ROOT = Path(__file__).resolve().parents[1]
QUERY = "stability of the boundary layer flow over the wing at supersonic speed"
ONE_SOURCE_POLICY = {"sources": [{"name": "dossier", "token_budget": 400}], "total_token_budget": 400}
"""An operator's policy reading one source: the request path with almost no build behind it."""
_TICK = os.sysconf("SC_CLK_TCK")
_COMPLETE = b'"failed_sources":[]'
"""A 200 answer holding this holds a complete brief (no failed source): found without parsing the answer, so
the client spends little of the shared cores (quotes inside a JSON string are escaped, so no text matches)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bodies(scopes: dict[str, Any]) -> dict[str, bytes]:
    """The JSON body of each brief shape: bench_brief_cost's turn at the big tenant."""
    app = scopes["app"]
    turn = {
        "organization_id": scopes["big"],
        "user_id": str(app["users"][0]),
        "query": QUERY,
        "entities": [
            *({"kind": "crm.company", "id": str(c)} for c in app["companies"][:10]),
            *({"kind": "crm.person", "id": str(p)} for p in app["people"]),
            {"kind": "crm.deal", "id": str(app["deal"])},
        ],
        "conversation_id": str(app["conversation"]),
    }
    return {"full": json.dumps(turn).encode(), "one_source": json.dumps({**turn, "policy": ONE_SOURCE_POLICY}).encode()}


def _serve(tree: Path, db_url: str, data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    """`ac-context serve` of the code in `tree` on 127.0.0.1:`port`, one worker, dev mode, ready to answer."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AC_CONTEXT_", "INNGEST_"))},
        "PYTHONPATH": str(tree),
        "DATABASE_URL": db_url,
        "AC_CONTEXT_API_TOKEN": TOKEN,
        "AC_CONTEXT_DATA_DIR": str(data_dir),
        "AC_CONTEXT_RUN_FUNCTIONS": "inngest",  # no in-process function work beside the briefs
    }
    command = [sys.executable, "-c", "from functions.cli import main; main()", "serve", "--port", str(port)]
    process = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(1200):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            raise RuntimeError(f"the server of {tree} exited before it was ready")
        time.sleep(0.1)
    process.terminate()
    raise RuntimeError(f"the server of {tree} never became ready")


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            out.setdefault(ppid, []).append(int(entry.name))
    return out


def _tree_cpu_s(root: int) -> float:
    """CPU seconds (utime + stime) of `root` and every process under it, as they are now."""
    children = _children()
    total, pending = 0.0, [root]
    while pending:
        pid = pending.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / _TICK
        pending.extend(children.get(pid, []))
    return total


async def _postmaster(db_url: str) -> int | None:
    """The pid of the PostgreSQL server's postmaster when it runs on this machine (a backend's parent), else None."""
    conn = await asyncpg.connect(db_url)
    try:
        backend = int(await conn.fetchval("SELECT pg_backend_pid()"))
        try:  # while the connection is open: its backend exits with it
            return int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            return None
    finally:
        await conn.close()


def _percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _block(port: int, server_pid: int, postmaster: int | None, body: bytes, concurrency: int) -> dict[str, Any]:
    """`concurrency` closed-loop callers for WARMUP_S + SECONDS; the figures of the last SECONDS."""
    url = f"http://127.0.0.1:{port}/v1/context/briefs"
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    complete: list[float] = []
    other: Counter[str] = Counter()
    sizes: list[int] = []
    clients = [httpx.AsyncClient(timeout=TIMEOUT_S) for _ in range(concurrency)]
    started = time.perf_counter()
    measure_from, deadline = started + WARMUP_S, started + WARMUP_S + SECONDS
    marks: dict[str, float] = {}

    async def caller(client: httpx.AsyncClient) -> None:
        async with client:
            while (sent := time.perf_counter()) < deadline:
                try:
                    response = await client.post(url, content=body, headers=headers)
                except httpx.HTTPError as exc:
                    if sent >= measure_from:
                        other[f"no_answer_{type(exc).__name__}"] += 1
                    continue
                elapsed = time.perf_counter() - sent
                if sent < measure_from:
                    continue
                if response.status_code == 200 and _COMPLETE in response.content:
                    complete.append(elapsed)
                    sizes.append(len(response.content))
                    continue
                code = "with_holes" if response.status_code == 200 else response.json().get("error", {}).get("code")
                other[f"{response.status_code}_{code}"] += 1
                if response.status_code == 503:
                    await asyncio.sleep(min(float(response.headers.get("retry-after", "1")), deadline - sent))

    async def mark() -> None:
        await asyncio.sleep(WARMUP_S)
        marks["server"] = _tree_cpu_s(server_pid)
        marks["postgres"] = _tree_cpu_s(postmaster) if postmaster else 0.0
        marks["client"] = time.process_time()
        marks["at"] = time.perf_counter()

    await asyncio.gather(mark(), *(caller(client) for client in clients))
    window = time.perf_counter() - marks["at"]
    server_s = _tree_cpu_s(server_pid) - marks["server"]
    client_s = time.process_time() - marks["client"]
    postgres_s = (_tree_cpu_s(postmaster) - marks["postgres"]) if postmaster else None
    done = max(len(complete), 1)
    ordered = sorted(complete)
    return {
        "complete": len(complete),
        "complete_per_s": round(len(complete) / window, 1),
        "median_ms": round(statistics.median(ordered) * 1000, 1) if ordered else None,
        "p99_ms": round(_percentile(ordered, 0.99) * 1000, 1) if ordered else None,
        "other_answers": dict(other),
        "server_cpu_ms_per_brief": round(server_s / done * 1000, 2),
        "postgres_cpu_ms_per_brief": None if postgres_s is None else round(postgres_s / done * 1000, 2),
        "cpu_ms_per_brief": None if postgres_s is None else round((server_s + postgres_s) / done * 1000, 2),
        "client_cpu_ms_per_brief": round(client_s / done * 1000, 2),
        "server_cpu_s_per_s": round(server_s / window, 2),
        "answer_bytes": int(statistics.median(sizes)) if sizes else None,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def _median_of(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure over the rounds of one server and shape (the rounds kept beside)."""
    keys = ("complete_per_s", "median_ms", "p99_ms", "server_cpu_ms_per_brief", "postgres_cpu_ms_per_brief",
            "cpu_ms_per_brief", "client_cpu_ms_per_brief", "server_cpu_s_per_s", "answer_bytes",
            "load_average_1m")  # fmt: skip
    out: dict[str, Any] = {}
    for key in keys:
        values = [b[key] for b in blocks if isinstance(b.get(key), int | float)]
        out[key] = round(statistics.median(values), 2) if values else None
    out["other_answers"] = sum((Counter(b["other_answers"]) for b in blocks), Counter())
    out["rounds"] = blocks
    return out


def _before_tree(tmp: Path) -> Path | str:
    """BEFORE_COMMIT's code in `tmp/before`, or why it could not be extracted."""
    tree = tmp / "before"
    tree.mkdir()
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", BEFORE_COMMIT], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:  # no git, or a tree without the history
        return f"git archive {BEFORE_COMMIT} failed: {exc}"
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    # Both trees serve one database, migrated by this tree: the old code gets this tree's migrations, so its
    # serve finds every file applied (an edited or unknown file would stop it) and runs on the same SQL.
    shutil.rmtree(tree / "migrations")
    shutil.copytree(ROOT / "migrations", tree / "migrations")
    return tree


async def _measure(db_url: str, tmp: Path) -> dict[str, Any]:
    conn = await asyncpg.connect(db_url)
    try:
        scopes = json.loads(await conn.fetchval("SELECT doc FROM public.bench_brief_scopes"))
    finally:
        await conn.close()
    bodies = _bodies(scopes)
    postmaster = await _postmaster(db_url)
    before = _before_tree(tmp)
    trees = {"after": ROOT} if isinstance(before, str) else {"before": before, "after": ROOT}
    servers: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
    blocks: dict[str, dict[str, list[dict[str, Any]]]] = {name: {} for name in trees}
    load_before = os.getloadavg()
    try:
        for name, tree in trees.items():
            port = _free_port()
            servers[name] = (await asyncio.to_thread(_serve, tree, db_url, tmp / f"data-{name}", port), port)
        for round_ in range(ROUNDS):
            order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
            for shape, concurrency in SHAPES:
                for name in order:
                    process, port = servers[name]
                    block = await _block(port, process.pid, postmaster, bodies[shape], concurrency)
                    blocks[name].setdefault(f"{shape}_c{concurrency}", []).append(block)
    finally:
        for process, _ in servers.values():
            process.terminate()
        for process, _ in servers.values():
            await asyncio.to_thread(process.wait, 30)
    figures = {name: {key: _median_of(b) for key, b in by_shape.items()} for name, by_shape in blocks.items()}
    result: dict[str, Any] = {
        "setup": {
            "entry_point": "ac-context serve (one worker, default brief cap, dev mode)",
            "shapes": [f"{shape}_c{c}" for shape, c in SHAPES],
            "rounds": ROUNDS,
            "seconds_per_block": SECONDS,
            "warmup_s": WARMUP_S,
            "client": "httpx, one client and connection per caller, closed loop, waits Retry-After after a 503",
            "caller": "the operator token (an organization existence check per request, as an operator's turn)",
            "before": str(before) if isinstance(before, str) else BEFORE_COMMIT,
            "load_average_at_start": [round(x, 2) for x in load_before],
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
            "cpus": os.cpu_count(),
            "load_note": "a shared 2-core machine: the client runs on it too; compare before and after of one run",
        },
        **figures,
    }
    if "before" in figures:
        result["ratios_after_over_before"] = {
            key: {
                figure: _ratio(figures["after"][key][figure], figures["before"][key][figure])
                for figure in ("complete_per_s", "server_cpu_ms_per_brief", "cpu_ms_per_brief", "p99_ms")
            }
            for key in figures["after"]
        }
    return result


def _ratio(after: Any, before: Any) -> float | None:
    if not isinstance(after, int | float) or not isinstance(before, int | float) or before == 0:
        return None
    return round(after / before, 3)


def goal_report(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 45's HTTP goals beside this run's figures (the after tree's medians)."""
    from bench._goals import goal

    after = result["after"]
    c1, c8, c32 = after["full_c1"], after["full_c8"], after["full_c32"]
    one = after["one_source_c1"]
    limits = (
        f"{c8['cpu_ms_per_brief']} ms CPU per complete brief at c = 8 (server {c8['server_cpu_ms_per_brief']}, "
        f"PostgreSQL {c8['postgres_cpu_ms_per_brief']}): two cores give at most "
        f"{round(2000 / c8['cpu_ms_per_brief'], 1) if c8['cpu_ms_per_brief'] else '?'} briefs/s when nothing else "
        f"runs, and the load average was {c8['load_average_1m']} (the client and other sessions share the cores); "
        f"c = 1: {c1['complete_per_s']}/s (p50 {c1['median_ms']} ms), c = 32: {c32['complete_per_s']}/s "
        f"(p99 {c32['p99_ms']} ms); the build (knowledge_search most of it) is the brief's cost, not the request path"
    )
    ratios = result.get("ratios_after_over_before", {})
    path_ratio = ratios.get("one_source_c1", {}).get("server_cpu_ms_per_brief")
    before = result.get("before", {})
    path_note = (
        f"{one['server_cpu_ms_per_brief']} ms per request after, "
        f"{before.get('one_source_c1', {}).get('server_cpu_ms_per_brief')} before (c = 1); at c = 8 "
        f"{after['one_source_c8']['server_cpu_ms_per_brief']} after, "
        f"{before.get('one_source_c8', {}).get('server_cpu_ms_per_brief')} before; the runs' spread on the "
        "shared cores is about 15 %, and uvicorn with httptools, FastAPI's routing and dependencies are most "
        "of what is left"
    )
    return [
        goal("complete front door briefs/s at c = 8, one worker, two cores", c8["complete_per_s"], at_least=100,
             unit="/s", note=limits),
        goal("p99 of a complete brief at c = 8", c8["p99_ms"], at_most=100, unit=" ms", note=limits),
        goal("server CPU per one-source brief (the request path), after over before", path_ratio, at_most=1.0,
             unit="x", note=path_note),
    ]  # fmt: skip


def run() -> dict[str, Any]:
    """Seed or reuse the big tenant, serve it from both trees, and load them block by block, interleaved."""
    from bench.bench_brief_cost import ensure_seeded
    from state.embedded import embedded_server_url, stop_embedded_server

    with tempfile.TemporaryDirectory(prefix="ac-bench-http-") as tmp:
        external = os.environ.get("DATABASE_URL")
        server = external or embedded_server_url(Path(tmp), keep_running=True)
        try:
            url = asyncio.run(ensure_seeded(server))
            result = asyncio.run(_measure(url, Path(tmp)))
            result["goal_report"] = goal_report(result)
            return result
        finally:
            shutil.rmtree(Path(tmp) / "before", ignore_errors=True)
            if not external:
                stop_embedded_server(Path(tmp))


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, default=str))
