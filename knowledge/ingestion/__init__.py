"""Ingestion: a document from registration to ready chunks, and its end.

`registration` registers an upload or a URI (one, or many of one scope); `core` is the one ingestion core
every caller runs, as named steps (`steps`: extract and chunk, embed a batch, mark ready or failed; `bulk`:
many sources in a few statements over the process `pool`); `failures` decides which errors fail a
document and `failing` marks them; `object_deletes` drains the objects whose rows are gone; `sources` is the
read model of a source; `sweep` fails the stalled ones and retries;
`delete` deletes a source or an organization's knowledge; `review` reads a document's owner and review date.

This room may import `knowledge.documents` and `knowledge.embedding`; neither imports it
(tests/unit/test_layering.py). This `__init__` imports nothing.
"""
