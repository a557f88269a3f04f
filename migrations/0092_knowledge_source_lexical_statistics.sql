-- Source-level BM25 statistics (issue 24, part 1), beside the chunk-level ones of migrations/0040.
--
-- The chunk stays the unit a search returns and a brief cites, but its lexical score may now take its
-- source's BM25 into account (knowledge_search, migrations/0093): a source scored as one document, with
-- its own length and term frequencies, and the scope's source count, average source length and source
-- document frequencies. The statistics are kept by the same two functions as the chunk-level ones, in the
-- same statements, so they follow ingestion, deletion, a re-sync and a model switch exactly as those do and
-- never count a pending, failed or non-live pair's chunks (a source's figures are the sums over its counted
-- chunks):
--
-- - `knowledge_lexical_chunks`: one row per counted chunk (the chunks that have postings) with its source
--   and length, so that uncounting a chunk whose row is already deleted (a cascade) still knows its source;
-- - `knowledge_lexical_sources`: per (scope, source) the counted chunks and their total length; a source
--   whose last counted chunk leaves loses its row;
-- - `knowledge_source_terms`: per (scope, source, lexeme) the term frequency in the source; a row goes when
--   its frequency reaches 0;
-- - `knowledge_lexemes.source_df`: per (scope, lexeme) the number of sources holding it (0 kept, as df);
-- - `knowledge_lexical_scopes.sources` and `.source_length`: per scope the counted sources and their total
--   length.
--
-- Every figure moves by what the statement wrote: a source or a source term is new exactly when its upserted
-- count equals the count just added, and gone exactly when its count is not above the count just removed.
-- Both functions keep their signatures and supersede the bodies of 0040 and 0091; the triggers of 0040 call
-- them unchanged. tests/integration/knowledge/test_source_statistics.py compares every figure with a recount
-- from the chunks, and the bulk path with single writes.

ALTER TABLE agent.knowledge_lexical_scopes
    ADD COLUMN sources bigint NOT NULL DEFAULT 0 CONSTRAINT knowledge_lexical_scopes_sources_check CHECK (sources >= 0),
    ADD COLUMN source_length bigint NOT NULL DEFAULT 0
        CONSTRAINT knowledge_lexical_scopes_source_length_check CHECK (source_length >= 0);

ALTER TABLE agent.knowledge_lexemes
    ADD COLUMN source_df integer NOT NULL DEFAULT 0;  -- no CHECK, as df: a removal upserts a negative count

-- The counted chunks. No foreign key: a chunk must stay listed until its leaving has been counted.
CREATE TABLE agent.knowledge_lexical_chunks (
    chunk_id bigint PRIMARY KEY,
    scope_id integer NOT NULL,
    source_id uuid NOT NULL,
    chunk_length integer NOT NULL CHECK (chunk_length > 0)
);

CREATE TABLE agent.knowledge_lexical_sources (
    source_id uuid NOT NULL,
    scope_id integer NOT NULL,
    chunks integer NOT NULL CHECK (chunks > 0),
    length bigint NOT NULL CHECK (length > 0),
    PRIMARY KEY (source_id, scope_id)
);

CREATE TABLE agent.knowledge_source_terms (
    source_id uuid NOT NULL,
    scope_id integer NOT NULL,
    lexeme text NOT NULL,
    tf integer NOT NULL CHECK (tf > 0),
    PRIMARY KEY (source_id, scope_id, lexeme)
);

-- The search reads the source figures as the tenant (SECURITY INVOKER): the same scope policy as the
-- postings (migrations/0062). It reads a lexical candidate's source from the counted chunks too: a
-- primary-key probe whose policy is the scopes' one-row subquery, where the chunks' policy would hash
-- every source the tenant can see.
ALTER TABLE agent.knowledge_lexical_chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent.knowledge_lexical_sources ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent.knowledge_source_terms ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON agent.knowledge_lexical_chunks, agent.knowledge_lexical_sources, agent.knowledge_source_terms
    TO ac_tenant, authenticated;
CREATE POLICY tenant_read ON agent.knowledge_lexical_chunks FOR SELECT TO ac_tenant, authenticated
    USING (scope_id IN (
        SELECT sc.id FROM agent.knowledge_lexical_scopes sc
         WHERE sc.organization_id IS NULL OR sc.organization_id = (SELECT public.current_organization_id())));
CREATE POLICY tenant_read ON agent.knowledge_lexical_sources FOR SELECT TO ac_tenant, authenticated
    USING (scope_id IN (
        SELECT sc.id FROM agent.knowledge_lexical_scopes sc
         WHERE sc.organization_id IS NULL OR sc.organization_id = (SELECT public.current_organization_id())));
CREATE POLICY tenant_read ON agent.knowledge_source_terms FOR SELECT TO ac_tenant, authenticated
    USING (scope_id IN (
        SELECT sc.id FROM agent.knowledge_lexical_scopes sc
         WHERE sc.organization_id IS NULL OR sc.organization_id = (SELECT public.current_organization_id())));

