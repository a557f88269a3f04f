"""A source's URI is an http or https URL (knowledge/ingestion/registration.py `checked_uri`), on every face.

The URI is a link any reader of the source may render, so `javascript:`, `data:`, `vbscript:` and any other
scheme (in any case, behind leading spaces or control characters a browser would drop) are refused with
422 `source_uri_invalid` and no source row, from the one-document route, the batch route and the CLI's
`ingest --uri`; an http or https URL (the scheme in any case) registers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.support import error_code

REFUSED = [
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "JAVASCRIPT:alert(document.cookie)",
    " javascript:alert(1)",
    "\tjavascript:alert(1)",
    "\x01javascript:alert(1)",
    "\u00a0javascript:alert(1)",
    "java\nscript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "DATA:text/html;base64,PHNjcmlwdD4=",
    "vbscript:msgbox(1)",
    "VBScript:msgbox(1)",
    "file:///etc/passwd",
    "s3://bucket/key",
    "//evil.example/x",
    "/relative/path",
    "https:/no-host",
    "http:///no-host",
    "https://wiki.example/a b",
]


async def _count(service: Service, org: UUID) -> int:
    async with service.db.connection() as conn:
        count = await conn.fetchval("SELECT count(*) FROM agent.knowledge_sources WHERE organization_id = $1", org)
    return int(count)


async def test_a_uri_that_is_not_http_or_https_is_refused_with_its_code(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    for uri in REFUSED:
        one: dict[str, Any] = {"organization_id": str(org), "uri": uri, "content": "# Hi\n\ntext"}
        answer = await service.http.post("/v1/knowledge/sources", json=one, headers=service.auth)
        assert answer.status_code == 422 and error_code(answer) == "source_uri_invalid", (uri, answer.text)
        many = {"organization_id": str(org), "items": [{"uri": "https://wiki.example/ok", "content": "a"},
                                                       {"uri": uri, "content": "b"}]}  # fmt: skip
        answer = await service.http.post("/v1/knowledge/sources:batch", json=many, headers=service.auth)
        assert answer.status_code == 422 and error_code(answer) == "source_uri_invalid", (uri, answer.text)
    assert await _count(service, org) == 0, "a refused URI registers nothing, nor its batch"


async def test_an_http_or_https_uri_registers(service: Service, factory: Factory) -> None:
    org = await factory.organization()
    for uri in ("https://wiki.example/pricing", "http://intranet.example:8080/a?b=c#d", "HTTPS://Wiki.Example/X"):
        body = {"organization_id": str(org), "uri": uri, "content": f"# {uri}\n\ntext"}
        answer = await service.http.post("/v1/knowledge/sources", json=body, headers=service.auth)
        assert answer.status_code == 202, (uri, answer.text)
    assert await _count(service, org) == 3


async def test_the_cli_refuses_a_javascript_uri_in_one_line(cli: Any, factory: Factory, tmp_path: Path) -> None:
    org = await factory.organization()
    doc = tmp_path / "a.md"
    doc.write_text("# A\n\ntext")
    result = await cli("ingest", str(doc), "--org", str(org), "--uri", "javascript:alert(1)")
    assert result.exit_code != 0 and "source_uri_invalid" in result.output, result.output
