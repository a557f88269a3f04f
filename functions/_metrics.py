"""Prometheus metrics of the service: brief pressure, ingestion outcomes and sweep counts.

Each app owns a `Metrics` with its own registry, so two apps in one process (tests) never collide. The
labels are source names, outcomes and routes: this module must never put prompt text, a query, a title or
an organization id into a label or a value.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from context.models import ContextBrief

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The Prometheus text exposition format."""

_TOKEN_BUCKETS = (0, 100, 250, 500, 1000, 2000, 4000, 6000, 8000, 12000, 16000)


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

    def observe_required_failure(self, sources: list[str]) -> None:
        """Record a build that a required source failed."""
        for source in sources:
            self.brief_required_failures.labels(source=source).inc()

    def render(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)
