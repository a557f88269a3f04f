"""The migration runner: numbered plain SQL files in `migrations/`, applied in order.

Each file runs in its own transaction, under one advisory lock, so two workers starting together apply
each file once. `schema_migrations` records every applied file with its checksum; an applied file that
was edited afterwards is refused, because the database no longer matches what the file says, unless
`migrations/edited.toml` lists the recorded checksum as that file's previous text (an edit that leaves the
schema as it was: comments, or a body a later migration replaces whole). Running the runner twice changes
nothing. It must never apply a file out of order or outside a transaction, and never rewrite a recorded
checksum.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from state._connect import connect
from state.errors import MigrationChecksumError, MigrationError

__all__ = [
    "EDITS_FILE",
    "MIGRATIONS_DIR",
    "Edit",
    "Migration",
    "apply_migrations",
    "load_edits",
    "load_migrations",
    "pending_migrations",
]

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
EDITS_FILE = "edited.toml"
"""The file in the migrations folder that lists applied migrations edited afterwards."""
_LOCK_KEY = 0x61635F6D6967  # "ac_mig": one advisory lock for every runner of this project

_BOOTSTRAP = """
CREATE TABLE IF NOT EXISTS public.schema_migrations (
    name text PRIMARY KEY,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


@dataclass(frozen=True)
class Migration:
    """One migration file."""

    number: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        """The SHA-256 of the file's text."""
        return hashlib.sha256(self.sql.encode()).hexdigest()


def load_migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """Read every `NNNN_name.sql` file in number order; refuse a bad name or a shared number."""
    migrations: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        match = _NAME.match(path.name)
        if match is None:
            raise MigrationError(f"migration file {path.name!r} is not named NNNN_lower_snake.sql")
        migrations.append(Migration(int(match.group(1)), path.name, path.read_text(encoding="utf-8")))
    numbers = [m.number for m in migrations]
    if len(numbers) != len(set(numbers)):
        raise MigrationError(f"two migration files share a number in {directory}")
    return migrations


@dataclass(frozen=True)
class Edit:
    """An applied migration edited afterwards: a database may have recorded its `previous` checksum."""

    file: str
    previous: str
    commit: str
    """A commit that holds the previous text (the tests rebuild it from there)."""
    why: str


def load_edits(directory: Path = MIGRATIONS_DIR) -> list[Edit]:
    """The edits `directory/edited.toml` lists (none when the file is absent); refuse a malformed entry."""
    path = directory / EDITS_FILE
    if not path.exists():
        return []
    try:
        entries = tomllib.loads(path.read_text(encoding="utf-8")).get("edit", [])
        return [Edit(e["file"], e["previous"], e["commit"], e["why"]) for e in entries]
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise MigrationError(f"{path.name} is malformed: {exc}") from exc


async def _applied(conn: asyncpg.Connection) -> dict[str, str]:
    rows = await conn.fetch("SELECT name, checksum FROM public.schema_migrations")
    return {r["name"]: r["checksum"] for r in rows}


def _check(applied: dict[str, str], migrations: list[Migration], edits: list[Edit]) -> list[Migration]:
    previous = {(e.file, e.previous) for e in edits}
    pending: list[Migration] = []
    for migration in migrations:
        stored = applied.get(migration.name)
        if stored is None:
            pending.append(migration)
        elif stored != migration.checksum and (migration.name, stored) not in previous:
            raise MigrationChecksumError(
                f"migration {migration.name} was edited after it was applied "
                f"(applied checksum {stored[:12]}…, file now {migration.checksum[:12]}…); "
                "restore the file and add a new migration instead"
            )
    return pending


async def pending_migrations(url: str, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """The names of the files not yet applied (raises if an applied one was edited)."""
    conn = await connect(url)
    try:
        exists = await conn.fetchval("SELECT to_regclass('public.schema_migrations') IS NOT NULL")
        applied = await _applied(conn) if exists else {}
        return [m.name for m in _check(applied, load_migrations(directory), load_edits(directory))]
    finally:
        await conn.close()


async def apply_migrations(url: str, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply every pending migration in order; return the names applied by this call."""
    migrations = load_migrations(directory)
    edits = load_edits(directory)
    conn = await connect(url)
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", _LOCK_KEY)
        try:
            await conn.execute(_BOOTSTRAP)
            pending = _check(await _applied(conn), migrations, edits)
            done: list[str] = []
            for migration in pending:
                try:
                    async with conn.transaction():
                        await conn.execute(migration.sql)
                        await conn.execute(
                            "INSERT INTO public.schema_migrations (name, checksum) VALUES ($1, $2)",
                            migration.name,
                            migration.checksum,
                        )
                except asyncpg.PostgresError as exc:
                    raise MigrationError(f"migration {migration.name} failed: {exc}") from exc
                done.append(migration.name)
            return done
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", _LOCK_KEY)
    finally:
        await conn.close()
