"""The stale-pending sweep runs every hour (issue 14): the cron is read from the function the app registers,
so a daily (or any other) schedule fails here, whatever the module constant says."""

from __future__ import annotations

import re

import inngest
import pytest

from functions._services import ServiceSlot
from functions.inngest.catalog import build_functions
from functions.inngest.knowledge_sweep import FUNCTION_ID


def registered_cron() -> str:
    """The cron trigger of `knowledge-sweep-pending` as the app registers it with Inngest."""
    client = inngest.Inngest(app_id="ac-context", is_production=False)
    [sweep] = [fn for fn in build_functions(client, ServiceSlot()) if fn.id == f"{client.app_id}-{FUNCTION_ID}"]
    config = sweep.get_config("http://app.example/api/inngest").main
    [trigger] = config.triggers
    assert isinstance(trigger, inngest.TriggerCron), f"the sweep is triggered by a cron, not {trigger!r}"
    return trigger.cron


def is_hourly(cron: str) -> bool:
    """Once at a fixed minute of every hour of every day: `[TZ=<zone> ]<minute> * * * *`."""
    fields = re.sub(r"^TZ=\S+\s+", "", cron.strip()).split()
    return len(fields) == 5 and fields[0].isdigit() and int(fields[0]) < 60 and fields[1:] == ["*"] * 4


def test_the_registered_sweep_runs_every_hour() -> None:
    cron = registered_cron()
    assert is_hourly(cron), f"a source pending over an hour must be failed within the hour; cron is {cron!r}"


@pytest.mark.parametrize(
    ("cron", "hourly"),
    [
        ("TZ=UTC 0 * * * *", True),
        ("17 * * * *", True),
        ("TZ=UTC 0 0 * * *", False),  # daily
        ("0 */2 * * *", False),
        ("*/30 * * * *", False),
        ("0 * * * 1-5", False),
        ("@hourly x", False),
    ],
)
def test_the_hourly_rule_itself(cron: str, hourly: bool) -> None:
    assert is_hourly(cron) is hourly
