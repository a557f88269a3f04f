"""The one table of events: each event, the Inngest functions it triggers, and dev mode's handler for it.

The Inngest functions take their triggers from this table (`event_triggers`), and dev mode's runner
(`InProcessRunner`, below) finds its handler here (`in_process_handler`, one of `functions._in_process`), so
an event cannot reach one side and not the other; `tests/unit/functions/test_event_routes.py` checks both
sides against the functions the app really builds. This module must never import the Inngest SDK nor send anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from functions._in_process import (
    InProcessHandler,
    build_segment_brief,
    ingest_batch_of,
    ingest_one,
    reembed_source,
    retry_and_ingest,
    switch_model,
)
from functions.errors import UnroutedEventError
from functions.events import (
    EVENT_BATCH,
    EVENT_REEMBED,
    EVENT_RETRY,
    EVENT_SEGMENT_BRIEF,
    EVENT_SWITCH,
    EVENT_SYNC,
    EVENT_UPLOADED,
)

if TYPE_CHECKING:
    from functions._services import ServiceSlot
    from state.outbox import OutboxEntry

__all__ = ["ROUTES", "EventRoute", "InProcessRunner", "event_triggers", "in_process_handler", "route_of"]


@dataclass(frozen=True, slots=True)
class EventRoute:
    """An event and its two sides: the Inngest functions it triggers, and dev mode's handler."""

    event: str
    """The event name (`functions.events`)."""
    functions: tuple[str, ...]
    """The ids of the Inngest functions it triggers."""
    in_process: InProcessHandler
    """What dev mode runs for it when no Inngest server answers."""


ROUTES: tuple[EventRoute, ...] = (
    EventRoute(EVENT_UPLOADED, ("knowledge-ingest",), ingest_one),
    EventRoute(EVENT_SYNC, ("knowledge-ingest",), ingest_one),
    EventRoute(EVENT_RETRY, ("knowledge-ingest",), retry_and_ingest),
    EventRoute(EVENT_BATCH, ("knowledge-ingest-batch",), ingest_batch_of),
    EventRoute(EVENT_SWITCH, ("knowledge-model-switch",), switch_model),
    EventRoute(EVENT_REEMBED, ("knowledge-reembed-source",), reembed_source),
    EventRoute(EVENT_SEGMENT_BRIEF, ("context-segment-brief",), build_segment_brief),
)


def route_of(event: str) -> EventRoute:
    """The route of `event`; `UnroutedEventError` when the table has none."""
    for route in ROUTES:
        if route.event == event:
            return route
    raise UnroutedEventError(f"the event {event!r} is not in the table of events (functions.event_routes)")


def event_triggers(function_id: str) -> list[str]:
    """The events that trigger the Inngest function `function_id`, in the table's order."""
    return [route.event for route in ROUTES if function_id in route.functions]


def in_process_handler(event: str) -> InProcessHandler:
    """Dev mode's handler of `event`."""
    return route_of(event).in_process


class InProcessRunner:
    """Runs an outbox event's work here with the handler the table of events gives it (dev mode, no server).

    Bad documents fail their source with its reason, as on every path; any other error leaves the row
    waiting for its backoff.
    """

    def __init__(self, slot: ServiceSlot) -> None:
        self.slot = slot

    async def run(self, entry: OutboxEntry) -> None:
        """Do the work `entry` asks for."""
        await in_process_handler(entry.name)(self.slot.get(), entry)
