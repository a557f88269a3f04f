"""The folder walk of `ac-context ingest` (issue 25): it takes only the file types the extractor reads by
their ending, says in one line how many files it skipped and why, and a named file of a type the extractor
does not read is refused in one line with a code (a named file without an extension is read as text)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from functions.cli import app
from functions.cli._ingest_files import collect_files
from functions.cli.errors import CliError
from tests.support import cli_error_line

DOCUMENTS = ["a.md", "b.PDF", "c.txt", "sub/d.html", "sub/e.markdown", "notes.rst"]
OTHERS = ["LICENSE", "Makefile", "data.json", "sub/img.png", "sub/more.json", ".env", ".git/HEAD", ".git/config"]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    for name in DOCUMENTS + OTHERS:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("# text\n")
    return root


def test_a_folder_walk_takes_only_the_documents_the_extractor_reads(tree: Path) -> None:
    walk = collect_files([tree], [], [])
    assert sorted(p.relative_to(tree.resolve()).as_posix() for p in walk.files) == sorted(DOCUMENTS)
    assert walk.skipped == {"without an extension": 2, "of type .json": 2, "of type .png": 1, "hidden": 3}


def test_the_walk_says_in_one_line_how_many_files_it_skipped_and_why(tree: Path) -> None:
    line = collect_files([tree], [], []).skipped_line()
    assert line is not None and "\n" not in line
    assert line.startswith("skipped 8 files a folder walk does not take: 3 hidden (e.g. .")
    assert "2 of type .json (e.g. " in line and "2 without an extension (e.g. LICENSE)" in line
    assert "1 of type .png (e.g. img.png)" in line and ".pdf" in line
    assert collect_files([tree / "a.md"], [], []).skipped_line() is None


def test_a_named_file_without_an_extension_is_read_and_one_of_another_type_refused(tree: Path) -> None:
    assert collect_files([tree / "LICENSE"], [], []).files == [(tree / "LICENSE").resolve()]
    with pytest.raises(CliError) as caught:
        collect_files([tree / "data.json"], [], [])
    assert caught.value.code == "document_type_unsupported"


def test_ingest_refuses_a_named_file_of_an_unsupported_type_in_one_line(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none")  # never reached
    result = CliRunner().invoke(app, ["ingest", str(tree / "sub" / "img.png"), "--platform"])
    line = cli_error_line(result, "document_type_unsupported", progress=re.compile(r"^$"))
    assert "img.png: files ending in .png are not read" in line
