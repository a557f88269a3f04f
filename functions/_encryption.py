"""Encrypted step state: what the app hands the Inngest server is ciphertext, never a tenant's text.

The segment brief's memoized step result is the brief itself, and every function's output rides back to the
Inngest server too. With `AC_CONTEXT_STEP_ENCRYPTION_KEYS` set, Inngest's own encryption middleware
(`inngest-encryption`, pinned exactly: it is marked experimental upstream) encrypts each step output and
function output with libsodium's SecretBox before it leaves the process, and decrypts the memoized steps a
replay sends back, so replay still reuses them. Keys are comma-separated: the first encrypts, every key
decrypts, so a rotation prepends a new key and drops the old one once no run state holds it.

A function invoked by another app (`step.invoke` of `context-segment-brief` by the runtime) answers
ciphertext too; the caller decrypts it with the same middleware and key. This module must never log a key.
"""

from __future__ import annotations

from typing import Any

import inngest
from inngest_encryption import EncryptionMiddleware
from pydantic import SecretStr

from functions.errors import InngestConfigError

__all__ = ["MIN_KEY_LENGTH", "install_step_encryption", "parse_keys"]

MIN_KEY_LENGTH = 32
"""The shortest key accepted (characters); `python -c "import secrets; print(secrets.token_urlsafe(32))"`."""

_INSTALLED = "_ac_context_step_encryption"


def parse_keys(raw: SecretStr | str | None) -> list[str]:
    """The keys of `AC_CONTEXT_STEP_ENCRYPTION_KEYS`, newest first; `InngestConfigError` for a short key."""
    if raw is None:
        return []
    text = raw.get_secret_value() if isinstance(raw, SecretStr) else raw
    keys = [k.strip() for k in text.split(",") if k.strip()]
    short = [i for i, k in enumerate(keys) if len(k) < MIN_KEY_LENGTH]
    if short:
        raise InngestConfigError(
            f"AC_CONTEXT_STEP_ENCRYPTION_KEYS: key {short[0] + 1} is shorter than {MIN_KEY_LENGTH} characters"
        )
    return keys


def install_step_encryption(client: inngest.Inngest, keys: list[str]) -> bool:
    """Add the encryption middleware to `client` once; return whether step state is encrypted."""
    if not keys:
        return False
    if getattr(client, _INSTALLED, False):
        return True
    factory: Any = EncryptionMiddleware.factory(keys[0], fallback_decryption_keys=list(keys[1:]))
    client.add_middleware(factory)
    setattr(client, _INSTALLED, True)
    return True
