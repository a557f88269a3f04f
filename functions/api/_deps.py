"""FastAPI dependencies shared by the `/v1/` routers: the open services of the app.

Who may call a route, and the one answer for an unknown organization, are the route's scope
(`functions.api._scopes`). This module must never hold a business rule.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from functions._request import services
from functions._services import Services

__all__ = ["ServicesDep", "services"]

ServicesDep = Annotated[Services, Depends(services)]
"""The services, as a route parameter."""
