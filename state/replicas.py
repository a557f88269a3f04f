"""Reads on hot standbys: which server a read runs on, read-your-writes, and the fallbacks to the primary.

`ReadRouter` holds one pool per standby of `AC_CONTEXT_READ_DATABASE_URLS`. `Database.on_standby` asks it
for a standby for one organization's read (a brief, a search, a list or show): the standby must answer
(`pg_is_in_recovery()` true: a promoted one is no standby), be no further behind the primary than
`read_max_lag_ms` (the primary's WAL position is sampled every few milliseconds, so "behind" is measured in
time), and have replayed the organization's last write known here (`note_write`, in this process: every
write a request makes is noted) and the consistency token the caller brought (`reading_after`, from another
process) — waiting up to `read_your_writes_wait_ms` for that. Whatever fails, with whatever exception
(opening a standby's pool, acquiring a connection, any statement), costs one run on the primary, counted by
reason in `fallbacks`; a standby that is down or promoted is left out for `read_recheck_s`. A failure on the
primary is never retried.

This module must never send a write to a standby, nor answer an error or a stale read for a standby's sake.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import time
from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit
from uuid import UUID

import asyncpg

from state.errors import SettingsError

__all__ = [
    "FALLBACK_REASONS",
    "ReadRouter",
    "Standby",
    "StandbyChoice",
    "fallback_reason",
    "format_lsn",
    "parse_consistency_token",
    "reading_after",
    "written_lsn",
]

logger = logging.getLogger(__name__)

FALLBACK_REASONS: Final = (
    "standby_down",
    "promoted",
    "lagging",
    "read_your_writes_timeout",
    "recovery_conflict",
    "standby_error",
)
"""Why a read ran on the primary although standbys are configured (the `/metrics` label values)."""

_SAMPLE_EVERY_S: Final = 0.02
"""How often the primary's WAL position is sampled while standbys are configured."""
_POLL_S: Final = 0.002
"""How often a read waiting for its organization's last write asks the standby again."""
_PROBE = "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text"
_LSN = re.compile(r"^([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})$")
_TOKEN_PREFIX: Final = "lsn:"

_AFTER: ContextVar[int] = ContextVar("ac_context_read_after_lsn", default=0)
"""The WAL position the current request's reads must see (a consistency token's)."""
_WRITTEN: ContextVar[list[int] | None] = ContextVar("ac_context_written_lsn", default=None)
"""Where the current request collects the WAL position of its writes (the token it answers)."""


def parse_lsn(text: str) -> int:
    """A `pg_lsn` text (`16/B374D848`) as a number; ValueError when it is not one."""
    match = _LSN.match(text.strip())
    if match is None:
        raise ValueError(f"not a WAL position: {text!r}")
    return (int(match.group(1), 16) << 32) | int(match.group(2), 16)


def format_lsn(lsn: int) -> str:
    """A WAL position as a consistency token (`lsn:16/B374D848`)."""
    return f"{_TOKEN_PREFIX}{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_consistency_token(token: str) -> int:
    """The WAL position a consistency token names; `SettingsError`-free ValueError when it is not a token."""
    if not token.startswith(_TOKEN_PREFIX):
        raise ValueError("a consistency token looks like lsn:16/B374D848")
    return parse_lsn(token[len(_TOKEN_PREFIX) :])


@contextmanager
def reading_after(lsn: int) -> Iterator[list[int]]:
    """Within: reads wait for `lsn` on a standby, and the writes' positions are collected in the list yielded."""
    written: list[int] = []
    after, collect = _AFTER.set(lsn), _WRITTEN.set(written)
    try:
        yield written
    finally:
        _AFTER.reset(after)
        _WRITTEN.reset(collect)


def written_lsn(written: list[int]) -> int | None:
    """The furthest position of the writes a `reading_after` scope collected, or None when it wrote nothing."""
    return max(written) if written else None


def fallback_reason(exc: BaseException) -> str:
    """Why a read on a standby failed: `recovery_conflict`, `standby_down` or `standby_error`."""
    if isinstance(exc, asyncpg.PostgresError):
        said = f"{exc} {getattr(exc, 'detail', '') or ''}".lower()
        if getattr(exc, "sqlstate", None) in {"40001", "57014", "40P01"} and "recovery" in said:
            return "recovery_conflict"
        if str(getattr(exc, "sqlstate", "")).startswith(("57P", "08")):
            return "standby_down"
        return "standby_error"
    if isinstance(exc, OSError | TimeoutError | asyncpg.InterfaceError):
        return "standby_down"
    return "standby_error"


