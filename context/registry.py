"""The context source registry: source name to implementation, and the publish check of a policy.

The registry accepts each source name once and refuses, at construction, a source whose options schema
declares a tenancy or row filter. `validate(policy)` is the publish check: it collects every problem of a
policy with its path and raises one `PolicyPublishError`. The outreach classes (`outreach`,
`outreach_thread`) belong to one policy, `context.policies.OUTREACH_PLANNER`: any other policy that names
either is refused at that source's path (`outreach_outside_planner`). The planner's policy is recognised by
value (equal to `OUTREACH_PLANNER`), because it reaches the check as data (a run's frozen policy in a
segment event, a JSON body) and is never the module's object; a copy that changes anything is another
policy. `for_publishing()` builds a registry from the
declared schemas alone, so a policy can be checked where no database exists.

A policy larger than `MAX_POLICY_SOURCES` sources, or whose options of one source are larger than
`MAX_OPTIONS_BYTES` as JSON, is refused before it is parsed, so a hostile policy cannot hold the loop.

It must never read a database or a source at validation time, and it never coerces an option.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from context._guard import forbidden_option_fields
from context.errors import (
    ContextSourceFailure,
    DuplicateSourceError,
    ForbiddenSourceOptionError,
    PolicyPublishError,
    PublishProblem,
    UnknownContextSourceError,
)
from context.models import ContextItem, ContextPolicy, ContextRequest, ContextSource, ContextSourceSpec
from context.options import SOURCE_OPTIONS
from context.policies import OUTREACH_PLANNER

__all__ = [
    "MAX_OPTIONS_BYTES",
    "MAX_POLICY_SOURCES",
    "ContextSourceRegistry",
    "PolicyPublishError",
    "SchemaOnlySource",
    "UnknownContextSourceError",
]

MAX_POLICY_SOURCES = 64
"""The most sources one policy may list (the platform registers about ten)."""
MAX_OPTIONS_BYTES = 16 * 1024
"""The largest `options` of one source, as compact JSON."""

_NEVER_REQUIRED = frozenset({"dossier"})
"""Sources no policy may mark required (the spec: a cold dossier build is reported, never fatal)."""
_PLANNER_ONLY = frozenset({"outreach", "outreach_thread"})
"""Sources only the Outreach planner policy may name (the spec: only its brief holds the outreach classes)."""


@dataclass(frozen=True)
class SchemaOnlySource:
    """A source that declares its options schema and cannot read: the publish check needs nothing more."""

    name: str
    options_schema: type[BaseModel]

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        """Fail: a schema-only source has no reader, so a build that reaches it reports it unavailable."""
        raise ContextSourceFailure(f"context source {self.name!r} is declared for publishing only")


class ContextSourceRegistry:
    """Source name to implementation; refuses a duplicate name and a schema that declares a filter."""

    def __init__(self, sources: Iterable[ContextSource]) -> None:
        self._sources: dict[str, ContextSource] = {}
        for source in sources:
            if source.name in self._sources:
                raise DuplicateSourceError(f"two context sources declare the name {source.name!r}")
            forbidden = forbidden_option_fields(source.options_schema)
            if forbidden:
                detail = "; ".join(f"{name!r} {why}" for name, why in forbidden)
                raise ForbiddenSourceOptionError(
                    f"context source {source.name!r} declares a tenancy or row filter option: {detail}"
                )
            self._sources[source.name] = source

    @classmethod
    def for_publishing(cls, schemas: Mapping[str, type[BaseModel]] = SOURCE_OPTIONS) -> ContextSourceRegistry:
        """A registry of schema-only sources, enough for `validate` with no database."""
        return cls(SchemaOnlySource(name, schema) for name, schema in schemas.items())

    def get(self, name: str) -> ContextSource:
        """The source registered under `name`; raises UnknownContextSourceError when there is none."""
        try:
            return self._sources[name]
        except KeyError:
            raise UnknownContextSourceError(f"no context source is registered as {name!r}") from None

    def find(self, name: str) -> ContextSource | None:
        """The source registered under `name`, or None."""
        return self._sources.get(name)

    @property
    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._sources)

    def __contains__(self, name: object) -> bool:
        return name in self._sources

    def __iter__(self) -> Iterator[ContextSource]:
        return iter(self._sources.values())

    def __len__(self) -> int:
        return len(self._sources)

    def problems(self, policy: ContextPolicy) -> list[PublishProblem]:
        """Every publish problem of `policy`, each with its path, in policy order."""
        if len(policy.sources) > MAX_POLICY_SOURCES:
            return [_problem(("sources",), "too_long", f"a policy lists at most {MAX_POLICY_SOURCES} sources")]
        found: list[PublishProblem] = []
        first_index: dict[str, int] = {}
        enabled_names: list[str] = []
        planner = policy == OUTREACH_PLANNER
        for index, spec in enumerate(policy.sources):
            at: tuple[str | int, ...] = ("sources", index)
            if spec.name in first_index:
                found.append(_problem((*at, "name"), "duplicate_source", _twice(spec.name, first_index)))
            else:
                first_index[spec.name] = index
            source = self._sources.get(spec.name)
            if source is None:
                found.append(_problem((*at, "name"), "unknown_source", f"no context source is named {spec.name!r}"))
            else:
                found.extend(_option_problems(source.options_schema, spec, at))
            if spec.name in _PLANNER_ONLY and not planner:
                msg = f"only the Outreach planner policy may name {spec.name!r}; this policy is not it"
                found.append(_problem((*at, "name"), "outreach_outside_planner", msg))
            if spec.required and spec.name in _NEVER_REQUIRED:
                found.append(_problem((*at, "required"), "never_required", f"no policy marks {spec.name!r} required"))
            if spec.enabled:
                enabled_names.append(spec.name)
                if spec.token_budget == 0:
                    msg = f"enabled source {spec.name!r} holds a zero token_budget; disable it or give it one"
                    found.append(_problem((*at, "token_budget"), "zero_source_budget", msg))
        if enabled_names and policy.total_token_budget == 0:
            msg = "a zero total budget cannot hold the enabled source(s) " + ", ".join(map(repr, enabled_names))
            found.append(_problem(("total_token_budget",), "zero_total_budget", msg))
        return found

    def validate(self, policy: ContextPolicy) -> ContextPolicy:
        """The publish check: return `policy`, or raise PolicyPublishError listing every problem."""
        found = self.problems(policy)
        if found:
            raise PolicyPublishError(found)
        return policy

    def publish(self, data: object) -> ContextPolicy:
        """Parse a policy payload strictly, then run the publish check; raise one PolicyPublishError."""
        if isinstance(data, ContextPolicy):
            return self.validate(data)
        oversized = _size_problems(data)
        if oversized:
            raise PolicyPublishError(oversized)
        try:
            policy = ContextPolicy.model_validate(data)
        except ValidationError as exc:
            raise PolicyPublishError([_problem(tuple(e["loc"]), e["type"], e["msg"]) for e in exc.errors()]) from exc
        return self.validate(policy)


def _size_problems(data: object) -> list[PublishProblem]:
    """The size cap, checked on the raw payload before anything parses it."""
    if not isinstance(data, dict):
        return []
    sources: Any = data.get("sources")
    if not isinstance(sources, list):
        return []
    if len(sources) > MAX_POLICY_SOURCES:
        return [_problem(("sources",), "too_long", f"a policy lists at most {MAX_POLICY_SOURCES} sources")]
    found: list[PublishProblem] = []
    for i, source in enumerate(sources):
        options = source.get("options") if isinstance(source, dict) else None
        if options is None:
            continue
        try:
            size = len(json.dumps(options, separators=(",", ":")))
        except (TypeError, ValueError, RecursionError):
            found.append(_problem(("sources", i, "options"), "options_invalid", "options must be plain JSON"))
            continue
        if size > MAX_OPTIONS_BYTES:
            found.append(
                _problem(("sources", i, "options"), "too_long", f"options are at most {MAX_OPTIONS_BYTES} bytes")
            )
    return found


def _problem(loc: tuple[str | int, ...], kind: str, msg: str) -> PublishProblem:
    return PublishProblem(loc=loc, msg=msg, type=kind)


def _twice(name: str, first_index: Mapping[str, int]) -> str:
    return f"the policy names {name!r} twice (first at sources.{first_index[name]})"


def _option_problems(
    schema: type[BaseModel], spec: ContextSourceSpec, at: tuple[str | int, ...]
) -> list[PublishProblem]:
    declared = set(schema.model_fields)
    found: list[PublishProblem] = [
        _problem(
            (*at, "options", key),
            "undeclared_option",
            f"source {spec.name!r} declares no option {key!r}",
        )
        for key in spec.options
        if key not in declared
    ]
    try:
        schema.model_validate(spec.options, strict=True)
    except ValidationError as exc:
        for err in exc.errors():
            if err["type"] == "extra_forbidden":
                continue  # already reported as an undeclared option
            found.append(_problem((*at, "options", *err["loc"]), err["type"], err["msg"]))
    return found
