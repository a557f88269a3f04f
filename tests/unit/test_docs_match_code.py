"""The docs say what the code does: the count of Inngest functions, their ids, and the required settings.

A count written in prose drifts silently when a function is added (the README, `docs/operations.md` and two
docstrings said six while the catalog built seven). These tests read the numbers and lists the docs state
and compare them with what `functions.inngest.catalog.build_functions` builds and what
`functions._production.production_problems` refuses to start without.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import inngest
import pytest

from functions._production import production_problems
from functions._services import ServiceSlot
from functions.inngest.catalog import build_functions
from state.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "docs" / "operations.md", ROOT / "docs" / "architecture.md"]
NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_NUMBER = r"(\d+|" + "|".join(NUMBERS) + r")"
COUNT_PATTERNS = [
    # "the seven functions", "six Inngest functions", "7 durable functions"
    re.compile(_NUMBER + r"\s+(?:Inngest\s+|durable\s+)?functions\b", re.IGNORECASE),
    # "**Inngest functions** (seven, in `functions/inngest/`)"
    re.compile(r"Inngest functions\**\s*\(" + _NUMBER + r"\b", re.IGNORECASE),
]
REQUIRED_ROW = re.compile(r"^\| `([A-Z0-9_]+)` \| required in production \|", re.MULTILINE)


def _catalog() -> list[inngest.Function]:  # type: ignore[type-arg]
    client = inngest.Inngest(app_id="ac-context", is_production=False)
    return build_functions(client, ServiceSlot())


def stated_counts(text: str) -> list[tuple[str, int]]:
    """Every function count `text` states, with the words that state it."""
    found = []
    for pattern in COUNT_PATTERNS:
        for match in pattern.finditer(text):
            word = match.group(1).lower()
            found.append((match.group(0), int(word) if word.isdigit() else NUMBERS[word]))
    return found


def _module_docstrings() -> dict[str, str]:
    docstrings = {}
    for path in sorted((ROOT / "functions").rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        if doc:
            docstrings[path.relative_to(ROOT).as_posix()] = doc
    return docstrings


def _stated_in_docs() -> dict[str, list[tuple[str, int]]]:
    texts = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8") for path in DOCS}
    texts.update(_module_docstrings())
    return {name: stated_counts(text) for name, text in texts.items()}


def test_every_count_of_inngest_functions_in_the_docs_is_the_catalogs() -> None:
    built = len(_catalog())
    stated = _stated_in_docs()
    wrong = {name: counts for name, counts in stated.items() if any(n != built for _, n in counts)}
    assert wrong == {}, f"the catalog builds {built} functions"


@pytest.mark.parametrize("doc", ["README.md", "docs/operations.md", "docs/architecture.md"])
def test_each_doc_states_the_count_it_is_checked_for(doc: str) -> None:
    assert stated_counts((ROOT / doc).read_text(encoding="utf-8")) != [], f"{doc} no longer states the count"


def test_operations_lists_every_function_id_the_catalog_builds() -> None:
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    listed = text.split("functions appear:", 1)[1].split("(ids", 1)[0]
    ids = {fn.local_id for fn in _catalog()}
    assert set(re.findall(r"`([a-z-]+)`", listed)) == ids


def test_the_required_settings_in_operations_are_the_ones_production_refuses_to_start_without() -> None:
    empty = Settings(api_token=None, inngest_serve_origin=None, step_encryption_keys=None)
    in_code = {problem.split(" ", 1)[0] for problem in production_problems(empty, environ={})}
    in_docs = set(REQUIRED_ROW.findall((ROOT / "docs" / "operations.md").read_text(encoding="utf-8")))
    assert in_docs == in_code


def test_the_dockerfile_example_sets_every_required_setting() -> None:
    empty = Settings(api_token=None, inngest_serve_origin=None, step_encryption_keys=None)
    in_code = {problem.split(" ", 1)[0] for problem in production_problems(empty, environ={})}
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    example = text.split("docker run", 1)[1].split("\n#\n", 1)[0]
    assert in_code <= set(re.findall(r"-e ([A-Z0-9_]+)=", example))
    assert 'CMD ["uvicorn", "functions.app:app"' in text


def test_the_counter_reads_words_and_digits() -> None:
    text = "The six functions appear; 7 Inngest functions; **Inngest functions** (seven, in x); six sources."
    assert [n for _, n in stated_counts(text)] == [6, 7, 7]
