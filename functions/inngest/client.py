"""The one Inngest client of the project (app id `ac-context`), in production mode unless `INNGEST_DEV` is set.

Production mode verifies the signature of every request the Inngest server sends to `/api/inngest`, so it
needs `INNGEST_SIGNING_KEY`: without it the client refuses to start with `InngestConfigError` naming the
variable, rather than serving an endpoint that would refuse every call. Development mode talks to the local
dev server (`npx inngest-cli@latest dev --config inngest.dev.json`) and checks no signature.

This module must never import the core packages: it builds a client and nothing else.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

import inngest

from functions.errors import InngestConfigError

__all__ = ["APP_ID", "create_client", "is_dev_mode"]

APP_ID = "ac-context"
"""The Inngest app id; changing it makes Inngest see a new app."""

_FALSE = frozenset({"", "0", "false", "no", "off"})
logger = logging.getLogger("functions.inngest")


def is_dev_mode(environ: Mapping[str, str] | None = None, *, inngest_mode: str | None = None) -> bool:
    """True when `INNGEST_DEV` is set to anything but a false word, or the settings say `dev`."""
    env = os.environ if environ is None else environ
    flag = env.get("INNGEST_DEV")
    if flag is not None and flag.strip().lower() not in _FALSE:
        return True
    return inngest_mode == "dev"


def create_client(
    environ: Mapping[str, str] | None = None,
    *,
    inngest_mode: str | None = None,
    signing_key: str | None = None,
) -> inngest.Inngest:
    """Build the `ac-context` client; raise `InngestConfigError` in production without a signing key."""
    env = os.environ if environ is None else environ
    dev = is_dev_mode(env, inngest_mode=inngest_mode)
    key = signing_key or env.get("INNGEST_SIGNING_KEY") or None
    if not dev and key is None:
        raise InngestConfigError(
            "INNGEST_SIGNING_KEY is not set: production mode verifies every request from Inngest with it. "
            "Set INNGEST_SIGNING_KEY (and INNGEST_EVENT_KEY to send events), or set INNGEST_DEV=1 to use a "
            "local Inngest dev server."
        )
    return inngest.Inngest(
        app_id=APP_ID,
        is_production=not dev,
        signing_key=key,
        event_key=env.get("INNGEST_EVENT_KEY") or None,
        logger=logger,
    )
