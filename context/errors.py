"""The errors of the context layer, one small tree with a stable machine-readable code on each class.

Misuse (a policy or a source declaration the layer refuses) is kept apart from runtime failure (a source
that did not answer). An HTTP or Inngest caller maps `code`, never the message text::

    ContextError                           context_error
    ├── ContextMisuseError                 context_misuse
    │   ├── PolicyPublishError             policy_invalid            (also ValueError)
    │   ├── DuplicateSourceError           duplicate_context_source  (also ValueError)
    │   ├── ForbiddenSourceOptionError     forbidden_source_option   (also ValueError)
    │   └── UnknownContextSourceError      unknown_context_source    (also LookupError)
    └── ContextSourceFailure               context_source_failed
        ├── RequiredContextSourceError     required_context_source_failed
        └── SourceItemMismatchError        source_item_mismatch

A message defaults to the class docstring (the shared root `state.errors.CodedError`). This module must
never import anything from the rest of the layer, so every other module can raise from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from state.errors import CodedError

__all__ = [
    "ContextError",
    "ContextMisuseError",
    "ContextSourceFailure",
    "DuplicateSourceError",
    "ForbiddenSourceOptionError",
    "PolicyPublishError",
    "PublishProblem",
    "RequiredContextSourceError",
    "SourceItemMismatchError",
    "UnknownContextSourceError",
]


class ContextError(CodedError):
    """A context layer error."""

    code = "context_error"


class ContextMisuseError(ContextError):
    """A policy or a source declaration the context layer refuses."""

    code = "context_misuse"


class PublishProblem(TypedDict):
    """One problem of a policy publish: the path of the offending value and what is wrong with it."""

    loc: tuple[str | int, ...]
    msg: str
    type: str


class PolicyPublishError(ContextMisuseError, ValueError):
    """The context policy fails the publish check."""

    code = "policy_invalid"

    def __init__(self, errors: Sequence[PublishProblem]) -> None:
        self.errors: list[PublishProblem] = list(errors)
        lines = [f"{'.'.join(str(p) for p in e['loc']) or '<policy>'}: {e['msg']}" for e in self.errors]
        count = len(self.errors)
        super().__init__(f"context policy fails the publish check ({count} problem(s)): " + "; ".join(lines))

    def __reduce__(self) -> tuple[type[PolicyPublishError], tuple[list[PublishProblem]]]:
        return (type(self), (self.errors,))


class DuplicateSourceError(ContextMisuseError, ValueError):
    """Two context sources declare one name."""

    code = "duplicate_context_source"


class ForbiddenSourceOptionError(ContextMisuseError, ValueError):
    """A source options schema declares a tenancy or row filter, which no policy may carry."""

    code = "forbidden_source_option"


class UnknownContextSourceError(ContextMisuseError, LookupError):
    """No context source is registered under this name."""

    code = "unknown_context_source"


class ContextSourceFailure(ContextError):
    """A context source did not answer."""

    code = "context_source_failed"


class RequiredContextSourceError(ContextSourceFailure):
    """One or more required context sources failed, so no brief was made."""

    code = "required_context_source_failed"

    def __init__(self, sources: Sequence[str]) -> None:
        self.sources: list[str] = list(sources)
        super().__init__("required context source(s) failed: " + ", ".join(self.sources))

    def __reduce__(self) -> tuple[type[RequiredContextSourceError], tuple[list[str]]]:
        return (type(self), (self.sources,))


class SourceItemMismatchError(ContextSourceFailure):
    """A context source returned an item that names another source, or something that is not an item."""

    code = "source_item_mismatch"
