"""The one error path of `ac-context`: a project error is one line and exit 1, a usage error exit 2.

(Exit 3 is not an error: a `--send-event` whose events wait in the outbox, `functions.cli._events`.)

    error: <code>: <message> — <hint, where one helps>

A project error is any error of the core or of this layer that carries a stable `code` (state, context,
knowledge, memory, functions, and `CliError` for what only the CLI can get wrong, such as a policy file
that is not JSON). Usage errors (a missing option, a value that is not a UUID, a file that does not
exist) are click's (typer's): the usage line, the problem, exit 2. `--debug` (anywhere on the command line) or
`AC_CONTEXT_DEBUG=1` shows the traceback of a project error instead; an unexpected exception always shows
its traceback, without local variables (they can hold keys and document text).

This module must never swallow an unexpected exception or print a message it did not get from the error.
"""

from __future__ import annotations

import os
import re
import sys
from contextvars import ContextVar
from typing import Any
from uuid import UUID

import typer
from typer.core import TyperGroup

from context.errors import ContextError
from functions.errors import FunctionsError
from knowledge.errors import KnowledgeError
from memory.errors import MemoryStoreError
from state.errors import StateError

__all__ = [
    "DEBUG_FLAG",
    "DIRECT_FLAG",
    "ORGANIZATION",
    "PROJECT_ERRORS",
    "CliError",
    "CliGroup",
    "debug_requested",
    "error_line",
    "send_problem",
]

DEBUG_FLAG = "--debug"
DIRECT_FLAG = "--direct"
"""Read the database here even when a service runs (`functions.cli._service`)."""
ORGANIZATION: ContextVar[UUID | None] = ContextVar("ac_context_organization", default=None)
"""The organization the running command's `--org` named (`open_cli_services` checks it exists)."""
_DEBUG_KEY = "ac_context.debug"


class CliError(Exception):
    """A mistake only the command line can make (a policy file that is not JSON, a missing organization flag)."""

    def __init__(self, code: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.hint = hint


PROJECT_ERRORS: tuple[type[Exception], ...] = (
    StateError,
    ContextError,
    KnowledgeError,
    MemoryStoreError,
    FunctionsError,
    CliError,
)
"""Errors with a stable code: one line, exit 1."""

HINTS: dict[str, str] = {
    "platform_source_forbidden": "add --platform to delete a platform source (the operator's right)",
    "organization_not_found": "create one with `ac-context org create NAME`, or list them with `ac-context org list`",
    "settings_invalid": "fix or unset the variable it names (every setting is in state/settings.py)",
    "embedding_model_unknown": "choose one of the models it lists",
    "knowledge_switch_conflict": "see it with `ac-context switch-model --status`, stop it with `--cancel`",
    "knowledge_switch_not_ready": "see what is missing with `ac-context switch-model --status`",
    "database_unavailable": "check DATABASE_URL, or unset it to use the embedded server (`ac-context db status`)",
    "policy_invalid": "`ac-context policy validate FILE` lists every problem with its path",
    "memory_not_current": "forget the current revision (`ac-context memory list`)",
    "knowledge_source_not_found": "list the sources with `ac-context sources list --org ID` (or --platform)",
    "inngest_config_invalid": "set INNGEST_DEV=1 for local development, or INNGEST_SIGNING_KEY in production",
    "api_key_not_found": "list the keys with `ac-context keys list`",
    "organization_erasing": "write again once its erasure completes (`ac-context receipts list --org ID`)",
}
"""A next step for the codes where one helps."""

_BLANK = re.compile(r"\s+")


def _message(exc: Exception) -> str:
    text = str(getattr(exc, "message", None) or exc) or type(exc).__name__
    return _BLANK.sub(" ", text).strip()


def error_line(exc: Exception) -> str:
    """`error: <code>: <message>`, and ` — <hint>` when one helps; always one line."""
    code = str(getattr(exc, "code", "error"))
    hint = getattr(exc, "hint", None) or HINTS.get(code)
    return f"error: {code}: {_message(exc)}" + (f" — {hint}" if hint else "")


def debug_requested(ctx: typer.Context | None = None) -> bool:
    """Whether `--debug` was given or `AC_CONTEXT_DEBUG` is set to a true value."""
    if os.environ.get("AC_CONTEXT_DEBUG", "").strip().lower() in {"1", "true", "yes", "on"}:
        return True
    return bool(ctx is not None and ctx.meta.get(_DEBUG_KEY))


def set_debug(ctx: typer.Context, value: bool) -> None:
    """Record `--debug` for the error path of this invocation."""
    ctx.meta[_DEBUG_KEY] = value


class CliGroup(TyperGroup):
    """The root command group: it runs a command and turns a project error into one line and exit 1."""

    def main(self, args: Any = None, *a: Any, **kw: Any) -> Any:
        """Accept `--debug` and `--direct` anywhere on the command line, not only before the subcommand."""
        args = list(sys.argv[1:] if args is None else args)
        for flag in (DIRECT_FLAG, DEBUG_FLAG):
            if flag in args:
                args = [flag, *(x for x in args if x != flag)]
        return super().main(args, *a, **kw)

    def invoke(self, ctx: Any) -> Any:  # typer's own click Context
        """Run the command; a project error prints `error_line` to stderr and exits 1 (unless debugging)."""
        token = ORGANIZATION.set(None)
        try:
            return super().invoke(ctx)
        except PROJECT_ERRORS as exc:
            if debug_requested(ctx):
                raise
            typer.echo(error_line(exc), err=True)
            raise typer.Exit(1) from None
        finally:
            ORGANIZATION.reset(token)


def send_problem(exc: BaseException) -> str:
    """What went wrong sending an event, in one short line (the traceback is for `--debug`)."""
    text = str(exc).strip().splitlines()
    detail = text[0][:200] if text else ""
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
