"""What a console error page tells the person to do next, by the refusal's status and code.

Each refusal page says what happened (the error's own message) and, from here, what to do about it in one
sentence, with the code beside it for a report. This module must never echo text from a request.
"""

from __future__ import annotations

__all__ = ["HEADINGS", "what_to_do"]

HEADINGS = {
    400: "The request was not valid",
    401: "Not signed in",
    403: "Not allowed",
    404: "Not found",
    409: "Something changed meanwhile",
    413: "Too large",
    422: "The form was not valid",
    429: "Too many requests",
    500: "The console failed",
    503: "The service is unavailable",
}
"""The page's heading per status."""

_BY_CODE = {
    "csrf_invalid": "Reload the page and send the form again: it expired or came from another page.",
    "operator_scope_required": "Sign in with the operator token to use this page; an organization key sees its "
    "own organization only.",
    "policy_forbidden": "Build with the front_door policy, or sign in as the operator to use another policy.",
    "database_unavailable": "Retry in a moment; if it lasts, check that the database is running (/readyz says).",
}
_BY_STATUS = {
    400: "Check the address or the form and send it again.",
    401: "Sign in again with a valid key or the operator token.",
    403: "Sign in with a key that may do this, or ask an operator.",
    404: "It may have been deleted, or the address is wrong: go back to the list and pick it again.",
    409: "Reload the page to see the current state, then try again.",
    413: "Send a smaller file.",
    422: "Correct the fields named above and send the form again.",
    429: "Wait a minute, then try again.",
    503: "Retry in a moment: the service is starting or busy.",
}


def what_to_do(status: int, code: str) -> str:
    """One sentence telling the person what to do about a refusal of `status` with `code`."""
    if code in _BY_CODE:
        return _BY_CODE[code]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return "Retry; if it fails again, the service's log names the failure."
    return "Go back and try again."
