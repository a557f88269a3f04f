"""The durable worker: the Inngest functions, the FastAPI service and the `ac-context` CLI.

Everything here is thin: it parses, calls the core (`context`, `knowledge`, `memory`, `state`) and returns
small JSON. Nothing imports `functions`; this package must never hold a business rule of the core.
"""

from __future__ import annotations

from functions._catalog import build_functions
from functions._services import Services, ServiceSlot, close_services, open_services
from functions._wire import RequestIn, SegmentBriefInput, SegmentBriefOutput, SubjectIn
from functions.app import create_app
from functions.client import APP_ID, create_client, is_dev_mode
from functions.errors import (
    ApiError,
    EventSendError,
    FunctionsError,
    InngestConfigError,
    ServiceNotReadyError,
    http_status,
)

__all__ = [
    "APP_ID",
    "ApiError",
    "EventSendError",
    "FunctionsError",
    "InngestConfigError",
    "RequestIn",
    "SegmentBriefInput",
    "SegmentBriefOutput",
    "ServiceNotReadyError",
    "ServiceSlot",
    "Services",
    "SubjectIn",
    "build_functions",
    "close_services",
    "create_app",
    "create_client",
    "http_status",
    "is_dev_mode",
    "open_services",
]
