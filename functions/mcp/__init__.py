"""The MCP face of the layer (Model Context Protocol), on the official `mcp` SDK.

One low-level server (`functions.mcp.server`) whose six tools (`functions.mcp.tools`) and source-text resource
(`functions.mcp.resources`) each make one call of the action layer with the caller's scope, served two ways:
streamable HTTP at `/mcp` in the service, authenticated as `/v1/` is (`functions.mcp.http`), and stdio for
`ac-context mcp` (`functions.mcp.stdio`). Nothing is imported here, so importing the package costs nothing.
"""

__all__: list[str] = []
