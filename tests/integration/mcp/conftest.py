"""The MCP tests' fixtures (`tests.integration.mcp.support`)."""

from tests.integration.mcp.support import tenant

__all__ = ["tenant"]
