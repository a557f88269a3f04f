"""Users for a deployment without the platform: add, list, remove rows of `public.users`.

The platform owns `public.users`; a deployment without it (or a platform that registers its people here)
needs the rows that memory writes and a person's erasure name. An email is unique in its organization,
compared case-insensitively, checked under a per-organization lock (the platform's table has no such
constraint, so it is this layer's rule, not the database's). `remove_user` never removes a user whose memories
remain: a memory's foreign key would cascade and delete them with no receipt, so it reports them instead
and the caller sends the person through the erasure first. Each write passes the erasure guard
(`state.erasure_marks`) first. This module must never delete a memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from state.db import Database
from state.erasure_marks import guard_writes
from state.errors import translated_db_errors
from state.queries import load_queries

__all__ = [
    "EMAIL_PATTERN",
    "MAX_DISPLAY_NAME",
    "MAX_EMAIL",
    "User",
    "UserRemoval",
    "add_user",
    "email_problem",
    "list_users",
    "remove_user",
]

QUERIES = load_queries(__file__)
MAX_EMAIL = 254
"""The longest email accepted (RFC 5321's path limit)."""
MAX_DISPLAY_NAME = 200
"""The longest display name accepted."""
EMAIL_PATTERN = r"^[^@\s]+@[^@\s.]+(\.[^@\s.]+)+$"
"""The shape of an email: one `@`, no spaces, a dotted domain."""
_EMAIL = re.compile(EMAIL_PATTERN)


@dataclass(frozen=True, slots=True)
class User:
    """One user of an organization."""

    id: UUID
    """Its id, what `--user`, `user_id` and an erasure name."""
    organization_id: UUID
    """Its organization."""
    email: str
    """Its email, unique in the organization (any case)."""
    display_name: str | None
    """How it is shown, or None."""
    created_at: datetime
    """When it was added."""
    memories: int = 0
    """Memory revisions its user-scope memories hold (tombstones included)."""
    runs: int = 0
    """Runs started for it."""

    def as_json(self) -> dict[str, Any]:
        """The user as JSON."""
        return {
            "id": str(self.id), "organization_id": str(self.organization_id), "email": self.email,
            "display_name": self.display_name, "created_at": self.created_at.isoformat(),
            "memories": self.memories, "runs": self.runs,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class UserRemoval:
    """What `remove_user` did."""

    outcome: Literal["removed", "not_found", "has_memories"]
    """`removed`; `not_found` (no such user in the organization); `has_memories` (nothing removed)."""
    memories: int = 0
    """The memory revisions that keep the user (for `has_memories`)."""


def email_problem(email: str) -> str | None:
    """Why `email` is not an email this layer accepts, or None."""
    if len(email) > MAX_EMAIL:
        return f"has more than {MAX_EMAIL} characters"
    if _EMAIL.fullmatch(email) is None:
        return "is not an email (name@domain.tld)"
    return None


def _user(row: Any) -> User:
    return User(
        row["id"], row["organization_id"], row["email"], row["display_name"], row["created_at"],
        int(row.get("memories", 0) or 0), int(row.get("runs", 0) or 0),
    )  # fmt: skip


async def add_user(db: Database, organization_id: UUID, email: str, display_name: str | None) -> User | None:
    """Add a user; None when the organization has a user with this email already (any case)."""
    with translated_db_errors():
        async with db.connection() as conn, conn.transaction():
            await guard_writes(conn, organization_id)
            await conn.execute(QUERIES["lock_organization_users"], organization_id)
            if await conn.fetchval(QUERIES["user_email_taken"], organization_id, email):
                return None
            row = await conn.fetchrow(QUERIES["insert_user"], organization_id, email, display_name)
    assert row is not None
    await db.note_write(organization_id)
    return _user(dict(row))


async def list_users(db: Database, organization_id: UUID, *, limit: int) -> tuple[list[User], int]:
    """The organization's users, oldest first (at most `limit`), and how many it has."""
    with translated_db_errors():
        async with db.connection() as conn:
            rows = await conn.fetch(QUERIES["list_users"], organization_id, limit)
            total = int(await conn.fetchval(QUERIES["count_users"], organization_id))
    return [_user(dict(r)) for r in rows], total


async def remove_user(db: Database, organization_id: UUID, user_id: UUID) -> UserRemoval:
    """Remove a user that holds no memory; otherwise remove nothing and say why (see the module)."""
    with translated_db_errors():
        async with db.connection() as conn, conn.transaction():
            await guard_writes(conn, organization_id, user_id=user_id)
            if await conn.fetchval(QUERIES["lock_user"], organization_id, user_id) is None:
                return UserRemoval("not_found")
            # The lock above waits for a memory insert naming the user and holds off the next one, so this
            # count (its own statement: a snapshot from after the wait) is final until the delete: the
            # foreign key's cascade finds nothing to delete.
            memories = int(await conn.fetchval(QUERIES["user_memory_revisions"], organization_id, user_id))
            if memories:
                return UserRemoval("has_memories", memories)
            await conn.execute(QUERIES["delete_user"], organization_id, user_id)
    await db.note_write(organization_id)
    return UserRemoval("removed")