@dataclass
class Standby:
    """One standby: its pool, and what the last read saw of it."""

    url: str
    """Its URL (with its password; never printed)."""
    pool: asyncpg.Pool | None = None
    """Its pool, None until it answered once."""
    left_out_until: float = 0.0
    """Monotonic time before which no read tries it (down or promoted)."""
    state: str = "unknown"
    """`streaming`, `down`, `promoted` or `unknown` (never tried)."""
    replay_lsn: int = 0
    """The WAL position it had replayed at its last probe."""
    error: str | None = None
    """Why it is down, in one line."""

    def host(self) -> str:
        """Its `host:port` (or socket folder), never its user or password (for `/readyz` and `/metrics`)."""
        parts = urlsplit(self.url)
        host = parts.netloc.rpartition("@")[2]
        return host or parse_qs(parts.query).get("host", ["local"])[-1]


@dataclass(frozen=True)
class StandbyChoice:
    """The standby a read runs on, or why it runs on the primary."""

    standby: Standby | None
    """Where the read runs; None for the primary."""
    reason: str | None = None
    """Why not on a standby (a FALLBACK_REASONS value), None when there was no standby to ask."""
    waited_s: float = 0.0
    """How long it waited for its organization's last write to be replayed."""


@dataclass
class ReadRouter:
    """The standbys of one primary, and the positions reads must see (see the module docstring)."""

    primary: asyncpg.Pool
    """The primary's pool (its WAL position is sampled on it)."""
    standbys: list[Standby]
    """The standbys, in the order of the setting."""
    open_standby: Any
    """`async (url) -> asyncpg.Pool`: opens a standby's pool (the `Database`'s codecs and session switching)."""
    wait_s: float = 0.25
    """`read_your_writes_wait_ms`, in seconds."""
    max_lag_s: float = 1.0
    """`read_max_lag_ms`, in seconds."""
    recheck_s: float = 2.0
    """`read_recheck_s`."""
    fallbacks: Counter[str] = field(default_factory=Counter)
    """Reads that ran on the primary, by reason."""
    served: Counter[str] = field(default_factory=Counter)
    """Reads that ran on a standby, by standby host."""
    waits: deque[float] = field(default_factory=lambda: deque(maxlen=10_000))
    """The read-your-writes waits of recent reads that waited (seconds)."""
    _last_write: dict[UUID | None, int] = field(default_factory=dict)
    _samples: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=4096))
    _sampler: asyncio.Task[None] | None = None
    _turn: Iterator[int] = field(default_factory=itertools.count)

    @classmethod
    def from_settings(cls, primary: asyncpg.Pool, urls: list[str], open_standby: Any, settings: Any) -> ReadRouter:
        """A router over `urls` with the bounds of `settings` (no connection yet)."""
        if not urls:
            raise SettingsError("a read router needs at least one standby URL")
        return cls(
            primary=primary,
            standbys=[Standby(url) for url in urls],
            open_standby=open_standby,
            wait_s=settings.read_your_writes_wait_ms / 1000,
            max_lag_s=settings.read_max_lag_ms / 1000,
            recheck_s=settings.read_recheck_s,
        )

    def start(self) -> None:
        """Start sampling the primary's WAL position (call inside the running loop)."""
        if self._sampler is None:
            self._sampler = asyncio.get_running_loop().create_task(self._sample_forever(), name="ac-context:wal")

    async def close(self) -> None:
        """Stop sampling and close every standby pool."""
        if self._sampler is not None:
            self._sampler.cancel()
            await asyncio.gather(self._sampler, return_exceptions=True)
            self._sampler = None
        for standby in self.standbys:
            if standby.pool is not None:
                pool, standby.pool = standby.pool, None
                pool.terminate()

    async def _sample_forever(self) -> None:
        while True:
            try:
                await self.sample()
            except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                logger.debug("cannot sample the primary's WAL position: %s", type(exc).__name__)
            await asyncio.sleep(_SAMPLE_EVERY_S)

    async def sample(self) -> int:
        """Record the primary's WAL position now, and return it."""
        text = await self.primary.fetchval("SELECT pg_current_wal_lsn()::text")
        lsn = parse_lsn(text)
        self._samples.append((time.monotonic(), lsn))
        return lsn

    async def note_write(self, organization_id: UUID | None) -> int:
        """Record that `organization_id` just committed a write: its reads wait for the position this returns."""
        text = await self.primary.fetchval("SELECT pg_current_wal_insert_lsn()::text")
        lsn = parse_lsn(text)
        key = None if organization_id is None else UUID(str(organization_id))
        self._last_write[key] = max(lsn, self._last_write.get(key, 0))
        self._samples.append((time.monotonic(), lsn))
        collect = _WRITTEN.get()
        if collect is not None:
            collect.append(lsn)
        return lsn

    def required_lsn(self, organization_id: UUID | None) -> int:
        """The position a read of `organization_id` must see: its last write, the caller's token, the platform's."""
        key = None if organization_id is None else UUID(str(organization_id))
        return max(self._last_write.get(key, 0), self._last_write.get(None, 0), _AFTER.get())

    def _floor(self, now: float) -> int:
        """The primary's position `max_lag_s` ago: a standby behind it is lagging past the bound."""
        floor = 0
        for at, lsn in self._samples:
            if at > now - self.max_lag_s:
                break
            floor = lsn
        return floor

    def lag(self, standby: Standby) -> tuple[int, float]:
        """How far `standby` was behind at its last probe: bytes, and seconds since the primary passed it."""
        if not self._samples:
            return 0, 0.0
        newest = self._samples[-1][1]
        behind = [at for at, lsn in self._samples if lsn > standby.replay_lsn]
        return max(0, newest - standby.replay_lsn), (time.monotonic() - behind[0]) if behind else 0.0

    def _left_out(self, standby: Standby, state: str, error: str | None = None) -> None:
        standby.state, standby.error = state, error
        standby.left_out_until = time.monotonic() + self.recheck_s

    async def choose(self, organization_id: UUID | None) -> StandbyChoice:
        """A standby that has replayed what this read must see, else the primary with the reason."""
        now = time.monotonic()
        live = [s for s in self.standbys if s.left_out_until <= now]
        if not live:
            return StandbyChoice(None, "standby_down" if self.standbys[0].state != "promoted" else "promoted")
        start = next(self._turn)
        reason = "standby_down"
        for i in range(len(live)):
            standby = live[(start + i) % len(live)]
            choice = await self._try(standby, organization_id)
            if choice.standby is not None:
                return choice
            reason = choice.reason or reason
        return StandbyChoice(None, reason)

    async def _try(self, standby: Standby, organization_id: UUID | None, *, probe: bool = False) -> StandbyChoice:
        try:
            if standby.pool is None:
                standby.pool = await self.open_standby(standby.url)
            async with standby.pool.acquire() as conn:
                row = await conn.fetchrow(_PROBE)
                in_recovery, replay = (False, None) if row is None else (row[0], row[1])
                if not in_recovery:
                    self._left_out(standby, "promoted")
                    return StandbyChoice(None, "promoted")
                standby.state, standby.error, standby.replay_lsn = "streaming", None, parse_lsn(str(replay))
                if probe:
                    return StandbyChoice(standby)
                if standby.replay_lsn < self._floor(time.monotonic()):
                    return StandbyChoice(None, "lagging")
                wanted = self.required_lsn(organization_id)
                if standby.replay_lsn >= wanted:
                    return StandbyChoice(standby)
                started = time.monotonic()
                while time.monotonic() - started < self.wait_s:
                    await asyncio.sleep(_POLL_S)
                    standby.replay_lsn = parse_lsn(await conn.fetchval("SELECT pg_last_wal_replay_lsn()::text"))
                    if standby.replay_lsn >= wanted:
                        waited = time.monotonic() - started
                        self.waits.append(waited)
                        return StandbyChoice(standby, waited_s=waited)
                self.waits.append(time.monotonic() - started)
                return StandbyChoice(None, "read_your_writes_timeout")
        except Exception as exc:  # any class: opening its pool, acquiring, probing (never a cancellation)
            self._left_out(standby, "down", fallback_reason(exc) + f": {type(exc).__name__}")
            return StandbyChoice(None, "standby_down")

    def failed(self, standby: Standby, exc: BaseException | None) -> str:
        """Count a read that failed on `standby` (it runs again on the primary); the reason."""
        reason = "standby_error" if exc is None else fallback_reason(exc)
        if reason == "standby_down":
            self._left_out(standby, "down", type(exc).__name__ if exc is not None else None)
        self.fallbacks[reason] += 1
        return reason

    async def status(self) -> list[dict[str, Any]]:
        """Each standby as `/readyz` shows it: host, state, lag in bytes and milliseconds (probing it now)."""
        out = []
        for standby in self.standbys:
            if standby.left_out_until <= time.monotonic():
                await self._try(standby, None, probe=True)  # refreshes its state and replay position
            bytes_behind, seconds = self.lag(standby)
            out.append(
                {
                    "host": standby.host(),
                    "state": standby.state,
                    "lag_bytes": bytes_behind if standby.state == "streaming" else None,
                    "lag_ms": round(seconds * 1000, 1) if standby.state == "streaming" else None,
                    "error": standby.error,
                }
            )
        return out
