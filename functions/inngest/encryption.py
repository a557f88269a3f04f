"""Encrypted step state: what the app hands the Inngest server is ciphertext, never a tenant's text.

The segment brief's memoized step result is the brief itself, and every function's output rides back to the
Inngest server too. With `AC_CONTEXT_STEP_ENCRYPTION_KEYS` set, Inngest's own encryption middleware
(`inngest-encryption`, pinned exactly: it is marked experimental upstream) encrypts each step output and
function output with libsodium's SecretBox before it leaves the process, and decrypts the memoized steps a
replay sends back, so replay still reuses them. Keys are comma-separated: the first encrypts, every key
decrypts, so a rotation prepends a new key and drops the old one once no run state holds it. A key is text
the middleware hashes to SecretBox's 32 bytes: at least 32 printable ASCII characters without whitespace
(`secrets.token_urlsafe(32)`); `parse_keys` refuses anything else in one line naming the key's position.

A memo that no key decrypts does not fail the run where it can be rebuilt: for the functions in
`REBUILDS_UNDECRYPTABLE` (the segment brief) the memo is replaced by the `UNDECRYPTABLE` marker, and the
function builds it again (`undecryptable`). For every other function, and for event data no key decrypts,
the run fails at once (`NonRetriableError`, no retry can help) with a message that names the setting and
holds no data. A function invoked by another app (`step.invoke` of `context-segment-brief` by the runtime)
answers ciphertext too; the caller decrypts it with the same middleware and key. This module must never
log a key or put one, or a decrypted value, into an error.
"""

from __future__ import annotations

from typing import Any

import inngest
from inngest_encryption import EncryptionMiddleware
from pydantic import SecretStr

from functions.errors import InngestConfigError

__all__ = [
    "MIN_KEY_LENGTH",
    "REBUILDS_UNDECRYPTABLE",
    "UNDECRYPTABLE",
    "DegradingEncryption",
    "StepKeyError",
    "install_step_encryption",
    "parse_keys",
    "undecryptable",
]

MIN_KEY_LENGTH = 32
"""The shortest key accepted (characters); `python -c "import secrets; print(secrets.token_urlsafe(32))"`."""
SETTING = "AC_CONTEXT_STEP_ENCRYPTION_KEYS"
_MARK = "__ac_context_undecryptable__"
UNDECRYPTABLE: dict[str, Any] = {_MARK: True}
"""What a memo no key decrypts becomes, for a function that rebuilds it (never a real step output)."""
REBUILDS_UNDECRYPTABLE = frozenset({"context-segment-brief"})
"""The functions whose code checks `undecryptable(memo)` and builds the step again."""

_INSTALLED = "_ac_context_step_encryption"
_CIPHERTEXT_MARK = "__ENCRYPTED__"


class StepKeyError(InngestConfigError):
    """A key of `AC_CONTEXT_STEP_ENCRYPTION_KEYS` is not one the encryption can use."""

    hint = 'generate a key with `python -c "import secrets; print(secrets.token_urlsafe(32))"`'


def _key_problem(key: str) -> str | None:
    if not key.isascii() or not key.isprintable() or any(c.isspace() for c in key):
        return "holds whitespace or a character that is not printable ASCII"
    if len(key) < MIN_KEY_LENGTH:
        return f"is shorter than {MIN_KEY_LENGTH} characters"
    return None


def parse_keys(raw: SecretStr | str | None) -> list[str]:
    """The keys of `AC_CONTEXT_STEP_ENCRYPTION_KEYS`, newest first; `StepKeyError` (one line) for a bad key."""
    if raw is None:
        return []
    text = raw.get_secret_value() if isinstance(raw, SecretStr) else raw
    keys = [k.strip() for k in text.split(",") if k.strip()]
    for position, key in enumerate(keys, start=1):
        problem = _key_problem(key)
        if problem is not None:
            raise StepKeyError(f"{SETTING}: key {position} {problem}")
    return keys


def undecryptable(memo: object) -> bool:
    """Whether a memoized step output is one no configured key could decrypt (or still ciphertext)."""
    if not isinstance(memo, dict):
        return False
    return memo.get(_MARK) is True or memo.get(_CIPHERTEXT_MARK) is True


class DegradingEncryption(EncryptionMiddleware):
    """Inngest's encryption middleware, where a memo that no key decrypts is rebuilt or fails in one line."""

    def transform_input(
        self,
        ctx: inngest.Context | inngest.ContextSync,
        function: inngest.Function[Any],
        steps: inngest.StepMemos,
    ) -> None:
        """Decrypt the memos and the event data, marking what no key decrypts (see the module docstring)."""
        rebuilds = function.local_id in REBUILDS_UNDECRYPTABLE
        for step in steps.values():
            try:
                step.data = self._decrypt(step.data)
            except Exception:  # the upstream raises a bare Exception; its message and cause hold nothing useful
                if not rebuilds:
                    raise inngest.NonRetriableError(
                        f"a memoized step of this run was encrypted with a key that is not in {SETTING}; "
                        "put the key back, or rerun the run (a rerun executes every step again)"
                    ) from None
                step.data = dict(UNDECRYPTABLE)
        try:
            ctx.event.data = self._decrypt_event_data(ctx.event.data)
            for event in ctx.events:
                event.data = self._decrypt_event_data(event.data)
        except Exception:
            raise inngest.NonRetriableError(
                f"the event's encrypted data was encrypted with a key that is not in {SETTING}"
            ) from None


def install_step_encryption(client: inngest.Inngest, keys: list[str]) -> bool:
    """Add the encryption middleware to `client` once; return whether step state is encrypted."""
    if not keys:
        return False
    if getattr(client, _INSTALLED, False):
        return True
    factory: Any = DegradingEncryption.factory(keys[0], fallback_decryption_keys=list(keys[1:]))
    client.add_middleware(factory)
    setattr(client, _INSTALLED, True)
    return True
