"""The freshness of an Inngest request signature: the check the SDK (0.5.19) does not make.

The Inngest server signs each request with `X-Inngest-Signature: t=<unix seconds>&s=<hmac>`, where the HMAC
covers the body and `t`. The SDK verifies the HMAC but never compares `t` with the clock, and accepts a header
with no `t` at all, so a captured request could be replayed forever. `signature_problem` answers why a
header is not fresh (no `t`, a `t` that is not a number, a `t` further than the window from now), or None.
The HMAC itself stays the SDK's job; this module never reads a body or a key.
"""

from __future__ import annotations

import urllib.parse

__all__ = ["SIGNATURE_HEADER", "signature_problem"]

SIGNATURE_HEADER = "x-inngest-signature"
"""The header the Inngest server signs its requests with (lower case, as ASGI gives headers)."""


def signature_problem(header: str | None, *, now: float, max_age_s: float) -> str | None:
    """Why `header` is not a fresh signature (a short reason without secrets), or None when it is."""
    if not header:
        return "the request is not signed"
    parsed = urllib.parse.parse_qs(header, keep_blank_values=True)
    if not parsed.get("s") or not parsed["s"][0]:
        return "the signature has no s="
    stamps = parsed.get("t")
    if not stamps or not stamps[0]:
        return "the signature has no timestamp (t=)"
    if len(stamps) > 1 or not stamps[0].isascii() or not stamps[0].isdigit() or len(stamps[0]) > 12:
        return "the signature timestamp is malformed"
    skew = float(int(stamps[0])) - now
    if skew > max_age_s:
        return f"the signature is from the future ({int(skew)} s ahead of this server's clock)"
    if -skew > max_age_s:
        return f"the signature is too old ({int(-skew)} s, the window is {int(max_age_s)} s)"
    return None
