"""The demo story `make demo` tells: seed a tenant, ingest, remember, and build a brief."""

from __future__ import annotations

from functions.demo.story import run_demo

__all__ = ["run_demo"]
