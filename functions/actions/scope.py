"""Who acts, and the one check of what a caller may name: an organization, the platform, an operator's act.

A `Caller` is an operator (the operator token `AC_CONTEXT_API_TOKEN`, an operator key, or the command line,
which holds the database's rights) or an organization key bound to one organization. `check_organization` is
the one scope check every interface runs for an organization a request names:

- an organization key names its own organization only (403 `organization_forbidden` for any other, existing
  or not, with no database read: a key's own organization always exists, its keys are deleted with it);
- an operator names any organization that exists (404 `organization_not_found` otherwise), and, where the act
  answers about an erasure (`erased=True`), one whose row an erasure removed (a completed receipt exists).

`require_operator` refuses an organization key an operator's act (403 `operator_scope_required`). The HTTP
edge finds where a request names an organization (`functions.api._scopes`); the console says nothing about
another tenant and answers its 403 as 404. This module must never widen a scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from functions.errors import ApiError
from state.db import Database
from state.errors import OrganizationNotFoundError
from state.organizations import require_organization
from state.receipts import organization_erased

__all__ = [
    "CLI",
    "OPERATOR_TOKEN",
    "Caller",
    "check_organization",
    "forbidden",
    "requester",
    "require_operator",
    "require_own",
]


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated caller of one act."""

    organization_id: UUID | None
    """The one organization an organization key works in; None for an operator."""
    key_id: str | None = None
    """The API key's id; None for the operator token `AC_CONTEXT_API_TOKEN` (or the command line)."""
    name: str | None = None
    """Who asks as a receipt records it, when not the key (the command line: `cli:<login>`)."""

    @property
    def operator(self) -> bool:
        """Whether the caller is operator-scoped."""
        return self.organization_id is None


OPERATOR_TOKEN = Caller(organization_id=None)
"""The caller that presented `AC_CONTEXT_API_TOKEN`."""
CLI = OPERATOR_TOKEN
"""The command line: it holds the database's rights, so it acts as an operator."""


def requester(caller: Caller) -> str:
    """Who asks, as a receipt records it: the caller's name, `key:<id>`, or `operator_token`."""
    if caller.name:
        return caller.name
    return f"key:{caller.key_id}" if caller.key_id else "operator_token"


def require_operator(caller: Caller) -> None:
    """403 `operator_scope_required` for an organization key."""
    if not caller.operator:
        raise ApiError(403, "operator_scope_required", "this act needs an operator key")


def forbidden() -> ApiError:
    """The refusal of an organization key naming another organization."""
    return ApiError(403, "organization_forbidden", "this key is bound to one organization and cannot name another")


def require_own(caller: Caller, organization_id: UUID | None) -> None:
    """The guard every act repeats without a read: an organization key acts inside its own organization only.

    (None names the platform, an operator's.) 403 `organization_forbidden` otherwise.
    """
    if not caller.operator and organization_id != caller.organization_id:
        raise forbidden()


async def check_organization(db: Database, caller: Caller, organization_id: UUID, *, erased: bool = False) -> None:
    """Return when `caller` may name `organization_id`; raise the refusal otherwise (see the module)."""
    if not caller.operator:
        if organization_id != caller.organization_id:
            raise forbidden()
        return
    try:
        await require_organization(db, organization_id)
    except OrganizationNotFoundError:
        if not (erased and await organization_erased(db, organization_id)):
            raise
