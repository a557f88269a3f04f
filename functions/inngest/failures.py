"""What a failing Inngest function tells the Inngest server: the error's class and message, never a stack or a path.

The SDK sends every failure (a step's error, a function's error, an on-failure handler's) with a `stack`
field holding the Python traceback: source paths of this server, `site-packages`, lines of code. That text
lands in the Inngest dashboard and in every `inngest/function.failed` event, readable by whoever reads
those. `QuietFailures`, a middleware every function of the catalog runs under (`install_quiet_failures`),
rewrites each failure before it is sent: the stack is dropped (a project error's message already says what
went wrong and its code is in the logs), and an absolute path in the message (a socket folder, a data
folder, an object store's root) becomes `<path>`. Retry semantics are kept: a `NonRetriableError` stays
non-retriable, a `RetryAfterError` keeps its time, any other error stays retriable. The full traceback
still reaches this process's log where the function logs it. This module must never swallow an error.
"""

from __future__ import annotations

import re

import inngest

__all__ = ["QuietFailures", "install_quiet_failures", "quiet_error", "without_paths"]

_INSTALLED = "_ac_context_quiet_failures"
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~:/\\-])/(?:[^\s'\"/<>]+/)+[^\s'\"/<>),;]*")
"""An absolute POSIX path of two segments or more (a URL's path stays: its slash follows its host)."""


def without_paths(message: str) -> str:
    """`message` with every absolute file path replaced by `<path>`."""
    return _ABSOLUTE_PATH.sub("<path>", message)


def quiet_error(error: Exception) -> Exception:
    """`error` as the server may see it: no traceback, no chained error, no path in its message."""
    if isinstance(error, inngest.StepError):  # a memoized step failure: its stack came from the step's memo
        return inngest.StepError(without_paths(error.message), error.name, None)
    error.__traceback__ = None
    error.__cause__ = error.__context__ = None
    error.__suppress_context__ = True
    if hasattr(error, "include_stack"):  # the SDK's own errors (NonRetriableError, RetryAfterError, ...)
        error.include_stack = False
    message = str(error)
    if without_paths(message) != message and len(error.args) <= 1:
        error.args = (without_paths(message),)
    return error


class QuietFailures(inngest.Middleware):
    """Rewrites every failure a function answers with `quiet_error`, step by step and at the end."""

    async def transform_output(self, result: inngest.TransformOutputResult) -> None:
        """Drop the stack and the paths of the failure, if this call failed."""
        if result.error is not None:
            result.error = quiet_error(result.error)


def install_quiet_failures(client: inngest.Inngest) -> None:
    """Run every function of `client` under `QuietFailures` (once per client)."""
    if getattr(client, _INSTALLED, False):
        return
    client.add_middleware(QuietFailures)
    setattr(client, _INSTALLED, True)
