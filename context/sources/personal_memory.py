"""The `personal_memory` source: the standing instructions of the person who asks.

It reads the asking person's user-scope `preference.*` live memories, newest first, `(created_at DESC,
id DESC)`, or ranked against the question with the option `order: relevance` (as `memory` does), and they
rank above application state. A subject with a definition reads that definition; a
subject with a user and no definition (a Front Door turn, where the person asks with no agent) reads that
person's preferences across the organization's definitions: the same single widening as `memory`, the
organization filter, the user chain rule and the subject guard all still applying. A subject with no user,
or with a trigger, reads nothing and runs no query. `memory` reads the same rows too; the packer keeps this
copy and counts that one dropped (same subject key, higher class), so one memory never appears twice.
`spec.limit` caps the read, None reads 20, zero reads nothing. An expired preference is not read (the live
view drops it).

This module must never read another person's memory and never write prose.
"""

from __future__ import annotations

from context.sources.memory import GuardedMemorySource
from memory.reads import read_personal_memories

__all__ = ["PersonalMemoryContextSource"]


class PersonalMemoryContextSource(GuardedMemorySource):
    """Reads the asking person's preference memories in this definition, behind the subject guard."""

    name = "personal_memory"
    kind = "personal_memory"
    reader = staticmethod(read_personal_memories)
    personal = True
