"""`POST /v1/erasures/users` and `POST /v1/erasures/organizations`: erase a person, or an organization.

`/organizations` (operator only) erases everything this layer holds for one organization through
`functions.organization_erasure.erase_organization`, inline, in bounded batches, and answers the complete receipt; a
request cut off (client gone, process killed) is finished by sending it again, which resumes the running
receipt. A repeat after the organization row is gone answers the completed receipt (the scope check lets
this route name an erased organization); 404 `organization_not_found` for one that neither exists nor was
erased.

The body names the organization (`organization_id`: an organization key names its own, as on every
organization route; an operator names any), the user, and optionally the person's subject ref
(`crm.person:<id>`), whose organization memories are erased too. Every revision of every user-scope memory of
the user goes, text and subject refs included, through the one audited database path; the answer is the
`user` receipt. A repeat of a complete erasure that finds nothing new answers the same receipt; a rerun of an
interrupted one resumes it. Refusals, each with nothing changed: 404 `organization_not_found`, 404
`user_not_found` (no such user in that organization), 422 `erasure_subject_invalid` naming `body.subject`.
This module must never erase anything itself: it calls the acts of `functions.actions.erasure`.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from functions._wire import CleanText
from functions.actions import erasure
from functions.api._body import BodyRoute
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, ErrorEnvelope, error_responses
from functions.api._scopes import ErasedOperatorCaller, OrganizationCaller
from functions.api.receipts import ReceiptOut, receipt_out
from functions.errors import ApiError
from memory.errors import InvalidErasureSubjectError
from state.ids import CanonicalUuid, OrganizationId

__all__ = ["OrganizationErasureIn", "UserErasureIn", "router"]

router = APIRouter(prefix="/v1/erasures", tags=["erasure"], responses=ERROR_RESPONSES, route_class=BodyRoute)


class UserErasureIn(BaseModel):
    """Erase one person's memories."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    organization_id: OrganizationId
    """The organization the user belongs to (an organization key names its own)."""
    user_id: CanonicalUuid
    """The user whose user-scope memories are erased, every revision of every chain."""
    subject: CleanText | None = Field(default=None, max_length=300)
    """The person's subject ref, `crm.person:<id>` (or `intelligence.person:<id>`): the organization memories
    about that person are erased too."""


@router.post(
    "/users",
    responses={
        **error_responses(400),
        404: {"model": ErrorEnvelope, "description": "`organization_not_found`, or `user_not_found`."},
        422: {
            "model": ErrorEnvelope,
            "description": "`invalid_request` (the body), or `erasure_subject_invalid` (at `body.subject`).",
        },
    },
)
async def erase_user_route(body: UserErasureIn, caller: OrganizationCaller, svc: ServicesDep) -> ReceiptOut:
    """Erase every revision of the user's memories (and, with `subject`, the organization memories about them)."""
    try:
        receipt = await erasure.erase_person(svc.db, caller, body.organization_id, body.user_id, subject=body.subject)
    except InvalidErasureSubjectError as exc:
        details = [{"loc": ["body", "subject"], "msg": exc.problem, "type": exc.code}]
        raise ApiError(422, exc.code, f"body.subject {exc.problem}", details=details) from exc
    return receipt_out(receipt)


class OrganizationErasureIn(BaseModel):
    """Erase everything this layer holds for one organization."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    organization_id: CanonicalUuid
    """The organization: its knowledge sources, chunks of every model, statistics, objects, settings and
    switches, memories, API keys and cached dossier, and its row where this deployment created it."""


@router.post(
    "/organizations",
    responses={**error_responses(400), 404: {"model": ErrorEnvelope, "description": "`organization_not_found`."}},
)
async def erase_organization_route(
    body: OrganizationErasureIn, caller: ErasedOperatorCaller, svc: ServicesDep
) -> ReceiptOut:
    """Erase an organization (operator only); a repeat answers the same receipt, an interrupted one resumes."""
    receipt = await erasure.erase_organization(svc.db, svc.object_store, caller, body.organization_id)
    return receipt_out(receipt)
