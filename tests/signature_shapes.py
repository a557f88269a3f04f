"""Every shape of `X-Inngest-Signature` the edge refuses, built for one body and one signing key.

Each shape is a list of raw header lines as a client puts them on the wire. `sdk_accepts` says whether the
SDK (0.5.19) alone, reading `dict(request.headers.items())` the way `inngest.fast_api` does, would verify
it: those are the shapes where a check that read the header any other way than "exactly one, exactly the
server's form" would be told one thing while the SDK verifies another. The unit tests prove each
`sdk_accepts` against the SDK's own code; the HTTP tests send every shape to every function.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from inngest._internal import net, server_lib, transforms
from starlette.datastructures import Headers

__all__ = ["MONTH", "SIG", "Shape", "fresh_signature", "method_shapes", "sdk_verifies", "value_and_header_shapes"]

SIG = b"x-inngest-signature"
MONTH = 30 * 24 * 3600


@dataclass(frozen=True)
class Shape:
    """One way to send the signature header(s)."""

    label: str
    headers: tuple[tuple[bytes, bytes], ...]
    sdk_accepts: bool
    """Whether the SDK alone verifies this shape with the right key (the edge must refuse it anyway)."""


def fresh_signature(body: bytes, key: str, *, now: int) -> str:
    """A correct signature of `body` at `now`, as the Inngest server writes it."""
    signature = net.sign_request(body, key, unix_ms=now)
    assert isinstance(signature, str)
    return signature


def _undated(body: bytes, key: str) -> str:
    canonical = transforms.canonicalize(body)
    assert isinstance(canonical, bytes)
    return hmac.new(transforms.remove_signing_key_prefix(key).encode(), canonical, hashlib.sha256).hexdigest()


def _percent(text: str) -> str:
    return "".join(f"%{byte:02X}" for byte in text.encode())


def value_and_header_shapes(body: bytes, key: str, *, now: int) -> list[Shape]:
    """Every refused shape of the header lines for `body`, each with whether the SDK alone would verify it."""
    fresh = fresh_signature(body, key, now=now)
    t, s = fresh[2:].split("&s=")
    stale = fresh_signature(body, key, now=now - MONTH)
    old_t, old_s = stale[2:].split("&s=")
    fake = f"t={now}&s={'0' * 64}"
    undated = _undated(body, key)
    arabic = "".join(chr(0x0660 + int(d)) for d in t)

    def one(label: str, value: str | bytes, *, accepts: bool) -> Shape:
        raw = value if isinstance(value, bytes) else value.encode("latin-1")
        return Shape(label, ((SIG, raw),), accepts)

    def many(label: str, *lines: tuple[bytes, str | bytes], accepts: bool) -> Shape:
        encoded = tuple((n, v if isinstance(v, bytes) else v.encode("latin-1")) for n, v in lines)
        return Shape(label, encoded, accepts)

    return [
        # more than one header, or a name that folds into it
        many("a fake fresh signature before a captured month-old one", (SIG, fake), (SIG, stale), accepts=True),
        many("a captured month-old signature before a fake fresh one", (SIG, stale), (SIG, fake), accepts=False),
        many("the same fresh signature twice", (SIG, fresh), (SIG, fresh), accepts=True),
        many("an empty header before a fresh one", (SIG, ""), (SIG, fresh), accepts=True),
        many(
            "two casings that fold into one name",
            (b"X-Inngest-Signature", fake),
            (b"x-INNGEST-signature", stale),
            accepts=True,
        ),
        many("an underscore spelling beside the real one", (b"x_inngest_signature", fake), (SIG, fresh), accepts=True),
        many("only an underscore spelling", (b"x_inngest_signature", fresh), accepts=False),
        one("a proxy's comma-joined pair", f"{fake}, {stale}", accepts=False),
        # one header whose value is not exactly t=<digits>&s=<64 hex>
        one("a month-old signature", stale, accepts=True),
        one("a signature a year ahead", fresh_signature(body, key, now=now + 365 * 24 * 3600), accepts=True),
        one("no t=", f"s={undated}", accepts=True),
        one("t=0, which the SDK leaves out of the HMAC", f"t=0&s={undated}", accepts=True),
        one("s= before t=", f"s={s}&t={t}", accepts=True),
        one("t= repeated, the month-old one first", f"t={old_t}&t={t}&s={old_s}", accepts=True),
        one("a blank t= before the real one", f"t=&t={t}&s={s}", accepts=True),
        one("s= repeated", f"t={t}&s={s}&s={'0' * 64}", accepts=True),
        one("a blank s= before the real one", f"t={t}&s=&s={s}", accepts=True),
        one("an extra key after", f"t={t}&s={s}&v=1", accepts=True),
        one("an extra key before", f"v=1&t={t}&s={s}", accepts=True),
        one("empty pairs", f"t={t}&&s={s}&", accepts=True),
        one("a leading zero in t=", f"t=0{t}&s={s}", accepts=True),
        one("a plus sign in t= (a space once decoded)", f"t=+{t}&s={s}", accepts=True),
        one("an encoded plus sign in t=", f"t=%2B{t}&s={s}", accepts=True),
        one("a space after t=", f"t={t} &s={s}", accepts=True),
        one("a tab after t=", f"t={t}\t&s={s}", accepts=True),
        one("underscores in t=", f"t={t[0]}_{t[1:]}&s={s}", accepts=True),
        one("percent-encoded digits in t=", f"t={_percent(t)}&s={s}", accepts=True),
        one("a percent-encoded key", f"%74={t}&s={s}", accepts=True),
        one("non-ASCII digits in t= (percent-encoded)", f"t={_percent(arabic)}&s={s}", accepts=True),
        one("a raw non-ASCII byte", f"t={t}&s={s}&x=".encode() + b"\xe9", accepts=True),
        one("upper-case hex in s=", f"t={t}&s={s.upper()}", accepts=False),
        one("upper-case keys", f"T={t}&S={s}", accepts=False),
        one("a semicolon for &", f"t={t};s={s}", accepts=False),
    ]


def method_shapes(body: bytes, key: str, *, now: int) -> list[tuple[str, Shape]]:
    """A fresh, correct signature on each method the Inngest endpoint does not serve."""
    fresh = fresh_signature(body, key, now=now).encode()
    return [
        (method, Shape(f"a fresh signature on {method}", ((SIG, fresh),), False))
        for method in ("HEAD", "DELETE", "PATCH", "OPTIONS")
    ]


def sdk_verifies(shape: Shape, body: bytes, key: str) -> bool:
    """Whether the SDK's own check accepts `shape`, seeing the headers as `inngest.fast_api` passes them."""
    folded = [(name.lower(), value) for name, value in shape.headers]  # what uvicorn (h11) hands the app
    seen = net.normalize_headers(dict(Headers(raw=folded).items()))
    verdict = net.validate_request_sig(
        body=body, headers=seen, mode=server_lib.ServerKind.CLOUD, signing_key=key, signing_key_fallback=None
    )
    return isinstance(verdict, str)
