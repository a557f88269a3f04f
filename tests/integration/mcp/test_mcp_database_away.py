"""While the service cannot reach its database, an MCP tool answers the refusal `/v1/` answers, in a tool result:
`database_unavailable`, with no traceback (the app on a port nothing listens on, reached through its ASGI app)."""

from __future__ import annotations

from pathlib import Path
from uuid import uuid4

from functions.app import create_app
from state.settings import load_settings
from tests.integration.functions.conftest import TOKEN, fake_embedders
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key
from tests.support import free_port


async def test_a_tool_call_while_the_database_is_away_is_refused_with_database_unavailable(tmp_path: Path) -> None:
    url = f"postgresql://u:pw@127.0.0.1:{free_port()}/db"
    settings = load_settings(database_url=url, api_token=TOKEN, data_dir=tmp_path, database_retry_interval_s=30)
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=new_signing_key())
    app = create_app(settings, inngest_client=client, embedders=fake_embedders())
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_memories", "arguments": {"organization_id": str(uuid4())}}}  # fmt: skip
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        answered = await http.post("/mcp", json=call, headers=headers)
    assert answered.status_code == 200, answered.text
    result = answered.json()["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "database_unavailable"
    assert "Traceback" not in answered.text and "pw@" not in answered.text
