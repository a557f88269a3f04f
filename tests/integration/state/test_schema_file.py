"""docs/schema.sql is what the migrations build: a migration that changes the schema regenerates the file."""

from __future__ import annotations

import os
import re

import asyncpg
import pytest

from scripts.schema_dump import COMMAND, MAJOR_LINE, SCHEMA_FILE, migrated_schema, normalise


def _recorded_major() -> int:
    match = MAJOR_LINE.search(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert match is not None, f"{SCHEMA_FILE.name} names no PostgreSQL major version: run `{COMMAND}`"
    return int(match.group(1))


async def test_the_schema_file_is_what_the_migrations_build(pg_server_url: str) -> None:
    admin = await asyncpg.connect(pg_server_url)
    try:
        major = int(await admin.fetchval("SHOW server_version_num")) // 10000
    finally:
        await admin.close()
    if os.environ.get("DATABASE_URL") and major != _recorded_major():
        pytest.skip(
            f"DATABASE_URL names PostgreSQL {major}; docs/schema.sql is dumped from the embedded "
            f"PostgreSQL {_recorded_major()}, and pg_dump writes another major version differently"
        )
    built = await migrated_schema(pg_server_url)
    assert built == SCHEMA_FILE.read_text(encoding="utf-8"), (
        f"docs/schema.sql is stale: a migration changed the schema; run `{COMMAND}` and commit the file"
    )


def test_the_file_says_it_is_generated_and_keeps_nothing_that_differs_between_runs() -> None:
    text = SCHEMA_FILE.read_text(encoding="utf-8")
    assert text.startswith("-- GENERATED FILE: DO NOT EDIT. Regenerate with `make schema`")
    for line in text.splitlines():
        assert not re.match(r"\\(un)?restrict |SET |-- Dumped (from|by pg_dump)", line), line


def test_normalise_drops_the_header_set_lines_and_restrict_tokens() -> None:
    dump = (
        "--\n-- PostgreSQL database dump\n--\n\n\\restrict AbC123\n\n-- Dumped from database version 18.6\n"
        "-- Dumped by pg_dump version 18.6\n\nSET lock_timeout = 0;\n"
        "SELECT pg_catalog.set_config('search_path', '', false);\n\n\n\n--\n-- Name: t; Type: TABLE\n--\n\n"
        "CREATE TABLE t (id int);\n\n--\n-- PostgreSQL database dump complete\n--\n\n\\unrestrict AbC123\n"
    )
    text = normalise(dump, ["-- r: NOLOGIN NOBYPASSRLS"], 18)
    body = text.split("-- r: NOLOGIN NOBYPASSRLS\n\n", 1)[1]
    assert body == "--\n-- Name: t; Type: TABLE\n--\n\nCREATE TABLE t (id int);\n"
    assert normalise(dump.replace("AbC123", "XyZ789"), ["-- r: NOLOGIN NOBYPASSRLS"], 18) == text
