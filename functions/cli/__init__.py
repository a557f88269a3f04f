"""The `ac-context` command line: one module per command group, `main` the entry point."""

from __future__ import annotations

from functions.cli.main import app, main

__all__ = ["app", "main"]
