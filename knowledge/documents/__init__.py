"""Documents: a document's bytes and text.

`extract` turns an upload into normalised text within `limits` (`_drawn` measures what a PDF's pages
draw, so a decompression bomb is refused first); `chunk` cuts the text into chunks sized in the brief's
token unit; `objects` stores the bytes (S3-compatible or a local folder). The queue of objects whose rows
are gone is drained by `knowledge.ingestion.object_deletes`, beside the writes that fill it.

This room imports nothing of `knowledge.embedding` or `knowledge.ingestion` (tests/unit/test_layering.py).
This `__init__` imports nothing, so reading one module loads only that module.
"""
