"""Durable memory: append-only revision chains in `agent.memories`, written through two tools only.

A model reaches memory through `memory.remember` and `memory.forget` (`MemoryTools`), which validate strict
input and call `MemoryService`; the sources read it through `memory.reads`; `memory.expiry` gives a revision
its expiry and sweeps expired chains closed. The repository is not exported:
nothing but the service writes, and this package must never hand a model a way around the tools.

The names are re-exported lazily (`state.lazy`): `import memory` loads no module of the package until a
name is read, and then only the module that name comes from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from state.lazy import lazy_exports

if TYPE_CHECKING:
    from memory._blank import BLANK_CHARACTERS, is_blank
    from memory.erasure import (
        PERSON_KINDS,
        ErasedBatch,
        erase_organization_memories,
        erase_user,
        parse_erasure_subject,
    )
    from memory.errors import (
        AttributeNamespaceError,
        DuplicateMemoryError,
        InvalidErasureSubjectError,
        InvalidExpiryError,
        InvalidInvocationError,
        InvalidSubjectKeyError,
        InvalidToolInputError,
        MemoryAlreadyForgottenError,
        MemoryConflictError,
        MemoryMisuseError,
        MemoryNotCurrentError,
        MemoryNotFoundError,
        MemoryRefusedError,
        MemoryStoreError,
        PrincipalMismatchError,
        RunMemoryLimitError,
        TooManySubjectRefsError,
        UnknownMemoryToolError,
        UserNotFoundError,
        UserScopeForTriggerError,
        WorkflowMemoryToolError,
    )
    from memory.expiry import DEFAULT_EXPIRY, ExpiryPolicy, resolve_expiry, sweep_expired
    from memory.models import (
        AgentMemory,
        CanonicalSubjectRef,
        LiveMemory,
        MemoryCandidate,
        MemoryScope,
        MemorySubjectKeyPart,
        MemorySubjectRef,
        ParsedRefs,
        RankedMemory,
        RelevanceQuery,
        ToolInvocation,
        parse_stored_refs,
    )
    from memory.reads import (
        DEFAULT_MEMORY_LIMIT,
        GuardedMemory,
        GuardReport,
        guard_subjects,
        read_live_memories,
        read_personal_memories,
        read_relevant_memories,
    )
    from memory.service import MemoryService
    from memory.tools import (
        DEFAULT_REMEMBER_LIMIT_PER_RUN,
        FORGET_TOOL,
        MEMORY_TOOL_NAMES,
        MEMORY_TOOLS,
        REMEMBER_TOOL,
        ForgetInput,
        MemoryTools,
        MemoryToolSpec,
        RememberInput,
        check_workflow_tool_nodes,
        tool_schemas,
    )
    from memory.vectors import EmbeddedTexts, MemoryEmbedder, embed_missing

__all__ = [
    "BLANK_CHARACTERS",
    "DEFAULT_EXPIRY",
    "DEFAULT_MEMORY_LIMIT",
    "DEFAULT_REMEMBER_LIMIT_PER_RUN",
    "FORGET_TOOL",
    "MEMORY_TOOLS",
    "MEMORY_TOOL_NAMES",
    "PERSON_KINDS",
    "REMEMBER_TOOL",
    "AgentMemory",
    "AttributeNamespaceError",
    "CanonicalSubjectRef",
    "DuplicateMemoryError",
    "EmbeddedTexts",
    "ErasedBatch",
    "ExpiryPolicy",
    "ForgetInput",
    "GuardReport",
    "GuardedMemory",
    "InvalidErasureSubjectError",
    "InvalidExpiryError",
    "InvalidInvocationError",
    "InvalidSubjectKeyError",
    "InvalidToolInputError",
    "LiveMemory",
    "MemoryAlreadyForgottenError",
    "MemoryCandidate",
    "MemoryConflictError",
    "MemoryEmbedder",
    "MemoryMisuseError",
    "MemoryNotCurrentError",
    "MemoryNotFoundError",
    "MemoryRefusedError",
    "MemoryScope",
    "MemoryService",
    "MemoryStoreError",
    "MemorySubjectKeyPart",
    "MemorySubjectRef",
    "MemoryToolSpec",
    "MemoryTools",
    "ParsedRefs",
    "PrincipalMismatchError",
    "RankedMemory",
    "RelevanceQuery",
    "RememberInput",
    "RunMemoryLimitError",
    "TooManySubjectRefsError",
    "ToolInvocation",
    "UnknownMemoryToolError",
    "UserNotFoundError",
    "UserScopeForTriggerError",
    "WorkflowMemoryToolError",
    "check_workflow_tool_nodes",
    "embed_missing",
    "erase_organization_memories",
    "erase_user",
    "guard_subjects",
    "is_blank",
    "parse_erasure_subject",
    "parse_stored_refs",
    "read_live_memories",
    "read_personal_memories",
    "read_relevant_memories",
    "resolve_expiry",
    "sweep_expired",
    "tool_schemas",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
