"""Import cost is part of the interface (CONVENTIONS.md 11): the core and `ac-context --help` load no SDK.

Each check runs in a fresh interpreter and reads `sys.modules`. The core packages, with every name of
their `__all__` read, load no web framework and no provider SDK; `ac-context --help` (the root, every
group, and the commands that run the most of the core) loads none of those, no database driver, no
numerical or PDF library, and of the core only the error modules and the package `__init__`s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SDKS = frozenset({"fastapi", "starlette", "inngest", "openai", "boto3", "botocore"})
"""What no core import may load: the web framework and the provider SDKs."""
HELP_FORBIDDEN = SDKS | {"asyncpg", "numpy", "pypdf", "wordllama", "uvicorn", "httpx", "pgvector", "psutil"}
"""What `--help` may not load either: the database driver and the libraries only a command's work needs."""
CORE = ("state", "context", "knowledge", "memory")
HELP_CORE_ALLOWED = frozenset(
    {"state", "context", "knowledge", "memory"}
    | {f"{pkg}.errors" for pkg in CORE}
    | {"state.lazy", "state.embedded"}  # the re-export helper; `main()` turns SIGTERM into a normal exit
)
"""The core modules `--help` may load: package `__init__`s (which import nothing), errors, two small helpers."""
HELP_ARGS = [
    ["--help"],
    *([group, "--help"] for group in ("org", "keys", "memory", "sources", "db", "policy", "erase", "receipts")),
    *([command, "--help"] for command in ("ingest", "search", "switch-model", "brief", "serve", "demo", "migrate")),
]


def _modules_after(code: str) -> set[str]:
    """The top-level and dotted names in `sys.modules` after `code` runs in a fresh interpreter."""
    script = f"{code}\nimport json, sys\nprint('\\n' + json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def _roots(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


@pytest.mark.parametrize("module", ["functions.errors", "context", "knowledge", "memory", "state.db"])
def test_importing_a_core_package_and_every_public_name_loads_no_web_framework_or_sdk(module: str) -> None:
    loaded = _modules_after(f"import {module} as m\nfor name in getattr(m, '__all__', []): getattr(m, name)")
    assert not _roots(loaded) & SDKS, f"import {module} loads {sorted(_roots(loaded) & SDKS)}"


EXTRACTION = frozenset({"pypdf", "bs4", "semchunk"})
"""The libraries only extraction and chunking need (`knowledge.documents`)."""


@pytest.mark.parametrize("module", ["context.sources", "knowledge.search", "knowledge.embedding.registry"])
def test_the_context_sources_and_search_load_no_extraction_library(module: str) -> None:
    """A brief and a search read chunks already made: they never load what makes them (knowledge/__init__.py)."""
    loaded = _modules_after(f"import {module}")
    assert not _roots(loaded) & EXTRACTION, f"import {module} loads {sorted(_roots(loaded) & EXTRACTION)}"
    rooms = {".".join(name.split(".")[:2]) for name in loaded if name.startswith("knowledge.")}
    assert not rooms & {"knowledge.documents", "knowledge.ingestion"}, f"import {module} loads {sorted(rooms)}"


@pytest.mark.parametrize("package", ["context", "knowledge", "memory", "functions.api", "functions.demo"])
def test_a_package_init_imports_none_of_its_modules_until_a_name_is_read(package: str) -> None:
    loaded = _modules_after(f"import {package}")
    own = {name for name in loaded if name.startswith(f"{package}.")}
    assert not own, f"import {package} loads {sorted(own)}"


def test_ac_context_help_loads_no_sdk_no_driver_and_no_core_beyond_the_errors() -> None:
    calls = "\n".join(
        f"try:\n    app({args!r}, prog_name='ac-context')\nexcept SystemExit:\n    pass" for args in HELP_ARGS
    )
    loaded = _modules_after(f"from functions.cli import app\n{calls}")
    heavy = _roots(loaded) & HELP_FORBIDDEN
    assert not heavy, f"ac-context --help loads {sorted(heavy)}"
    core = {name for name in loaded if name.split(".")[0] in CORE} - HELP_CORE_ALLOWED
    assert not core, f"ac-context --help loads core modules {sorted(core)}"


def test_the_entry_point_main_loads_no_more_than_help() -> None:
    loaded = _modules_after(
        "import sys\nsys.argv = ['ac-context', '--help']\nfrom functions.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    assert not _roots(loaded) & HELP_FORBIDDEN


def test_the_search_defaults_the_cli_restates_for_its_help_are_the_cores() -> None:
    from functions.cli import knowledge as cli_knowledge
    from knowledge import search

    assert cli_knowledge.DEFAULT_MIN_RELEVANCE == search.DEFAULT_MIN_RELEVANCE
    assert cli_knowledge.DEFAULT_PER_SOURCE == search.DEFAULT_PER_SOURCE
    assert cli_knowledge.DEFAULT_KEEP_TOP == search.DEFAULT_KEEP_TOP


@pytest.mark.parametrize("package", ["context", "knowledge", "memory", "functions.api", "functions.demo"])
def test_a_lazy_package_exports_exactly_the_names_of_its_type_checking_block(package: str) -> None:
    import importlib

    from state.lazy import type_checking_imports

    module = importlib.import_module(package)
    assert module.__file__ is not None
    assert set(type_checking_imports(module.__file__)) == set(module.__all__)
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'not_exported'"):
        _ = module.not_exported
