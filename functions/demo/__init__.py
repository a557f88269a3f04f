"""The demo story `make demo` tells: seed a tenant, ingest, remember, and build a brief."""

from __future__ import annotations

from typing import TYPE_CHECKING

from state.lazy import lazy_exports

if TYPE_CHECKING:
    from functions.demo.story import run_demo

__all__ = ["run_demo"]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
