"""The README's walk (issue 46, item 3): from a fresh data folder, the commands between `<!-- walk:start -->`
and `<!-- walk:end -->` alone take a new organization to a remembered memory, a brief that cites it and the
person's erasure. The test runs exactly those lines, one shell each, in order, on a fresh embedded server in a
fresh data folder (nothing of the test session's database), each `NAME=$(…)` line's output becoming `$NAME`
for the lines after it, as a shell running the block would."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
_BLOCK = re.compile(r"<!-- walk:start -->\s*```sh\n(?P<body>.*?)```\s*<!-- walk:end -->", re.DOTALL)
_ASSIGN = re.compile(r"^(?P<name>[A-Z_][A-Z0-9_]*)=\$\((?P<command>.*)\)$")
_ID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_STEPS = ("org create", "user add", "agent add", "run start", "memory remember", "brief", "erase user", "brief")
"""What the walk must do, in this order (other lines may sit between)."""


def walk_lines(readme: str) -> list[str]:
    """The walk's command lines: backslash continuations joined, blank lines dropped."""
    found = _BLOCK.search(readme)
    assert found is not None, "README.md has no <!-- walk:start --> ```sh … ``` <!-- walk:end --> block"
    joined = re.sub(r"\\\n\s*", "", found.group("body"))
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def _command(line: str) -> str:
    """The `ac-context …` part of a line, without an assignment around it or a comment after it."""
    assigned = _ASSIGN.match(line.split("  #")[0].strip())
    return (assigned.group("command") if assigned else line).split("  #")[0].strip()


def test_the_walk_names_each_step_in_order() -> None:
    commands = [_command(line) for line in walk_lines(README.read_text(encoding="utf-8"))]
    steps = iter(commands)
    for step in _STEPS:
        assert any(c.startswith(f"ac-context {step}") for c in steps), f"the walk lost its `{step}` step"


@dataclass
class Ran:
    line: str
    out: str
    err: str


def _env(data: Path) -> dict[str, str]:
    keep = {
        k: v for k, v in os.environ.items() if not k.startswith(("AC_CONTEXT_", "INNGEST_")) and k != "DATABASE_URL"
    }
    path = f"{Path(sys.executable).parent}{os.pathsep}{keep.get('PATH', '')}"
    return keep | {"AC_CONTEXT_DATA_DIR": str(data), "PATH": path, "COLUMNS": "100"}


def _shell(line: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{line}"], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


def run_walk(lines: list[str], env: dict[str, str], cwd: Path) -> list[Ran]:
    """Run each line in its own shell, in order; an assignment's output becomes a variable of the next ones."""
    ran: list[Ran] = []
    for line in lines:
        assigned = _ASSIGN.match(line.split("  #")[0].strip())
        done = _shell(line if assigned is None else f'{line}\nprintf "%s" "${assigned["name"]}"', env, cwd)
        assert done.returncode == 0, f"{line}\nexit {done.returncode}\n{done.stdout}\n{done.stderr}"
        if assigned is not None:
            assert re.fullmatch(_ID, done.stdout), f"{line} printed {done.stdout!r}, not an id"
            env = env | {assigned["name"]: done.stdout}
        ran.append(Ran(line, done.stdout, done.stderr))
    return ran


def _flat(text: str) -> str:
    return " ".join(text.split())


def _only(ran: list[Ran], start: str) -> list[Ran]:
    return [r for r in ran if _command(r.line).startswith(start)]


@pytest.fixture
def data() -> Iterator[Path]:
    """A fresh data folder outside pytest's temporary root (another session's pytest may prune that root)."""
    top = Path(tempfile.mkdtemp(prefix="ac-context-walk-"))
    folder = top / "data"
    try:
        yield folder
    finally:
        if folder.exists():  # the walk's commands leave the embedded server running for the next one: stop it
            stop = _shell("ac-context db stop", _env(folder), top)
            assert stop.returncode == 0, stop.stderr
        shutil.rmtree(top, ignore_errors=True)


def test_the_readme_walk_remembers_briefs_with_the_citation_and_erases_the_person(data: Path, tmp_path: Path) -> None:
    lines = walk_lines(README.read_text(encoding="utf-8"))
    env = _env(data)
    ran = run_walk(lines, env, tmp_path)

    [remembered] = _only(ran, "ac-context memory remember")
    memory = re.search(rf"remembered ({_ID})", remembered.out)
    assert memory is not None, remembered.out
    memory_id = memory.group(1)
    text = re.search(r'--text "([^"]+)"', remembered.line)
    assert text is not None
    before, after = _only(ran, "ac-context brief")
    assert f"[agent.memory {memory_id}]" in _flat(before.out), "the brief cites the remembered memory"
    assert text.group(1) in _flat(before.out)

    [erased] = _only(ran, "ac-context erase user")
    receipt_id = re.search(rf"receipt ({_ID}) \(user, complete\)", _flat(erased.out))
    assert receipt_id is not None, erased.out
    assert "agent.memories: 1" in _flat(erased.out)
    assert memory_id not in after.out and text.group(1) not in _flat(after.out), "the erased memory is gone"

    org = next(r.out for r in ran if r.line.startswith("ORG="))
    listed = _shell(f"ac-context receipts list --org {org} --json", env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    receipts = json.loads(listed.stdout.split("\n\n")[0]) if listed.stdout.startswith("[") else None
    assert receipts is not None and receipt_id.group(1) in {r["id"] for r in receipts}, listed.stdout
