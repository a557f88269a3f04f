"""The `serve` banner says where dev mode runs the work of its events."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

from functions.cli._serve import functions_line


def test_the_banner_says_in_process_when_no_inngest_server_answers() -> None:
    line = functions_line({"INNGEST_BASE_URL": "http://127.0.0.1:9"})
    assert line == "functions: in-process (no Inngest dev server answers at http://127.0.0.1:9)"


def test_the_banner_names_the_inngest_dev_server_when_one_answers() -> None:
    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.handle_request, daemon=True).start()
    try:
        origin = f"http://127.0.0.1:{server.server_port}"
        assert functions_line({"INNGEST_BASE_URL": origin}) == f"functions: the Inngest dev server at {origin}"
    finally:
        server.server_close()


def test_the_banner_follows_an_explicit_choice() -> None:
    assert functions_line({"AC_CONTEXT_RUN_FUNCTIONS": "in-process"}).startswith("functions: in-process")
    line = functions_line({"AC_CONTEXT_RUN_FUNCTIONS": "inngest", "INNGEST_BASE_URL": "http://127.0.0.1:9"})
    assert "events wait in the outbox" in line
