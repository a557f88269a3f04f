"""Prometheus metrics of the service: brief pressure and overload, request latency, ingestion and sweeps.

Each app owns a `Metrics` with its own registry, so two apps in one process (tests) never collide. The
labels are source names, outcomes and routes, and one gauge is labelled by organization id: the overdue
knowledge sources per organization (`platform` for the platform's), counted by the database at each scrape
(`set_overdue_sources`); the outbox's waiting and stuck events are read at each scrape too (`set_outbox`).
This module must never put prompt text, a query, a title, an owner or any other tenant text into a label
or a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING
from uuid import UUID

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from context.models import ContextBrief

if TYPE_CHECKING:
    from state.outbox import Backlog
    from state.replicas import ReadRouter

__all__ = ["CONTENT_TYPE", "PLATFORM_LABEL", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The Prometheus text exposition format."""
PLATFORM_LABEL = "platform"
"""The `organization` label value of the platform's own documents (organization_id NULL)."""

_TOKEN_BUCKETS = (0, 100, 250, 500, 1000, 2000, 4000, 6000, 8000, 12000, 16000)
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """The counters and histograms the service exports on `/metrics`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self.brief_tokens = Histogram(
            "ac_context_brief_tokens",
            "Tokens of each brief built, by route (front_door, segment, cli).",
            ["route"],
            buckets=_TOKEN_BUCKETS,
            registry=self.registry,
        )
        self.brief_source_tokens = Counter(
            "ac_context_brief_source_tokens",
            "Tokens spent per context source across briefs.",
            ["source"],
            registry=self.registry,
        )
        self.brief_dropped_items = Counter(
            "ac_context_brief_dropped_items",
            "Items the packer dropped (budget or precedence), per context source.",
            ["source"],
            registry=self.registry,
        )
        self.brief_failed_sources = Counter(
            "ac_context_brief_failed_sources",
            "Optional context sources that did not answer, per source.",
            ["source"],
            registry=self.registry,
        )
        self.brief_required_failures = Counter(
            "ac_context_brief_required_failures",
            "Builds that failed because a required context source failed, per source.",
            ["source"],
            registry=self.registry,
        )
        self.briefs_degraded = Counter(
            "ac_context_briefs_degraded",
            "Briefs built without one or more optional sources, per source that failed (one count per brief).",
            ["source"],
            registry=self.registry,
        )
        self.brief_receipts_written = Counter(
            "ac_context_brief_receipts_written",
            "Brief receipts written by the background flush (functions/_brief_receipts.py).",
            registry=self.registry,
        )
        self.brief_receipts_dropped = Counter(
            "ac_context_brief_receipts_dropped",
            "Brief receipts not written, by reason (overflow: the buffer was full; error: a flush failed).",
            ["reason"],
            registry=self.registry,
        )
        self.briefs_overloaded = Counter(
            "ac_context_briefs_overloaded",
            "Briefs refused with 503 overloaded because the process was building its cap of briefs.",
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "ac_context_http_request_seconds",
            "HTTP request latency by method, route template and status class.",
            ["method", "route", "status"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.ingestion_outcomes = Counter(
            "ac_context_ingestion_outcomes",
            "Knowledge ingestion outcomes (ready, failed, retried).",
            ["outcome"],
            registry=self.registry,
        )
        self.sweep_runs = Counter(
            "ac_context_sweep_runs", "Runs of the stale-pending knowledge sweep.", registry=self.registry
        )
        self.sweep_failed_sources = Counter(
            "ac_context_sweep_failed_sources",
            "Knowledge sources the sweep marked failed after an hour pending.",
            registry=self.registry,
        )
        # Step state that could not be read (functions.inngest.encryption, functions.inngest.context_segment).
        self.segment_briefs_rebuilt = Counter(
            "ac_context_segment_briefs_rebuilt",
            "Segment briefs built again because their memoized step could not be read: `undecryptable` when no "
            "key of AC_CONTEXT_STEP_ENCRYPTION_KEYS decrypts it, `invalid` when it is not a brief.",
            ["reason"],
            registry=self.registry,
        )

        self.knowledge_sources_overdue = Gauge(
            "ac_context_knowledge_sources_overdue",
            "Knowledge sources past their review date (review_by before today in UTC), per organization id "
            "(`platform` for the platform documents); counted at each scrape. An organization with none is absent.",
            ["organization"],
            registry=self.registry,
        )

        # Reads on standbys (state.replicas): each read that ran on the primary instead, by reason.
        self.standby_fallbacks = Counter(
            "ac_context_standby_fallbacks",
            "Reads (briefs, searches, lists) that ran on the primary although standbys are configured, by reason: "
            "standby_down, promoted, lagging, read_your_writes_timeout, recovery_conflict, standby_error.",
            ["reason"],
            registry=self.registry,
        )
        self.standby_reads = Counter(
            "ac_context_standby_reads",
            "Reads served by a standby, per standby host.",
            ["standby"],
            registry=self.registry,
        )
        self.standby_lag_bytes = Gauge(
            "ac_context_standby_lag_bytes",
            "WAL bytes a standby had still to replay at its last probe (-1 while it is down or promoted).",
            ["standby"],
            registry=self.registry,
        )

        self.outbox_waiting_events = Gauge(
            "ac_context_outbox_waiting_events",
            "Events waiting in the outbox to be sent to Inngest (or run in-process); read at each scrape.",
            registry=self.registry,
        )
        self.outbox_stuck_events = Gauge(
            "ac_context_outbox_stuck_events",
            "Events stuck in the outbox: waiting five minutes or more with a send error; read at each scrape. "
            "One stuck event does not fail /readyz: alert on this gauge.",
            registry=self.registry,
        )

    def set_standbys(self, router: ReadRouter | None) -> None:
        """Bring the standby counters up to the reads and fallbacks `router` counted (`state.replicas`)."""
        if router is None:
            return
        for reason, count in router.fallbacks.items():
            child = self.standby_fallbacks.labels(reason=reason)
            child.inc(count - child._value.get())
        for host, count in router.served.items():
            served = self.standby_reads.labels(standby=host)
            served.inc(count - served._value.get())
        for standby in router.standbys:
            behind, _ = router.lag(standby)
            self.standby_lag_bytes.labels(standby=standby.host()).set(behind if standby.state == "streaming" else -1)

    def set_outbox(self, backlog: Backlog | None) -> None:
        """Set the outbox gauges from `backlog`; None (the database did not answer) leaves them as they were."""
        if backlog is not None:
            self.outbox_waiting_events.set(backlog.waiting)
            self.outbox_stuck_events.set(backlog.stuck)

    def set_overdue_sources(self, counts: Mapping[UUID | None, int] | None) -> None:
        """Replace the overdue gauge with `counts` (organization id, None for the platform); None leaves it empty."""
        self.knowledge_sources_overdue.clear()
        for organization, count in (counts or {}).items():
            label = PLATFORM_LABEL if organization is None else str(organization)
            self.knowledge_sources_overdue.labels(organization=label).set(count)

    def observe_brief(self, brief: ContextBrief, *, route: str) -> None:
        """Record a brief's tokens, its per-source spend, drops and failed sources (never its text)."""
        self.brief_tokens.labels(route=route).observe(brief.tokens)
        for source, tokens in brief.per_source_tokens.items():
            self.brief_source_tokens.labels(source=source).inc(tokens)
        for source, count in brief.dropped.items():
            if count:
                self.brief_dropped_items.labels(source=source).inc(count)
        for source in brief.failed_sources:
            self.brief_failed_sources.labels(source=source).inc()
        for source in set(brief.failed_sources):
            self.briefs_degraded.labels(source=source).inc()

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Record one HTTP request's latency under its route template (never its path or parameters)."""
        self.request_seconds.labels(method=method, route=route, status=f"{status // 100}xx").observe(seconds)

    def observe_required_failure(self, sources: list[str]) -> None:
        """Record a build that a required source failed."""
        for source in sources:
            self.brief_required_failures.labels(source=source).inc()

    def render(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)
