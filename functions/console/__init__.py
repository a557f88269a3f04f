"""The operator console, `/console`: the layer's data and actions as server-rendered pages.

Sign-in with an API key or the operator token into a signed cookie session (`_session`); the same scopes
as `/v1/` (`_scope`), answered by calling the API routes' own read and act functions; Jinja2 templates with
autoescape on, one vendored stylesheet, no script; a strict Content-Security-Policy and no framing on
every answer (`_pages`). `install_console(app)` mounts it on the service.

This room must never hold a business rule or SQL, nor show a key or token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from state.lazy import lazy_exports

if TYPE_CHECKING:
    from functions.console.mount import install_console

__all__ = ["install_console"]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
