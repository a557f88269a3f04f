-- BM25 counts a hyphenated word once, as its parts. PostgreSQL's `english` configuration indexes a word
-- such as "boundary-layer" three times: the whole compound ("boundary-lay") and each part ("boundari",
-- "layer"). The compound lexeme inflated every such chunk's length and document frequencies by a term a
-- query almost never names alone (a query's own compound finds no posting and adds nothing: its parts
-- match), so on Cranfield, where hyphenated terms are everywhere, BM25 over the stored chunks scored
-- nDCG@10 0.342 with compounds and 0.3485 without, against 0.3447 for the bm25s reference on the same
-- chunks (docs/decisions.md, issue 10, fourth pass).
--
-- agent.knowledge_english is `english` without a mapping for the three compound token types (asciihword,
-- hword, numhword); the parts (hword_asciipart, hword_part, hword_numpart) keep theirs. The chunks'
-- generated `fts` column (made by 0010) is rebuilt under it, and the postings and statistics are rebuilt from it: the
-- same sums the triggers keep, recounted once here from the searchable pairs.
--
-- The same rewrite keeps every vector in its row. A chunk row of a 256-dimension model is about 2.2 kB
-- (vector 1 kB, text 0.4 kB, tsvector 0.65 kB), over the 2 kB at which PostgreSQL starts moving values out
-- of line, and the vector, the widest value, went to the TOAST table first: an exact scan then read each
-- vector back through the TOAST index (18,000 chunks: 79,000 buffer reads, 115-170 ms). With storage MAIN
-- the text and the tsvector are compressed or moved out first and the vector stays in its row.

CREATE TEXT SEARCH CONFIGURATION agent.knowledge_english (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english DROP MAPPING FOR asciihword, hword, numhword;

ALTER TABLE agent.knowledge_chunks ALTER COLUMN embedding SET STORAGE MAIN;
ALTER TABLE agent.knowledge_chunks DROP COLUMN fts;
ALTER TABLE agent.knowledge_chunks
    ADD COLUMN fts tsvector NOT NULL GENERATED ALWAYS AS (to_tsvector('agent.knowledge_english'::regconfig, text)) STORED;

TRUNCATE agent.knowledge_postings;
DELETE FROM agent.knowledge_lexemes;
UPDATE agent.knowledge_lexical_scopes SET chunks = 0, total_length = 0;
SELECT agent.knowledge_lexical_add_chunks(coalesce(array_agg(c.id), '{}'))
  FROM agent.knowledge_searchable sp
  JOIN agent.knowledge_chunks c ON c.source_id = sp.source_id AND c.embedding_model = sp.embedding_model;
