"""The one signature of an Inngest request: its shape, its count and its freshness, on the headers alone.

The Inngest server signs each request with one header, `X-Inngest-Signature: t=<unix seconds>&s=<hmac>`
(written `fmt.Sprintf("t=%d&s=%s", ts, hex)`: a positive decimal and 64 lowercase hex digits), the HMAC
covering the body and `t`. The SDK (0.5.19) reads that header from `dict(request.headers.items())`, so of
repeated headers it verifies the LAST one, lower-casing names itself; it parses the value with `parse_qs`
(percent and `+` decoded, blank values dropped, the first `t` and the first `s` kept, other keys
ignored), turns `t` into a number with `int()` (which takes a sign, spaces, underscores and non-ASCII
digits, and prints them back as plain digits, so the HMAC still matches), and never compares `t` with the
clock. A check that read the header any other way could be told one value while the SDK verifies another.

So `signature_refusal` accepts a request only when every header that claims to be the signature (any
casing, `_` for `-`) is one header, its value is exactly the server's shape, ASCII with nothing around
it, and its `t` is within the window of this server's clock; GET, POST and PUT must carry it, and any
other method must carry none. Then the value the freshness check read is the only value the SDK can
read. The HMAC itself stays the SDK's job; this module never reads a body or a key, and never puts a
header value into its answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["SIGNATURE_HEADER", "SIGNED_METHODS", "signature_problem", "signature_refusal"]

SIGNATURE_HEADER = "x-inngest-signature"
"""The header the Inngest server signs its requests with (lower case, as ASGI gives headers)."""
SIGNED_METHODS = frozenset({"GET", "POST", "PUT"})
"""The methods the Inngest endpoint serves: each needs one signature in production (GET is the inspection,
POST a step, PUT a sync). Any other method that carries a signature header is refused."""

_SHAPE = re.compile(r"t=(?P<t>[1-9][0-9]{0,11})&s=(?P<s>[0-9a-f]{64})")
_FOLDED = SIGNATURE_HEADER.encode("ascii")
_PAIR_KEYS = ("t", "s")


def _claims_signature(name: bytes) -> bool:
    """Whether a header name is the signature header under any spelling a server or a proxy may fold."""
    return name.strip().lower().replace(b"_", b"-") == _FOLDED


def _shape_problem(value: str) -> str:
    """Why a value that is not `t=<digits>&s=<64 hex>` is refused (the first rule it breaks)."""
    if not value.isascii() or not value.isprintable() or any(c.isspace() for c in value):
        return "the signature holds whitespace or characters that are not printable ASCII"
    if "%" in value or "+" in value:
        return "the signature is percent- or plus-encoded"
    keys = [pair.partition("=")[0] for pair in value.split("&")]
    if "t" not in keys:
        return "the signature has no timestamp (t=)"
    if "s" not in keys:
        return "the signature has no s="
    if keys.count("t") > 1 or keys.count("s") > 1:
        return "the signature repeats t= or s="
    if tuple(keys) != _PAIR_KEYS:
        return "the signature holds keys other than t= and s=, empty pairs, or s= before t="
    stamp = value[2:].partition("&")[0]
    if not stamp.isdigit() or stamp.startswith("0") or len(stamp) > 12:
        return "the signature timestamp is malformed"
    return "the signature's s= is not 64 lowercase hex digits"


def _method_label(method: str) -> str:
    """The method for a message when it is a known one (a client's arbitrary token never is echoed)."""
    known = {"DELETE", "HEAD", "OPTIONS", "PATCH", "TRACE", "CONNECT"}
    return f"{method} request" if method in known else "request of another method"


def signature_problem(header: str | None, *, now: float, max_age_s: float) -> str | None:
    """Why one header value is not a fresh signature of the server's exact shape (no secret in it), or None."""
    if not header:
        return "the request is not signed"
    shape = _SHAPE.fullmatch(header)
    if shape is None:
        return _shape_problem(header)
    skew = float(int(shape["t"])) - now
    if skew > max_age_s:
        return f"the signature is from the future ({int(skew)} s ahead of this server's clock)"
    if -skew > max_age_s:
        return f"the signature is too old ({int(-skew)} s, the window is {int(max_age_s)} s)"
    return None


def signature_refusal(
    headers: Iterable[tuple[bytes, bytes]], *, method: str, now: float, max_age_s: float
) -> str | None:
    """Why a request's raw ASGI headers do not hold exactly one fresh signature, or None when they do."""
    claimed = [(name, value) for name, value in headers if _claims_signature(name)]
    if method not in SIGNED_METHODS:
        if claimed:
            return f"a signature header on a {_method_label(method)}, which carries none"
        return None
    if len(claimed) > 1:
        return f"the request carries {len(claimed)} signature headers; exactly one is accepted"
    if not claimed:
        return "the request is not signed"
    name, raw = claimed[0]
    if name.lower() != _FOLDED:
        return f"the signature header is not spelled {SIGNATURE_HEADER}"
    try:
        value = raw.decode("ascii")
    except UnicodeDecodeError:
        return "the signature holds whitespace or characters that are not printable ASCII"
    return signature_problem(value, now=now, max_age_s=max_age_s)
