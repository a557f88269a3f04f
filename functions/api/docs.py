"""The API pages, `/docs` (Swagger UI) and `/redoc` (ReDoc), served with no network.

FastAPI's own pages load their script, styles and favicon from a CDN, so offline they are blank. Here the
same pages (`fastapi.openapi.docs`) point at assets the app serves itself under `DOCS_STATIC_PATH`, from
the `fastapi-offline` package (docs/decisions.md, "Where do the API pages' assets come from?"); nothing in
either page reaches another host. Like `/openapi.json`, the pages and their assets need no key (the edge
guards `/v1/` only), and they hold no tenant's data. This module must never copy an asset into the project
or name a CDN.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["DOCS_OFF", "DOCS_STATIC_PATH", "DOCS_URL", "REDOC_URL", "SWAGGER_UI_PARAMETERS", "install_docs"]

DOCS_URL: Final = "/docs"
"""Swagger UI."""
REDOC_URL: Final = "/redoc"
"""ReDoc."""
DOCS_STATIC_PATH: Final = "/docs/static"
"""Where the pages' script, styles and favicon are served from."""
DOCS_OFF: Final[dict[str, Any]] = {"docs_url": None, "redoc_url": None}
"""The `FastAPI(...)` arguments that turn off its CDN-backed pages, which `install_docs` replaces."""

SWAGGER_UI_PARAMETERS: Final[dict[str, Any]] = {"validatorUrl": None, "persistAuthorization": True}
"""No validator badge (Swagger UI would fetch it from its validator's host), and the key kept across reloads."""

_ASSETS = files("fastapi_offline") / "static"
"""The package's assets: `swagger-ui-bundle.js`, `swagger-ui.css`, `redoc.standalone.js`, `favicon.png`."""


def install_docs(app: FastAPI) -> None:
    """Serve `/docs` and `/redoc` with their assets from the app (build `app` with `**DOCS_OFF`)."""
    app.mount(DOCS_STATIC_PATH, StaticFiles(directory=str(_ASSETS)), name="docs-static")

    @app.get(DOCS_URL, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - API",
            swagger_js_url=f"{root}{DOCS_STATIC_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{DOCS_STATIC_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{root}{DOCS_STATIC_PATH}/favicon.png",
            oauth2_redirect_url=None,
            swagger_ui_parameters=SWAGGER_UI_PARAMETERS | (app.swagger_ui_parameters or {}),
        )

    @app.get(REDOC_URL, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{DOCS_STATIC_PATH}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{DOCS_STATIC_PATH}/favicon.png",
            with_google_fonts=False,
        )
