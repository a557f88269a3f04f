"""The construction-time guard that keeps tenancy and row filters out of every source options schema.

A policy is authored by an admin; if a source read its tenancy from the spec, an author could widen it.
So no options schema may declare a field that could name an organization, a user, a row or a predicate.
A plain `bool` switch may carry a tenancy word (`include_organization`, `include_user`): it can only turn
on a read the source still bounds by `request.subject`, and it cannot name anyone.

This module must never be consulted at run time; the check costs nothing once the registry is built.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

__all__ = ["forbidden_option_fields"]

_FILTER_SUBSTRINGS = ("filter", "where", "predicate", "query", "sql")
"""Never allowed in an option name, whatever its type."""
_FILTER_TOKENS = frozenset({"id", "ids", "uuid", "uuids", "row", "rows", "key", "keys"})
"""Never allowed as a word of an option name: an option never names a row."""
_TENANCY_SUBSTRINGS = ("organization", "organisation", "tenant", "user", "principal", "member")
"""Allowed only in the name of a plain bool switch."""
_TENANCY_TOKENS = frozenset({"org", "orgs", "owner", "owners", "account", "accounts", "subject", "actor"})
"""Allowed only as a word of the name of a plain bool switch."""

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def _words(name: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(name)}


def _reason(name: str, is_bool: bool) -> str | None:
    lowered = name.lower()
    words = _words(name)
    for fragment in _FILTER_SUBSTRINGS:
        if fragment in lowered:
            return f"names a row filter ({fragment!r})"
    hit = words & _FILTER_TOKENS
    if hit:
        return f"names a row ({sorted(hit)[0]!r})"
    if is_bool:
        return None
    for fragment in _TENANCY_SUBSTRINGS:
        if fragment in lowered:
            return f"names a tenancy scope ({fragment!r}) and is not a plain bool switch"
    hit = words & _TENANCY_TOKENS
    if hit:
        return f"names a tenancy scope ({sorted(hit)[0]!r}) and is not a plain bool switch"
    return None


def forbidden_option_fields(schema: type[BaseModel]) -> list[tuple[str, str]]:
    """The `(field name, reason)` pairs of `schema` that declare a tenancy or row filter."""
    found: list[tuple[str, str]] = []
    for field_name, info in schema.model_fields.items():
        is_bool = info.annotation is bool
        names = [field_name]
        for alias in (info.alias, info.validation_alias, info.serialization_alias):
            if isinstance(alias, str) and alias not in names:
                names.append(alias)
        for name in names:
            reason = _reason(name, is_bool)
            if reason is not None:
                found.append((name, reason))
                break
    return found
