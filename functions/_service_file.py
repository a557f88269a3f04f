"""The service's note in its data folder, `service.json`: where a running `ac-context serve` answers.

`ac-context serve` writes it at start (atomically: a private temporary file renamed over the old one, mode
0600) and removes it at exit when it still names its own pid; it holds the URL to reach the service from
this machine, the serve process's pid, the operator token the service accepts (`AC_CONTEXT_API_TOKEN`,
so the file is readable by its owner only: whoever can read the data folder can open its database anyway),
and a fingerprint of the database the service serves. `ac-context` reads it (`read_service_file`) to send
its reads to the service instead of opening the database itself (`functions.cli._service`); a note whose
pid is gone, that cannot be parsed, or that names another database is ignored.

Import cost is part of the interface: the command line reads this module before deciding which path to
take, so it imports the standard library alone. This module must never connect to anything.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "SERVICE_FILE",
    "ServiceNote",
    "configured_data_dir",
    "configured_database_url",
    "database_fingerprint",
    "pid_alive",
    "read_service_file",
    "remove_service_file",
    "service_url",
    "write_service_file",
]

SERVICE_FILE: Final = "service.json"
"""The note's name inside the data folder."""


@dataclass(frozen=True, slots=True)
class ServiceNote:
    """What `service.json` says."""

    url: str
    """Where the service answers, e.g. `http://127.0.0.1:8000` (no trailing slash)."""
    pid: int
    """The `ac-context serve` process."""
    token: str
    """The operator token the service accepts."""
    database: str
    """`database_fingerprint` of the database it serves."""


def _variable(environ: Mapping[str, str], *names: str) -> str | None:
    upper = {name.upper(): value for name, value in environ.items()}  # settings read names in any case
    for name in names:
        value = upper.get(name, "").strip()
        if value:
            return value
    return None


def configured_data_dir(environ: Mapping[str, str]) -> Path:
    """The data folder `environ` names (`AC_CONTEXT_DATA_DIR`, else `.ac-context`), absolute (the settings' rule)."""
    return Path(_variable(environ, "AC_CONTEXT_DATA_DIR") or ".ac-context").expanduser().resolve()


def configured_database_url(environ: Mapping[str, str]) -> str | None:
    """The database `environ` names (`DATABASE_URL`, else `AC_CONTEXT_DATABASE_URL`), None for the embedded one."""
    return _variable(environ, "DATABASE_URL", "AC_CONTEXT_DATABASE_URL")


def database_fingerprint(database_url: str | None) -> str:
    """A short digest of `DATABASE_URL` (empty: the embedded server of the data folder), never the URL itself."""
    import hashlib  # here: a command with no note to check never loads OpenSSL

    return hashlib.sha256((database_url or "").encode()).hexdigest()[:16]


def service_url(host: str, port: int) -> str:
    """The URL a process on this machine reaches a service listening on `host`:`port` at."""
    if host in {"", "0.0.0.0"}:  # every interface: this machine reaches it on loopback
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return True


def write_service_file(data_dir: Path, note: ServiceNote) -> Path:
    """Write `note` into `data_dir` atomically, readable by its owner only; the path written."""
    import tempfile  # here: only `serve` writes

    data_dir.mkdir(parents=True, exist_ok=True)
    target = data_dir / SERVICE_FILE
    body = {"url": note.url, "pid": note.pid, "token": note.token, "database": note.database}
    fd, temporary = tempfile.mkstemp(prefix=".service-", suffix=".json", dir=data_dir)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(body, out)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return target


def remove_service_file(data_dir: Path, pid: int) -> bool:
    """Remove `data_dir`'s note when it names `pid` (another service's note stays); whether one was removed."""
    target = data_dir / SERVICE_FILE
    note = _parse(target)
    if note is None or note.pid != pid:
        return False
    with contextlib.suppress(FileNotFoundError):
        target.unlink()
    return True


def read_service_file(data_dir: Path, *, database_url: str | None) -> ServiceNote | None:
    """The note of a service running on `data_dir` and serving `database_url`; None for none, or a stale note."""
    note = _parse(data_dir / SERVICE_FILE)
    if note is None or not pid_alive(note.pid) or note.database != database_fingerprint(database_url):
        return None
    return note


def _parse(path: Path) -> ServiceNote | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        note = ServiceNote(url=raw["url"], pid=raw["pid"], token=raw["token"], database=raw["database"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    fields_ok = isinstance(note.url, str) and isinstance(note.token, str) and isinstance(note.database, str)
    if not fields_ok or not isinstance(note.pid, int) or note.pid <= 0 or not note.url.startswith("http://"):
        return None
    return note
