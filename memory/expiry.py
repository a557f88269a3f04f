"""Memories that expire: the expiry a remember gets, and the sweep that closes an expired chain.

`ExpiryPolicy` is the settings' view of expiry per namespace (`observation.*`, `preference.*`): the default
a remember with no expiry gets, whether an explicit expiry is allowed, and the furthest one allowed.
`resolve_expiry` turns a candidate's `expires_at` or `ttl` (ISO 8601 duration, `state.durations`) into the
revision's `expires_at`, or refuses it with `InvalidExpiryError` at the field's path (`expires_at` or
`ttl`): both given, in the past (or a zero ttl), further than the longest expiry, or on a namespace the
settings forbid to expire.

An expired revision is not live the moment its time passes: `agent.live_memories` drops it (migration
0086), the duplicate check and the per-run count ignore it. `sweep_expired` then appends the tombstone that
closes each expired chain, the same insert `memory.forget` makes after the exact head read from
`agent.memory_heads`, so the chain says what the view says. A sweep that loses the chain race to a
remember (the head moved) skips that chain: the remember's revision is the new head, and a remember that
loses to the sweep reloads the head and appends after the tombstone, as after a forget.

This module must never update or delete a revision, never tombstone a chain whose head is not the expired
revision it read, and never decide anything from a time sort of revisions.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from memory import repository as repo
from memory.errors import InvalidExpiryError
from memory.models import MemoryCandidate, namespace_of
from state.db import Database
from state.durations import format_duration, parse_duration
from state.settings import Settings, memory_ttl

__all__ = ["DEFAULT_EXPIRY", "DEFAULT_SWEEP_LIMIT", "ExpiryPolicy", "resolve_expiry", "sweep_expired"]

_log = logging.getLogger(__name__)

DEFAULT_SWEEP_LIMIT = 500
"""Chains one sweep call closes at most; the cron calls it again while a call fills its limit."""


@dataclass(frozen=True)
class ExpiryPolicy:
    """Expiry per memory namespace, as the settings give it (the defaults equal the settings' defaults)."""

    observation_ttl: timedelta | None = timedelta(days=90)
    """The expiry of an `observation.*` memory written without one; None keeps it."""
    preference_ttl: timedelta | None = None
    """The expiry of a `preference.*` memory written without one; None keeps it."""
    observation_may_expire: bool = True
    """Whether an `observation.*` memory may name an expiry."""
    preference_may_expire: bool = True
    """Whether a `preference.*` memory may name an expiry."""
    max_ttl: timedelta = timedelta(days=1825)
    """The furthest expiry from the write, explicit or default."""

    @classmethod
    def from_settings(cls, settings: Settings) -> ExpiryPolicy:
        """The policy the process settings give."""
        return cls(
            observation_ttl=memory_ttl(settings.memory_observation_ttl),
            preference_ttl=memory_ttl(settings.memory_preference_ttl),
            observation_may_expire=settings.memory_observation_may_expire,
            preference_may_expire=settings.memory_preference_may_expire,
            max_ttl=parse_duration(settings.memory_max_ttl),
        )

    def default_ttl(self, attribute: str) -> timedelta | None:
        """The expiry a memory under `attribute` gets when the remember names none."""
        return self.observation_ttl if namespace_of(attribute) == "observation" else self.preference_ttl

    def may_expire(self, attribute: str) -> bool:
        """Whether a memory under `attribute` may name an expiry."""
        return self.observation_may_expire if namespace_of(attribute) == "observation" else self.preference_may_expire


DEFAULT_EXPIRY = ExpiryPolicy()
"""The policy of the settings' defaults: observations expire after 90 days, preferences never."""


def resolve_expiry(candidate: MemoryCandidate, policy: ExpiryPolicy, now: datetime) -> datetime | None:
    """The `expires_at` of the revision `candidate` writes at `now`, or `InvalidExpiryError` at its field."""
    namespace = namespace_of(candidate.attribute)
    latest = now + policy.max_ttl
    longest = format_duration(policy.max_ttl)
    if candidate.expires_at is not None and candidate.ttl is not None:
        raise InvalidExpiryError("ttl", "give expires_at or ttl, not both", kind="expiry_twice")
    if candidate.expires_at is None and candidate.ttl is None:
        ttl = policy.default_ttl(candidate.attribute)
        return None if ttl is None else now + min(ttl, policy.max_ttl)
    field = "expires_at" if candidate.expires_at is not None else "ttl"
    if not policy.may_expire(candidate.attribute):
        raise InvalidExpiryError(
            field, f"the settings forbid {namespace} memories to expire; leave the expiry out", kind="expiry_forbidden"
        )
    if candidate.expires_at is not None:
        expires_at = candidate.expires_at
        if expires_at.tzinfo is None or expires_at.utcoffset() is None:
            raise InvalidExpiryError(field, "expires_at must carry its time zone offset", kind="expiry_naive")
        if expires_at <= now:
            raise InvalidExpiryError(field, f"expires_at {expires_at.isoformat()} is in the past", kind="expiry_past")
        if expires_at > latest:
            raise InvalidExpiryError(
                field, f"expires_at lies further than the longest expiry ({longest}) from now", kind="expiry_too_far"
            )
        return expires_at
    assert candidate.ttl is not None
    try:
        ttl = parse_duration(candidate.ttl)
    except ValueError as exc:  # the candidate type refuses it first; a constructed candidate may not
        raise InvalidExpiryError(field, str(exc), kind="expiry_format") from exc
    if ttl <= timedelta(0):
        raise InvalidExpiryError(field, "ttl must be longer than zero", kind="expiry_past")
    if ttl > policy.max_ttl:
        raise InvalidExpiryError(field, f"ttl is longer than the longest expiry ({longest})", kind="expiry_too_far")
    return now + ttl


async def sweep_expired(db: Database, *, now: datetime | None = None, limit: int = DEFAULT_SWEEP_LIMIT) -> int:
    """Append the tombstone that closes each chain whose head expired by `now` (database clock); how many."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    written = 0
    async with db.connection() as conn:
        expired = await repo.fetch_expired_heads(conn, now=now, limit=limit)
        for head in expired:
            async with conn.transaction():
                current = await repo.fetch_head(
                    conn, organization_id=head.organization_id, definition_id=head.definition_id, scope=head.scope,
                    scope_owner_id=head.scope_owner_id, subject_key=head.subject_key,
                )  # fmt: skip
                if current is None or current.id != head.id or current.is_tombstone:
                    continue  # a writer moved the chain since the read: its new head decides
                try:
                    tombstone = await repo.insert_tombstone(conn, head.organization_id, head.id, None)
                except repo.ChainMoved:
                    _log.debug("memory %s gained a revision while it was being swept; left to it", head.id)
                    continue
            if tombstone is not None:
                written += 1
    if written:
        _log.info("memory expiry sweep closed %d expired chain(s)", written)
    return written
