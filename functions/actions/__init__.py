"""The acts a caller asks of the store, one function each, under every interface.

The HTTP routes (`functions.api`), the console (`functions.console`) and the CLI (`functions.cli`) translate
their input into one call here and its result into their output; none of them calls another. Each act takes
the caller's `Scope` (`functions.actions.scope`), plain arguments and the open `Services`, and returns plain
results or raises the project's errors (`functions.errors`, the core's coded errors), which each interface
answers in its own way. This room must never import an interface, nor answer HTTP, HTML or a terminal.
"""
