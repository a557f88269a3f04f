"""The CLI's `--send-event`: outbox rows written with the change, then one try to deliver them at once.

A command writes its events with `state.outbox.enqueue` in the transaction of its state change (the
registration, the reset), then `deliver` sends them through the service's own deliverer
(`functions.outbox.delivery.EventOutbox`). When no Inngest server answers, the rows stay, and the command ends
with one line (`event_queued`) and exit code `EXIT_QUEUED`: the service (`ac-context serve`, in Inngest
mode or in dev mode) delivers them when it runs. This module must never run the work an event asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING
from uuid import UUID

import typer
from rich.console import Console

from functions.cli._common import plain

if TYPE_CHECKING:
    from functions._services import Services
    from functions.outbox.delivery import Delivery

__all__ = ["EXIT_QUEUED", "deliver", "end_if_queued"]

EXIT_QUEUED = 3
"""Exit code of a command whose events wait in the outbox (the change is made; the service delivers them)."""


async def deliver(svc: Services, ids: Sequence[UUID]) -> Delivery:
    """Try once to send the outbox rows `ids` to Inngest; what fails waits in the outbox."""
    from functions._services import ServiceSlot
    from functions.inngest.client import create_client
    from functions.outbox.delivery import EventOutbox

    return await EventOutbox(ServiceSlot(svc), create_client).deliver(ids)


def end_if_queued(status: str, error: str | None, what: str) -> None:
    """When the events were queued, print one `event_queued` line and exit with `EXIT_QUEUED`."""
    if status != "queued":
        return
    Console(stderr=True).print(
        plain(
            f"notice: event_queued: {what} waits in the event outbox ({error or 'not sent'}); "
            "`ac-context serve` delivers it when Inngest answers, or runs it itself in dev mode"
        )
    )
    raise typer.Exit(EXIT_QUEUED)
