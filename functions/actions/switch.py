"""Cancel the running model switch of a scope (operator only): the act behind `DELETE /v1/knowledge/switch`.

The old model stays live; the chunks the switch built for the new one are dropped. This module must never
start a switch.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from functions._services import Services
from functions.actions.scope import Caller, require_operator
from knowledge.embedding.live_model import cancel_running_switch, live_model

__all__ = ["SwitchCancelled", "cancel_switch"]


@dataclass(frozen=True, slots=True)
class SwitchCancelled:
    """What a cancel did."""

    organization_id: UUID | None
    """The scope (None: the platform default)."""
    cancelled: bool
    """Whether a switch was running (and is cancelled now)."""
    from_model: str | None
    """The model it was switching from (the one that stays live)."""
    to_model: str | None
    """The model it was switching to."""
    dropped_chunks: int
    """The chunks built for that model, dropped."""
    live_model: str
    """The model that stays live."""


async def cancel_switch(services: Services, caller: Caller, organization_id: UUID | None) -> SwitchCancelled:
    """Cancel the running switchover of the platform (None) or one organization."""
    require_operator(caller)
    cancelled = await cancel_running_switch(services.db, organization_id)
    return SwitchCancelled(
        organization_id=organization_id,
        cancelled=cancelled is not None,
        from_model=None if cancelled is None else cancelled[0].from_model,
        to_model=None if cancelled is None else cancelled[0].to_model,
        dropped_chunks=0 if cancelled is None else cancelled[1],
        live_model=(await live_model(services.db, organization_id)).model_id,
    )
