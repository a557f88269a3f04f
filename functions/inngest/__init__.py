"""The Inngest room: the client, the catalog of the seven functions, their step plumbing, encryption, signatures.

Each function wraps the core in durable steps and returns small JSON; none holds a rule of the core.
This package's `__init__` imports nothing, so importing a sibling room never loads the SDK.
"""
