"""Embedding: the embedders by model id, and the live model of each scope with its switch state.

`embedder` is the contract (with batching, checks and the deterministic fake), `providers` the two real
embedders (WordLlama, OpenAI), `registry` hands them out by model id (`get_embedder`, `EmbedderLookup`),
and `live_model` reads and changes which model each scope searches with.

This room imports nothing of `knowledge.documents` or `knowledge.ingestion`, so search and the context
source load no extraction library (tests/unit/test_layering.py, tests/unit/test_import_cost.py). This
`__init__` imports nothing.
"""
