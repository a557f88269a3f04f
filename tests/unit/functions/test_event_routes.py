"""The one table of events (`functions.event_routes`): every Inngest trigger is in it, each entry has both sides."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping

import inngest
import pytest

from functions import event_routes
from functions._in_process import ingest_one
from functions._services import ServiceSlot
from functions.errors import UnroutedEventError
from functions.event_routes import ROUTES, EventRoute, in_process_handler
from functions.inngest.catalog import build_functions


def _built_triggers() -> dict[str, list[str]]:
    """The event triggers of the functions the app really serves, by function id (cron triggers left out)."""
    client = inngest.Inngest(app_id="event-routes-test", is_production=False)
    found: dict[str, list[str]] = {}
    for fn in build_functions(client, ServiceSlot()):
        triggers = fn.get_config("http://localhost/api/inngest").main.triggers
        found[fn.local_id] = [t.event for t in triggers if isinstance(t, inngest.TriggerEvent)]
    return found


def _problems(routes: Iterable[EventRoute], triggers: Mapping[str, list[str]]) -> list[str]:
    """What is missing on either side of the table against the functions built."""
    routes = list(routes)
    problems: list[str] = []
    routed = {(r.event, f) for r in routes for f in r.functions}
    for function_id, events in triggers.items():
        problems += [
            f"{function_id} triggers on {e}, not in the table" for e in events if (e, function_id) not in routed
        ]
    for route in routes:
        if not route.functions:
            problems.append(f"{route.event} triggers no Inngest function")
        problems += [
            f"{route.event} names {f}, which does not trigger on it"
            for f in route.functions
            if route.event not in triggers.get(f, [])
        ]
        if route.in_process is None or not inspect.iscoroutinefunction(route.in_process):
            problems.append(f"{route.event} has no in-process handler")
    return problems


def test_every_inngest_trigger_is_in_the_table_and_every_entry_has_both_sides() -> None:
    assert _problems(ROUTES, _built_triggers()) == []
    assert len({r.event for r in ROUTES}) == len(ROUTES), "an event appears twice in the table"


def test_dev_mode_dispatches_every_table_entry_through_the_table() -> None:
    for route in ROUTES:
        assert in_process_handler(route.event) is route.in_process
    with pytest.raises(UnroutedEventError):
        in_process_handler("test/never.routed")


def test_an_added_event_reaches_both_sides_or_the_check_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    added = EventRoute("knowledge/source.extra.requested", ("knowledge-ingest",), ingest_one)
    monkeypatch.setattr(event_routes, "ROUTES", (*ROUTES, added))
    assert _problems(event_routes.ROUTES, _built_triggers()) == []  # the function took its trigger from the table
    assert in_process_handler(added.event) is ingest_one

    no_function = EventRoute(added.event, (), ingest_one)
    monkeypatch.setattr(event_routes, "ROUTES", (*ROUTES, no_function))
    assert _problems(event_routes.ROUTES, _built_triggers()) == [f"{added.event} triggers no Inngest function"]

    no_handler = EventRoute(added.event, ("knowledge-ingest",), None)  # type: ignore[arg-type]
    monkeypatch.setattr(event_routes, "ROUTES", (*ROUTES, no_handler))
    assert _problems(event_routes.ROUTES, _built_triggers()) == [f"{added.event} has no in-process handler"]

    monkeypatch.undo()
    built = _built_triggers()  # a function whose trigger is written by hand, past the table
    built["knowledge-ingest"].append(added.event)
    assert _problems(ROUTES, built) == [f"knowledge-ingest triggers on {added.event}, not in the table"]
