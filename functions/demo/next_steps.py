"""The demo's last lines: what to run next, where the console is and how to sign in to it.

This module must never start anything: it only says what the newcomer types next.
"""

from __future__ import annotations

from typing import Final

from state.demo_tenant import DEMO

__all__ = ["SERVE_URL", "next_steps"]

SERVE_URL: Final = "http://127.0.0.1:8000"
"""Where `make serve` answers by default (`functions.cli._serve.DEFAULT_PORT`; a test keeps them equal)."""


def next_steps() -> list[str]:
    """The lines `ac-context demo` (and so `make demo`) ends with."""
    return [
        "Next steps:",
        "  1. make serve    starts the service on this data, in dev mode; it prints an",
        "                   API token once (or set AC_CONTEXT_API_TOKEN to choose it)",
        f"  2. open {SERVE_URL}/console and sign in with that token",
        "     (or an organization key: `ac-context keys mint --org <id>`, that organization only)",
        f"  3. the demo's organization is {DEMO.organization_id}",
        f"  API docs: {SERVE_URL}/docs; the Inngest dev server is optional (without it the",
        "  work runs in-process): npx inngest-cli@latest dev --config inngest.dev.json",
    ]