CREATE OR REPLACE FUNCTION agent.knowledge_lexical_add_chunks(p_chunk_ids bigint[]) RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, public
AS $$
    WITH chunks AS MATERIALIZED (
        -- The chunks to count: in a searchable pair, not counted yet, with at least one lexeme.
        SELECT c.id, c.source_id, sp.scope_id, c.fts, len.n
          FROM agent.knowledge_chunks c
          JOIN agent.knowledge_searchable sp ON sp.source_id = c.source_id AND sp.embedding_model = c.embedding_model
         CROSS JOIN LATERAL (SELECT sum(cardinality(x.positions))::integer AS n FROM unnest(c.fts) AS x) AS len
         WHERE c.id = ANY (p_chunk_ids) AND len.n > 0
           AND NOT EXISTS (SELECT 1 FROM agent.knowledge_postings q WHERE q.chunk_id = c.id)
    ), terms AS MATERIALIZED (
        SELECT ch.id AS chunk_id, ch.source_id, u.lexeme, ch.scope_id, cardinality(u.positions) AS tf,
               ch.n AS chunk_length
          FROM chunks ch CROSS JOIN LATERAL unnest(ch.fts) AS u
    ), added AS (
        INSERT INTO agent.knowledge_postings (chunk_id, lexeme, scope_id, tf, chunk_length, impact)
        SELECT chunk_id, lexeme, scope_id, tf, chunk_length,
               tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * chunk_length / 64.0))
          FROM terms
         ORDER BY scope_id, lexeme  -- in list-index order: a bulk insert walks the index once instead of at random
    ), counted AS (
        INSERT INTO agent.knowledge_lexical_chunks (chunk_id, scope_id, source_id, chunk_length)
        SELECT id, scope_id, source_id, n FROM chunks ORDER BY id
    ), source_terms AS MATERIALIZED (
        -- Per (scope, source, lexeme): the occurrences added and the chunks that hold it.
        SELECT scope_id, source_id, lexeme, sum(tf)::integer AS tf, count(*) AS chunks
          FROM terms GROUP BY scope_id, source_id, lexeme
    ), source_terms_upserted AS (
        INSERT INTO agent.knowledge_source_terms AS st (source_id, scope_id, lexeme, tf)
        SELECT source_id, scope_id, lexeme, tf FROM source_terms ORDER BY source_id, scope_id, lexeme
        ON CONFLICT (source_id, scope_id, lexeme) DO UPDATE SET tf = st.tf + EXCLUDED.tf
        RETURNING st.source_id, st.scope_id, st.lexeme, st.tf
    ), lexemes AS (
        -- df counts the chunks added; source_df the sources that did not hold the lexeme before.
        INSERT INTO agent.knowledge_lexemes AS l (scope_id, lexeme, df, source_df)
        SELECT t.scope_id, t.lexeme, sum(t.chunks), count(*) FILTER (WHERE u.tf = t.tf)
          FROM source_terms t
          JOIN source_terms_upserted u
            ON u.source_id = t.source_id AND u.scope_id = t.scope_id AND u.lexeme = t.lexeme
         GROUP BY t.scope_id, t.lexeme ORDER BY t.scope_id, t.lexeme
        ON CONFLICT (scope_id, lexeme) DO UPDATE SET df = l.df + EXCLUDED.df, source_df = l.source_df + EXCLUDED.source_df
    ), sources AS MATERIALIZED (
        SELECT scope_id, source_id, count(*)::integer AS chunks, sum(n) AS length
          FROM chunks GROUP BY scope_id, source_id
    ), sources_upserted AS (
        INSERT INTO agent.knowledge_lexical_sources AS ls (source_id, scope_id, chunks, length)
        SELECT source_id, scope_id, chunks, length FROM sources ORDER BY source_id, scope_id
        ON CONFLICT (source_id, scope_id) DO UPDATE
            SET chunks = ls.chunks + EXCLUDED.chunks, length = ls.length + EXCLUDED.length
        RETURNING ls.source_id, ls.scope_id, ls.chunks
    )
    UPDATE agent.knowledge_lexical_scopes s
       SET chunks = s.chunks + t.chunks, total_length = s.total_length + t.length,
           sources = s.sources + t.sources, source_length = s.source_length + t.length
      FROM (SELECT so.scope_id, sum(so.chunks) AS chunks, sum(so.length) AS length,
                   count(*) FILTER (WHERE u.chunks = so.chunks) AS sources
              FROM sources so JOIN sources_upserted u ON u.source_id = so.source_id AND u.scope_id = so.scope_id
             GROUP BY so.scope_id) AS t
     WHERE s.id = t.scope_id
$$;

