"""`GET /v1/memory/export` and `POST /v1/memory/imports`: memory that leaves one organization and arrives in another.

The export streams `application/x-ndjson`, one transfer line per revision (`memory.transfer_format`): every
chain of the organization, or with `user_id` one person's user-scope chains, live, superseded, expired and
forgotten revisions alike. The import takes that file as a multipart upload (`file`, `organization_id`, and
optionally `definition_id` to write every chain under one agent definition and `user_id` to give every
user-scope chain to one person) and answers its receipt (kind `memory_import`, listed with the other
receipts): counts of what was imported, skipped as imported before, and refused by reason. A refused file
answers one error with its code and, in `details.line`, the first bad line; nothing of it is written. An
organization key exports from and imports into its own organization only. This module only translates: the
acts are `functions.actions.memory_transfer`'s.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from starlette.datastructures import UploadFile

from functions.actions import memory_transfer
from functions.api._body import BodyRoute, parsed_body
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, route_errors
from functions.api._scopes import OrganizationCaller
from functions.api.receipts import ReceiptOut, receipt_out
from functions.errors import ApiError, http_status
from memory.transfer import EXPORT_MEDIA_TYPE, MAX_IMPORT_BYTES, MemoryImportError
from memory.transfer_format import TransferLine
from state.ids import CanonicalUuid, OrganizationId, is_canonical_uuid

__all__ = ["NdjsonResponse", "router"]

router = APIRouter(prefix="/v1/memory", tags=["memory"], responses=ERROR_RESPONSES, route_class=BodyRoute)

_IMPORT_FORM = {
    "type": "object",
    "required": ["file", "organization_id"],
    "properties": {
        "file": {"type": "string", "format": "binary", "description": "An export (JSONL, one revision a line)."},
        "organization_id": {"type": "string", "format": "uuid", "description": "The importing organization."},
        "definition_id": {
            "type": "string", "format": "uuid",
            "description": "Write every chain under this agent definition (default: the definition of the same name).",
        },
        "user_id": {
            "type": "string", "format": "uuid",
            "description": "Give every user-scope chain to this member (default: the member with the same email).",
        },
    },
}  # fmt: skip
_IMPORT_ERRORS = route_errors({
    400: "`body_unreadable`: the multipart body could not be read.",
    404: "`organization_not_found`.",
    409: "`organization_erasing`: an erasure of the organization is running.",
    413: "`memory_import_too_large`: the file is larger than the import reads (`details.line` when too many lines).",
    422: "The file is refused whole, `details.line` naming its first bad line: `memory_import_line_invalid`, "
    "`memory_import_format_unknown`, `memory_import_chain_broken`; `memory_import_target_invalid` (the "
    "definition or person named is not the organization's); `invalid_request` (a field).",
})  # fmt: skip


class NdjsonResponse(StreamingResponse):
    """A streamed answer of JSON lines."""

    media_type = EXPORT_MEDIA_TYPE


def _json_errors(responses: dict[int | str, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    """Error responses documented as the JSON envelope they are, on a route whose success is another media type."""
    envelope = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}
    return {status: {"description": r["description"], "content": envelope} for status, r in responses.items()}


@router.get(
    "/export",
    response_class=NdjsonResponse,
    responses={
        200: {"model": TransferLine, "description": "One `TransferLine` a line, chains in a stable order."},
        **_json_errors(
            {**ERROR_RESPONSES, **route_errors({404: "`organization_not_found`, or `user_not_found` (not a member)."})}
        ),
    },
)
async def export(
    svc: ServicesDep,
    caller: OrganizationCaller,
    organization_id: Annotated[OrganizationId, Query(description="The organization (a key's own).")],
    user_id: Annotated[
        CanonicalUuid | None, Query(description="Only this person's user-scope chains; omit it for every chain.")
    ] = None,
) -> NdjsonResponse:
    """Every revision of the organization's (or the person's) memory chains, as JSONL, chains oldest first."""
    lines = await memory_transfer.export_memories(svc.db, caller, organization_id, user_id=user_id)
    name = f"memory-{organization_id}{'' if user_id is None else f'-{user_id}'}.jsonl"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    return NdjsonResponse(lines, headers=headers)


def _uuid_field(value: Any, name: str) -> UUID | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not is_canonical_uuid(value):
        raise ApiError(422, "invalid_request", f"{name} must be a UUID in canonical text")
    return UUID(value)


@router.post(
    "/imports",
    response_model=ReceiptOut,
    responses=_IMPORT_ERRORS,
    openapi_extra={"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": _IMPORT_FORM}}}},
)
async def import_memories(request: Request, svc: ServicesDep, caller: OrganizationCaller) -> ReceiptOut:
    """Import an export into the organization: chains rebuilt with new ids; the receipt counts what was refused."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_IMPORT_BYTES + 64 * 1024:
        raise ApiError(413, "memory_import_too_large", f"the request is larger than the {MAX_IMPORT_BYTES}-byte limit")
    form = parsed_body(request).form
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        raise ApiError(422, "file_missing", "send the export in a multipart field named 'file'")
    organization_id = _uuid_field(form.get("organization_id"), "organization_id")
    if organization_id is None:
        raise ApiError(422, "organization_required", "name the importing organization (organization_id)")
    data = await upload.read(MAX_IMPORT_BYTES + 1)
    try:
        receipt = await memory_transfer.import_file(
            svc, caller, organization_id, data,
            definition_id=_uuid_field(form.get("definition_id"), "definition_id"),
            user_id=_uuid_field(form.get("user_id"), "user_id"),
        )  # fmt: skip
    except MemoryImportError as exc:
        raise ApiError(http_status(exc.code), exc.code, str(exc), details={"line": exc.line}) from exc
    return receipt_out(receipt)
