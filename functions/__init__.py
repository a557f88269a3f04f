"""The durable worker: the Inngest functions, the FastAPI service and the `ac-context` CLI.

Everything here is thin: it parses, calls the core (`context`, `knowledge`, `memory`, `state`) and returns
small JSON. One room per interface: `inngest/` (the client, the catalog, the seven functions and their step
plumbing), `api/` (the `/v1` routes), `cli/` (the `ac-context` commands) and `demo/`; the wiring they
share sits at the top (`app`, `events`, `errors`, the service slot, the brief gate, the wire models).

Nothing imports `functions`; this package must never hold a business rule of the core. Its `__init__`
imports nothing, so `import functions.errors` loads no web framework and no SDK.
"""
