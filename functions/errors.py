"""The errors of the `functions` layer, and the one map from every package's error codes to HTTP statuses.

    CodedError                      the shared root of `state.errors` (message defaults to the docstring)
    └── FunctionsError              root of this layer; `code` is stable and machine readable
        ├── InngestConfigError      the Inngest client cannot start (production without a signing key)
        ├── ServiceNotReadyError    a function or endpoint ran before the app opened its database
        ├── ApiError                an HTTP error with a status and a code (bad input, auth, not found)
        ├── OverloadedError         the process builds as many briefs as it may; retry after a moment
        ├── EventSendError          an event could not be sent to Inngest
        ├── SourceNotFailedError    a retry of a source that is not failed (`functions.actions.knowledge.retry`)
        └── UnroutedEventError      an event the table of events (`functions.event_routes`) does not name

`http_status(code)` maps the `code` of any error the core raises (state, context, knowledge, memory) to the
status the HTTP API answers with. This module must never import FastAPI or Inngest, so the CLI and the
functions can raise from it without pulling a web server in.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from state.errors import CodedError

__all__ = [
    "CODE_STATUS",
    "ApiError",
    "EventSendError",
    "FunctionsError",
    "InngestConfigError",
    "OverloadedError",
    "ServiceNotReadyError",
    "SourceNotFailedError",
    "UnroutedEventError",
    "http_status",
]


class FunctionsError(CodedError):
    """An error of the functions layer."""

    code = "functions_error"


class InngestConfigError(FunctionsError, RuntimeError):
    """The Inngest client cannot start with this configuration."""

    code = "inngest_config_invalid"


class ServiceNotReadyError(FunctionsError, RuntimeError):
    """The service has not opened its database yet."""

    code = "service_not_ready"


class EventSendError(FunctionsError):
    """An event could not be sent to Inngest; the row is written, so a retry of the call is safe."""

    code = "event_send_failed"


class UnroutedEventError(FunctionsError, LookupError):
    """An event the table of events (`functions.event_routes`) does not name."""

    code = "event_unrouted"


class OverloadedError(FunctionsError, RuntimeError):
    """The process is building as many briefs as it may at once; retry after `retry_after_s` seconds."""

    code = "overloaded"

    def __init__(self, message: str | None = None, *, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class SourceNotFailedError(FunctionsError):
    """A retry of a source that is not failed: a pending one is owned by its event or the sweep, a ready one is done."""

    code = "source_not_failed"


class ApiError(FunctionsError):
    """An error the HTTP API answers with its own status and code."""

    def __init__(self, status: int, code: str, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.details = details


CODE_STATUS: Mapping[str, int] = MappingProxyType(
    {
        # roots: a bare root error is an internal failure
        "context_error": 500,
        "knowledge_error": 500,
        "state_error": 500,
        # context
        "policy_invalid": 422,
        "context_misuse": 422,
        "unknown_context_source": 422,
        "forbidden_source_option": 422,
        "duplicate_context_source": 422,
        "required_context_source_failed": 503,
        "context_source_failed": 503,
        "source_item_mismatch": 503,
        # knowledge: bad input
        "knowledge_input_invalid": 422,
        "document_unreadable": 422,
        "pdf_encrypted": 422,
        "pdf_no_text": 422,
        "document_malformed": 422,
        "document_too_large": 413,
        "document_too_many_pages": 413,
        "pdf_content_too_large": 413,
        "document_text_too_large": 413,
        "too_many_chunks": 413,
        "document_extraction_timeout": 422,
        "document_empty": 422,
        "document_type_unsupported": 415,
        "embedding_model_unknown": 422,
        "object_key_invalid": 422,
        "review_field_invalid": 422,
        "source_uri_invalid": 422,
        # knowledge: the world failed
        "knowledge_unavailable": 503,
        "embedding_provider_unavailable": 503,
        "embedding_auth_failed": 503,
        "embedding_dimension_mismatch": 500,
        "object_store_unavailable": 503,
        "object_not_found": 404,
        "knowledge_source_not_found": 404,
        "embedder_model_mismatch": 422,
        "embedding_model_conflict": 409,
        "knowledge_model_unset": 503,
        "knowledge_model_changed": 503,
        "knowledge_switch_not_ready": 409,
        "knowledge_switch_conflict": 409,
        "knowledge_switch_cancelled": 409,
        "knowledge_model_not_wanted": 409,
        "knowledge_store_unavailable": 503,
        "knowledge_source_not_ready": 409,
        "source_not_found": 404,
        "platform_source_forbidden": 403,
        "source_deleted": 410,
        "source_deleting": 409,
        # memory
        "memory_misuse": 422,
        "invalid_input": 422,
        "unknown_tool": 404,
        "memory_tool_in_workflow": 422,
        "invalid_invocation": 422,
        "memory_refused": 409,
        "memory_attribute_namespace": 422,
        "memory_user_scope_for_trigger": 422,
        "memory_too_many_subject_refs": 422,
        "memory_duplicate": 409,
        "memory_run_limit": 429,
        "memory_not_found": 404,
        "memory_not_current": 409,
        "memory_already_forgotten": 409,
        "memory_principal_mismatch": 403,
        "memory_conflict": 409,
        "memory_error": 500,
        "memory_invalid_subject_key": 422,
        "memory_subject_not_found": 422,
        "memory_invalid_expiry": 422,
        "erasure_subject_invalid": 422,
        "user_not_found": 404,
        # memory transfer (memory.transfer_format, memory.transfer_import): the file is refused whole
        "memory_import_invalid": 422,
        "memory_import_too_large": 413,
        "memory_import_format_unknown": 422,
        "memory_import_line_invalid": 422,
        "memory_import_chain_broken": 422,
        "memory_import_target_invalid": 422,
        # state
        "database_unavailable": 503,
        "database_error": 500,
        "settings_invalid": 500,
        "migration_failed": 500,
        "migration_edited": 500,
        "query_unknown": 500,
        "table_unknown": 500,
        "organization_not_found": 404,
        "organization_erasing": 409,
        "person_erasing": 409,
        "api_key_not_found": 404,
        "receipt_not_found": 404,
        "invalid_cursor": 422,
        "unknown_sort": 422,
        "invalid_filter": 422,
        "rate_limited": 429,
        # functions
        "service_not_ready": 503,
        "migrations_pending": 503,
        "events_undeliverable": 503,
        "overloaded": 503,
        "event_send_failed": 502,
        "source_not_failed": 409,
    }
)
"""The HTTP status of each stable error code the core can raise; a code not listed answers 400 for misuse."""


def http_status(code: str, *, default: int = 400) -> int:
    """The HTTP status for an error `code`; `default` for a code no package has registered here."""
    return CODE_STATUS.get(code, default)