CREATE OR REPLACE FUNCTION agent.knowledge_lexical_remove_chunks(p_chunk_ids bigint[]) RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, public
AS $$
    WITH removed AS MATERIALIZED (
        DELETE FROM agent.knowledge_postings p
         WHERE p.chunk_id = ANY (p_chunk_ids)
        RETURNING p.scope_id, p.lexeme, p.chunk_id, p.tf
    ), uncounted AS MATERIALIZED (
        DELETE FROM agent.knowledge_lexical_chunks k
         WHERE k.chunk_id = ANY (p_chunk_ids)
        RETURNING k.chunk_id, k.scope_id, k.source_id, k.chunk_length
    ), source_terms AS MATERIALIZED (
        SELECT r.scope_id, u.source_id, r.lexeme, sum(r.tf)::integer AS tf, count(*) AS chunks
          FROM removed r JOIN uncounted u ON u.chunk_id = r.chunk_id
         GROUP BY r.scope_id, u.source_id, r.lexeme
    ), source_terms_gone AS (
        -- The two writes touch disjoint rows: a term whose every occurrence leaves goes, any other shrinks.
        DELETE FROM agent.knowledge_source_terms st
         USING source_terms t
         WHERE st.source_id = t.source_id AND st.scope_id = t.scope_id AND st.lexeme = t.lexeme AND st.tf <= t.tf
        RETURNING st.source_id, st.scope_id, st.lexeme
    ), source_terms_shrunk AS (
        UPDATE agent.knowledge_source_terms st
           SET tf = st.tf - t.tf
          FROM source_terms t
         WHERE st.source_id = t.source_id AND st.scope_id = t.scope_id AND st.lexeme = t.lexeme AND st.tf > t.tf
    ), lexemes AS (
        -- An upsert of negative counts in lexeme order: concurrent writers lock the rows in one order.
        INSERT INTO agent.knowledge_lexemes AS l (scope_id, lexeme, df, source_df)
        SELECT t.scope_id, t.lexeme, -sum(t.chunks), -count(g.lexeme)
          FROM source_terms t
          LEFT JOIN source_terms_gone g ON g.source_id = t.source_id AND g.scope_id = t.scope_id AND g.lexeme = t.lexeme
         GROUP BY t.scope_id, t.lexeme ORDER BY t.scope_id, t.lexeme
        ON CONFLICT (scope_id, lexeme) DO UPDATE SET df = l.df + EXCLUDED.df, source_df = l.source_df + EXCLUDED.source_df
    ), sources AS MATERIALIZED (
        SELECT scope_id, source_id, count(*)::integer AS chunks, sum(chunk_length) AS length
          FROM uncounted GROUP BY scope_id, source_id
    ), sources_gone AS (
        DELETE FROM agent.knowledge_lexical_sources ls
         USING sources so
         WHERE ls.source_id = so.source_id AND ls.scope_id = so.scope_id AND ls.chunks <= so.chunks
        RETURNING ls.source_id, ls.scope_id
    ), sources_shrunk AS (
        UPDATE agent.knowledge_lexical_sources ls
           SET chunks = ls.chunks - so.chunks, length = ls.length - so.length
          FROM sources so
         WHERE ls.source_id = so.source_id AND ls.scope_id = so.scope_id AND ls.chunks > so.chunks
    )
    UPDATE agent.knowledge_lexical_scopes s
       SET chunks = s.chunks - t.chunks, total_length = s.total_length - t.length,
           sources = s.sources - t.sources, source_length = s.source_length - t.length
      FROM (SELECT so.scope_id, sum(so.chunks) AS chunks, sum(so.length) AS length, count(g.source_id) AS sources
              FROM sources so LEFT JOIN sources_gone g ON g.source_id = so.source_id AND g.scope_id = so.scope_id
             GROUP BY so.scope_id) AS t
     WHERE s.id = t.scope_id
$$;

-- Count what is counted today, from the postings (a posting exists exactly for a counted chunk).
INSERT INTO agent.knowledge_lexical_chunks (chunk_id, scope_id, source_id, chunk_length)
SELECT p.chunk_id, min(p.scope_id), c.source_id, min(p.chunk_length)
  FROM agent.knowledge_postings p JOIN agent.knowledge_chunks c ON c.id = p.chunk_id
 GROUP BY p.chunk_id, c.source_id;
INSERT INTO agent.knowledge_source_terms (source_id, scope_id, lexeme, tf)
SELECT k.source_id, p.scope_id, p.lexeme, sum(p.tf)
  FROM agent.knowledge_postings p JOIN agent.knowledge_lexical_chunks k ON k.chunk_id = p.chunk_id
 GROUP BY k.source_id, p.scope_id, p.lexeme;
INSERT INTO agent.knowledge_lexical_sources (source_id, scope_id, chunks, length)
SELECT source_id, scope_id, count(*), sum(chunk_length) FROM agent.knowledge_lexical_chunks GROUP BY source_id, scope_id;
UPDATE agent.knowledge_lexemes l
   SET source_df = t.n
  FROM (SELECT scope_id, lexeme, count(*) AS n FROM agent.knowledge_source_terms GROUP BY scope_id, lexeme) AS t
 WHERE l.scope_id = t.scope_id AND l.lexeme = t.lexeme;
UPDATE agent.knowledge_lexical_scopes s
   SET sources = t.n, source_length = t.length
  FROM (SELECT scope_id, count(*) AS n, sum(length) AS length FROM agent.knowledge_lexical_sources GROUP BY scope_id) AS t
 WHERE s.id = t.scope_id;
