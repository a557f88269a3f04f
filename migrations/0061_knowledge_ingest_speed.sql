-- Cheaper writes for bulk ingestion (issue 11, second pass).
--
-- The GIN index on knowledge_chunks.fts (made by 0010) goes: knowledge_search reads the postings (0041)
-- and nothing else searches the tsvector, so every chunk insert paid for an index no query used. The `fts`
-- column stays: the postings are made from it.

DROP INDEX agent.knowledge_chunks_fts_idx;
