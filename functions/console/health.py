"""`/console/health` (operator): readiness, the outbox, the model switch with cancel, sweeps and metrics.

Readiness is the answer of `/readyz` (`functions._readiness.readiness`, the one readiness check); the switch
is `functions._switch_view.switch_view` for the platform or one organization, and cancel is the act
`functions.actions.switch.cancel_switch` the API's cancel calls too; the sweeps and the rest are read from the
service's own Prometheus registry, the text `/metrics` serves, summed per family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request, Response
from fastapi.responses import RedirectResponse
from prometheus_client.parser import text_string_to_metric_families

from functions._readiness import readiness
from functions._request import services
from functions._switch_view import switch_view
from functions.actions.switch import cancel_switch as cancel
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep, operator_only, optional_uuid, organization_of
from functions.console._session import check_csrf

__all__ = ["MetricRow", "metrics_summary", "router"]

router = APIRouter(prefix="/console/health", route_class=ConsoleRoute, include_in_schema=False)


@dataclass(frozen=True, slots=True)
class MetricRow:
    """One metric family as the health page shows it: what it counts, never a count beside a sum."""

    name: str
    """The family's name."""
    help: str
    """What it measures."""
    kind: str
    """`counter`, `gauge` or `histogram`."""
    value: float
    """A counter's total, a gauge's current level (summed over labels), a histogram's observations."""
    sum: float | None = None
    """A histogram's sum of what it observed (seconds, tokens); None for the others."""


def metrics_summary(text: str) -> list[MetricRow]:
    """Each counter, gauge and histogram family of a Prometheus text as one row (no creation times)."""
    out: list[MetricRow] = []
    for family in text_string_to_metric_families(text):
        if family.name.endswith("_created"):  # the creation time of a counter: not a count
            continue
        total: float | None = None
        if family.type in ("counter", "gauge"):
            values = [s.value for s in family.samples if not s.name.endswith("_created")]
        elif family.type == "histogram":
            values = [s.value for s in family.samples if s.name.endswith("_count")]
            total = float(sum(s.value for s in family.samples if s.name.endswith("_sum")))
        else:
            continue
        out.append(MetricRow(family.name, family.documentation, family.type, float(sum(values)), total))
    return out


@router.get("")
async def health_page(
    request: Request, session: SessionDep, organization_id: Annotated[str, Query(max_length=40)] = ""
) -> Response:
    """The service's health, and the switch of the platform or of `organization_id`."""
    operator_only(session)
    svc = await services(request)
    scope = optional_uuid(organization_id, "organization_id")
    if scope is not None:
        await organization_of(request, session, scope)
    state = request.app.state
    ready: dict[str, Any] = (await readiness(state.slot, getattr(state, "health", None), state.metrics)).details
    switch = await switch_view(svc.db, scope)
    summary = metrics_summary(request.app.state.metrics.render().decode())
    return render(
        request, "health.html", ready=ready, switch=switch, metrics=summary, organization_id=scope,
        sweeps=[m for m in summary if "sweep" in m.name],
    )  # fmt: skip


@router.post("/switch/cancel")
async def cancel_switch(
    request: Request,
    session: SessionDep,
    organization_id: Annotated[str, Form(max_length=40)] = "",
    csrf: Annotated[str, Form(max_length=100)] = "",
) -> Response:
    """Cancel the running switchover of the platform or one organization (the API's cancel)."""
    check_csrf(session, csrf)
    operator_only(session)
    scope = optional_uuid(organization_id, "organization_id")
    svc = await services(request)
    if scope is not None:
        await organization_of(request, session, scope)
    await cancel(svc, session.caller, scope)
    target = "/console/health" + (f"?organization_id={scope}" if scope else "")
    return RedirectResponse(target, status_code=303)
