"""What production mode needs before it serves, checked at start and answered in one line.

Production mode (`AC_CONTEXT_INNGEST_MODE=production`, the default of `functions.app:app`) serves the
Inngest endpoint and `/v1/` to the network, so it refuses to start without: `INNGEST_SIGNING_KEY` (every
Inngest request is verified with it), `INNGEST_EVENT_KEY` (without it every event an upload, a retry, a
batch or a switch sends is refused by Inngest), `AC_CONTEXT_API_TOKEN` (the bearer token of `/v1/`),
`INNGEST_SERVE_ORIGIN` (the only origin a sync ever registers, never a request's `Host`) and
`AC_CONTEXT_STEP_ENCRYPTION_KEYS` (step state leaves the process encrypted). `production_problems` names
every one that is missing or wrong; `check_production` raises them as one `InngestConfigError`.
This module reads settings and the environment, and never starts anything.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping

from functions.errors import InngestConfigError
from functions.inngest.encryption import parse_keys
from state.settings import Settings

__all__ = ["check_production", "production_problems"]


def _origin_problem(origin: str | None) -> str | None:
    if not origin:
        return "INNGEST_SERVE_ORIGIN"
    parsed = urllib.parse.urlsplit(origin)
    if parsed.scheme not in ("http", "https") or not parsed.netloc or parsed.path not in ("", "/"):
        return "INNGEST_SERVE_ORIGIN (an origin such as https://ctx.example.com)"
    return None


def production_problems(settings: Settings, environ: Mapping[str, str] | None = None) -> list[str]:
    """The production settings that are missing or wrong, by their environment names."""
    env = os.environ if environ is None else environ
    problems: list[str] = []
    if not env.get("INNGEST_SIGNING_KEY"):
        problems.append("INNGEST_SIGNING_KEY")
    if not env.get("INNGEST_EVENT_KEY"):
        problems.append("INNGEST_EVENT_KEY")
    if not settings.api_token:
        problems.append("AC_CONTEXT_API_TOKEN")
    origin = _origin_problem(settings.inngest_serve_origin)
    if origin is not None:
        problems.append(origin)
    try:
        if not parse_keys(settings.step_encryption_keys):
            problems.append("AC_CONTEXT_STEP_ENCRYPTION_KEYS")
    except InngestConfigError as exc:
        problems.append(str(exc))
    return problems


def check_production(settings: Settings, environ: Mapping[str, str] | None = None) -> None:
    """Raise one `InngestConfigError` naming every missing production setting."""
    problems = production_problems(settings, environ)
    if problems:
        raise InngestConfigError(
            "production mode needs " + ", ".join(problems) + " (see docs/operations.md); "
            "for a local run use `ac-context serve`, which starts in dev mode"
        )
