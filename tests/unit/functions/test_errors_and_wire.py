"""Every error code the core can raise has an HTTP status; the wire models round-trip through JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from uuid import uuid4

from context import errors as context_errors
from context.policies import FRONT_DOOR
from functions._wire import RequestIn, SegmentBriefInput, key_json
from functions.errors import CODE_STATUS, http_status
from knowledge import errors as knowledge_errors
from memory import errors as memory_errors
from state import errors as state_errors
from state.api_keys import ApiKey
from state.refs import ResourceRef

COMPANY = "8f21c0de-0000-4000-8000-000000000001"


def _codes(module: object) -> set[str]:
    found: set[str] = set()
    for name in getattr(module, "__all__", []):
        value = getattr(module, name)
        if isinstance(value, type) and issubclass(value, Exception) and isinstance(getattr(value, "code", None), str):
            found.add(value.code)
    return found


def test_every_core_error_code_maps_to_an_http_status() -> None:
    codes = set().union(*(_codes(m) for m in (context_errors, knowledge_errors, memory_errors, state_errors)))
    unmapped = sorted(codes - set(CODE_STATUS))
    assert unmapped == [], f"every error an HTTP client can see maps to a stable status: {unmapped}"
    assert http_status("document_too_large") == 413 and http_status("unheard_of") == 400


def test_a_segment_request_round_trips_through_json() -> None:
    data = {
        "run_id": str(uuid4()),
        "segment": 2,
        "waited": True,
        "request": {
            "subject": {"organization_id": str(uuid4()), "user_id": None, "definition_id": str(uuid4())},
            "query": "q",
            "entities": [{"kind": "crm.company", "id": COMPANY, "label": "Contoso"}],
        },
        "policy": FRONT_DOOR.model_dump(mode="json"),
    }
    parsed = SegmentBriefInput.model_validate(json.loads(json.dumps(data)))
    assert parsed.policy == FRONT_DOOR
    request = parsed.request.to_request()
    assert request.entities == [ResourceRef(kind="crm.company", id=COMPANY, label="Contoso")]
    assert RequestIn.of(request) == parsed.request


def test_an_api_key_answers_one_json_shape_over_http_and_from_the_cli_and_never_its_secret() -> None:
    from functions.api import keys as api_keys
    from functions.cli import keys as cli_keys

    created = datetime(2026, 1, 2, tzinfo=UTC)
    key = ApiKey(
        id="ack_1", scope="organization", organization_id=uuid4(), name="ci", created_at=created, revoked_at=None
    )
    answer = key_json(key)
    assert answer == {
        "id": "ack_1",
        "scope": "organization",
        "organization_id": str(key.organization_id),
        "name": "ci",
        "created_at": created.isoformat(),
        "revoked_at": None,
    }
    assert api_keys.key_json is key_json and cli_keys._json(key) == answer
