"""The context layer: what a run or a turn may know, built deterministically from structured sources.

The public names are re-exported here; helpers live in `_`-prefixed modules. This package must never call
a model, and a policy never carries a tenancy filter: the subject travels in the request.

The names are re-exported lazily (`state.lazy`): `import context` loads no module of the package until a
name is read, and then only the module that name comes from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from state.lazy import lazy_exports

if TYPE_CHECKING:
    from context.builder import ContextBuilder, DefaultContextBuilder
    from context.errors import (
        ContextError,
        ContextMisuseError,
        ContextSourceFailure,
        DuplicateSourceError,
        ForbiddenSourceOptionError,
        PolicyPublishError,
        PublishProblem,
        RequiredContextSourceError,
        SourceItemMismatchError,
        UnknownContextSourceError,
    )
    from context.models import (
        CLASS_ORDER,
        MAX_CONTEXT_ITEM_LIMIT,
        ContextBrief,
        ContextItem,
        ContextKind,
        ContextPolicy,
        ContextRequest,
        ContextSource,
        ContextSourceSpec,
        ContextSubject,
        ResourceRef,
        make_subject_key,
    )
    from context.options import (
        SOURCE_OPTIONS,
        ConversationOptions,
        DossierOptions,
        EmptyOptions,
        KnowledgeOptions,
        RunHistoryOptions,
        SourceOptions,
    )
    from context.packer import ContextPacker
    from context.policies import FRONT_DOOR, NAMED_POLICIES, OUTREACH_PLANNER
    from context.registry import ContextSourceRegistry, SchemaOnlySource
    from context.tokens import estimate_tokens

__all__ = [
    "CLASS_ORDER",
    "FRONT_DOOR",
    "MAX_CONTEXT_ITEM_LIMIT",
    "NAMED_POLICIES",
    "OUTREACH_PLANNER",
    "SOURCE_OPTIONS",
    "ContextBrief",
    "ContextBuilder",
    "ContextError",
    "ContextItem",
    "ContextKind",
    "ContextMisuseError",
    "ContextPacker",
    "ContextPolicy",
    "ContextRequest",
    "ContextSource",
    "ContextSourceFailure",
    "ContextSourceRegistry",
    "ContextSourceSpec",
    "ContextSubject",
    "ConversationOptions",
    "DefaultContextBuilder",
    "DossierOptions",
    "DuplicateSourceError",
    "EmptyOptions",
    "ForbiddenSourceOptionError",
    "KnowledgeOptions",
    "PolicyPublishError",
    "PublishProblem",
    "RequiredContextSourceError",
    "ResourceRef",
    "RunHistoryOptions",
    "SchemaOnlySource",
    "SourceItemMismatchError",
    "SourceOptions",
    "UnknownContextSourceError",
    "estimate_tokens",
    "make_subject_key",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
