"""The errors of the memory package, one small tree with a stable machine-readable `code` on each class.

Misuse (input a tool refuses, a workflow that names a memory tool) is kept apart from a refusal of the
write itself and from a runtime failure. A tool caller maps `code`, never the message text::

    MemoryStoreError                      memory_error
    ├── MemoryMisuseError                 memory_misuse
    │   ├── InvalidToolInputError         invalid_input              (also ValueError)
    │   │   └── InvalidExpiryError        memory_invalid_expiry      (an expiry refused at its field path)
    │   ├── UnknownMemoryToolError        unknown_tool               (also LookupError)
    │   ├── WorkflowMemoryToolError       memory_tool_in_workflow    (also ValueError)
    │   ├── InvalidInvocationError        invalid_invocation         (also ValueError)
    │   └── InvalidErasureSubjectError    erasure_subject_invalid    (also ValueError; names its field)
    ├── MemoryRefusedError                memory_refused
    │   ├── AttributeNamespaceError       memory_attribute_namespace
    │   ├── UserScopeForTriggerError      memory_user_scope_for_trigger
    │   ├── TooManySubjectRefsError       memory_too_many_subject_refs
    │   ├── InvalidSubjectKeyError        memory_invalid_subject_key
    │   ├── MemorySubjectNotFoundError    memory_subject_not_found   (foreign, deleted or missing row)
    │   ├── DuplicateMemoryError          memory_duplicate
    │   ├── RunMemoryLimitError           memory_run_limit
    │   ├── MemoryNotFoundError           memory_not_found           (also LookupError)
    │   ├── MemoryNotCurrentError         memory_not_current
    │   ├── MemoryAlreadyForgottenError   memory_already_forgotten
    │   └── PrincipalMismatchError        memory_principal_mismatch
    ├── MemoryConflictError               memory_conflict
    └── UserNotFoundError                 user_not_found             (also LookupError; an erasure's user)

A message defaults to the class docstring (the shared root `state.errors.CodedError`). This module must
never import the rest of the package, so every other module can raise from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from state.errors import CodedError

__all__ = [
    "AttributeNamespaceError",
    "DuplicateMemoryError",
    "InvalidErasureSubjectError",
    "InvalidExpiryError",
    "InvalidInvocationError",
    "InvalidSubjectKeyError",
    "InvalidToolInputError",
    "MemoryAlreadyForgottenError",
    "MemoryConflictError",
    "MemoryMisuseError",
    "MemoryNotCurrentError",
    "MemoryNotFoundError",
    "MemoryRefusedError",
    "MemoryStoreError",
    "MemorySubjectNotFoundError",
    "PrincipalMismatchError",
    "RunMemoryLimitError",
    "TooManySubjectRefsError",
    "UnknownMemoryToolError",
    "UserNotFoundError",
    "UserScopeForTriggerError",
    "WorkflowMemoryToolError",
]


class MemoryStoreError(CodedError):
    """A memory error."""

    code = "memory_error"


class MemoryMisuseError(MemoryStoreError):
    """The memory layer was called in a way it refuses."""

    code = "memory_misuse"


class InvalidToolInputError(MemoryMisuseError, ValueError):
    """The tool arguments do not match the tool's strict input model."""

    code = "invalid_input"

    def __init__(self, tool: str, errors: Sequence[dict[str, Any]]) -> None:
        self.tool = tool
        self.errors: list[dict[str, Any]] = [dict(e) for e in errors]
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ())) or '<input>'}: {e.get('msg')}" for e in errors
        )
        super().__init__(f"{tool}: invalid input ({problems})")


class InvalidExpiryError(InvalidToolInputError):
    """memory.remember's expiry is refused: in the past, too far, both forms given, or forbidden here."""

    code = "memory_invalid_expiry"

    def __init__(self, field: str, message: str, *, kind: str) -> None:
        self.field = field
        super().__init__("memory.remember", [{"loc": (field,), "msg": message, "type": kind}])


class UnknownMemoryToolError(MemoryMisuseError, LookupError):
    """No memory tool has this name."""

    code = "unknown_tool"


class WorkflowMemoryToolError(MemoryMisuseError, ValueError):
    """Only an agent definition owns memory: a workflow or skill node cannot call a memory tool."""

    code = "memory_tool_in_workflow"

    def __init__(self, definition_kind: str, nodes: Sequence[tuple[int, str]]) -> None:
        self.definition_kind = definition_kind
        self.nodes: list[tuple[int, str]] = list(nodes)
        named = ", ".join(f"node {i} calls {name}" for i, name in self.nodes)
        super().__init__(
            f"a {definition_kind} definition cannot call a memory tool ({named}); only an agent owns memory"
        )


class InvalidInvocationError(MemoryMisuseError, ValueError):
    """The invocation names a run, definition or user that does not belong to its organization."""

    code = "invalid_invocation"


class MemoryRefusedError(MemoryStoreError):
    """The memory service refused the write; no row was written."""

    code = "memory_refused"


class AttributeNamespaceError(MemoryRefusedError):
    """A memory attribute must use the observation. or preference. namespace."""

    code = "memory_attribute_namespace"


class UserScopeForTriggerError(MemoryRefusedError):
    """A trigger has no user, so it can write organization memory only."""

    code = "memory_user_scope_for_trigger"


class TooManySubjectRefsError(MemoryRefusedError):
    """A memory names at most one subject ref."""

    code = "memory_too_many_subject_refs"


class InvalidSubjectKeyError(MemoryRefusedError):
    """The subject ref and attribute cannot form a subject key (a bad part, or a key over the size limit)."""

    code = "memory_invalid_subject_key"


class MemorySubjectNotFoundError(MemoryRefusedError):
    """The subject ref names no live row of the writer's organization (another's, a deleted one, or none)."""

    code = "memory_subject_not_found"


class DuplicateMemoryError(MemoryRefusedError):
    """The live memory under this subject key already holds this exact text; nothing changed."""

    code = "memory_duplicate"


class RunMemoryLimitError(MemoryRefusedError):
    """The run has reached its limit of memory.remember writes."""

    code = "memory_run_limit"


class MemoryNotFoundError(MemoryRefusedError, LookupError):
    """No memory with this id exists for this organization."""

    code = "memory_not_found"


class MemoryNotCurrentError(MemoryRefusedError):
    """The memory id is an older revision, not the current head of its chain."""

    code = "memory_not_current"


class MemoryAlreadyForgottenError(MemoryRefusedError):
    """The memory id is a tombstone: the memory is already forgotten."""

    code = "memory_already_forgotten"


class PrincipalMismatchError(MemoryRefusedError):
    """The invoking principal does not own this memory (another definition, or another person's memory)."""

    code = "memory_principal_mismatch"


class MemoryConflictError(MemoryStoreError):
    """The chain kept moving under this writer; it gave up after its retry budget."""

    code = "memory_conflict"


class InvalidErasureSubjectError(MemoryMisuseError, ValueError):
    """The subject of an erasure is not a person's ref `<kind>:<id>` (crm.person or intelligence.person)."""

    code = "erasure_subject_invalid"

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        """The path of the field that holds the subject (`subject`)."""
        self.problem = problem
        """What is wrong with it, never quoting the value."""
        super().__init__(f"{field}: {problem}")


class UserNotFoundError(MemoryStoreError, LookupError):
    """No user with this id belongs to this organization; nothing was erased."""

    code = "user_not_found"
