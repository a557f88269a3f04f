"""The events of the app: their names and the limits of their payloads, in one place.

The Inngest functions trigger on these names; the HTTP routes and the CLI send them. Renaming one makes
Inngest see a different event, so a name never changes once it has shipped. This module must never import
the Inngest SDK or the core: it holds names and numbers.
"""

from __future__ import annotations

__all__ = [
    "EVENT_BATCH",
    "EVENT_REEMBED",
    "EVENT_RETRY",
    "EVENT_SEGMENT_BRIEF",
    "EVENT_SWITCH",
    "EVENT_SYNC",
    "EVENT_UPLOADED",
    "MAX_BATCH_SOURCES",
]

EVENT_UPLOADED = "knowledge/source.uploaded"
"""A source was registered by an upload; data `{source_id, organization_id}`."""
EVENT_RETRY = "knowledge/source.retry.requested"
"""A failed source was reset to pending for another attempt; data `{source_id, organization_id}`."""
EVENT_SYNC = "knowledge/source.sync.requested"
"""A new version of a URI was registered; it replaces the live one when ready. Data as for an upload."""
EVENT_BATCH = "knowledge/sources.batch.requested"
"""Many registered sources of one organization; data `{organization_id, source_ids: [...]}`."""
MAX_BATCH_SOURCES = 500
"""Most source ids one batch event carries (its JSON stays far below Inngest's event size limit)."""
EVENT_SWITCH = "knowledge/model.switch.requested"
"""Switch a scope's live embedding model; data `{organization_id (null = the platform default), model}`."""
EVENT_REEMBED = "knowledge/source.reembed.requested"
"""Build one source under one model during a switch; data `{source_id, organization_id, model}`."""
EVENT_SEGMENT_BRIEF = "context/segment.brief.requested"
"""Build (or reuse) the brief of an agent segment; data is `functions._wire.SegmentBriefInput`."""
