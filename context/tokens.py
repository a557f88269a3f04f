"""The token estimate of a brief: `estimate_tokens`, one token per four UTF-8 bytes, rounded up.

The function lives in `state.tokens` so the knowledge chunker can count with the very same estimate
(a chunk size is a brief budget) without importing the context package; this module is its fixed name.
"""

from __future__ import annotations

from state.tokens import estimate_tokens

__all__ = ["estimate_tokens"]
