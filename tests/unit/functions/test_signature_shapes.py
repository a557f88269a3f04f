"""One signature per request: every ambiguous shape of `X-Inngest-Signature` is refused on the headers, and
the shapes the SDK alone would verify are named by running the SDK's own check on them."""

from __future__ import annotations

import json
import secrets

import pytest

from functions.inngest.signatures import SIGNATURE_HEADER, signature_refusal
from tests.signature_shapes import (
    Shape,
    fresh_signature,
    method_shapes,
    sdk_verifies,
    value_and_header_shapes,
)

NOW = 1_800_000_000
KEY = "signkey-test-" + secrets.token_hex(32)
BODY = json.dumps({"event": {"name": "x", "data": {"a": 1}}, "steps": {}}).encode()
SHAPES = value_and_header_shapes(BODY, KEY, now=NOW)


def _refusal(shape: Shape, method: str = "POST") -> str | None:
    return signature_refusal(shape.headers, method=method, now=NOW, max_age_s=300)


@pytest.mark.parametrize("shape", SHAPES, ids=[s.label for s in SHAPES])
def test_every_ambiguous_shape_is_refused_and_the_sdk_would_have_verified_the_ones_marked(shape: Shape) -> None:
    assert sdk_verifies(shape, BODY, KEY) is shape.sdk_accepts, "the catalogue says what the SDK does"
    reason = _refusal(shape)
    assert reason is not None, f"the edge let through: {shape.label}"
    assert "\n" not in reason
    for _, value in shape.headers:
        assert value.decode("latin-1") not in reason or not value, "a refusal never echoes the header"


def test_one_fresh_signature_of_the_servers_shape_is_accepted_and_is_what_the_sdk_verifies() -> None:
    fresh = fresh_signature(BODY, KEY, now=NOW).encode()
    for name in (SIGNATURE_HEADER.encode(), b"X-Inngest-Signature"):  # a server that does not fold names
        shape = Shape("fresh", ((b"content-type", b"application/json"), (name, fresh)), True)
        assert _refusal(shape) is None
        assert sdk_verifies(shape, BODY, KEY)
    for method in ("GET", "PUT"):
        assert _refusal(Shape("fresh", ((SIGNATURE_HEADER.encode(), fresh),), True), method) is None


def test_get_post_and_put_need_a_signature_and_other_methods_may_carry_none() -> None:
    unsigned = Shape("unsigned", ((b"content-type", b"application/json"),), False)
    for method in ("GET", "POST", "PUT"):
        assert _refusal(unsigned, method) == "the request is not signed"
    for method, shape in method_shapes(BODY, KEY, now=NOW):
        assert _refusal(unsigned, method) is None, "an unsigned HEAD or DELETE is the router's 405"
        reason = _refusal(shape, method)
        assert reason is not None and method in reason
    assert _refusal(method_shapes(BODY, KEY, now=NOW)[0][1], "BREW") == (
        "a signature header on a request of another method, which carries none"
    ), "an unknown method is never echoed"
