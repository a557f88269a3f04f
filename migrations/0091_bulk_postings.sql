-- Bulk postings (issue 24, part 3): the set-wise writes of the lexical statistics, lighter per statement.
--
-- The statistics of migrations/0040 are kept by statement-level triggers with transition tables, so a
-- bulk write (knowledge/bulk.py: COPY into staging, one merge, one `mark_staged_ready`) already counts
-- its chunks in one set-wise call: the readiness flip lists the pairs and `knowledge_lexical_add_chunks`
-- writes every posting of every chunk of the write in one INSERT. The only row-level trigger is the
-- rewrite of one chunk's text. What a bulk write paid beyond the postings themselves, and what this
-- migration takes away (docs/decisions.md, "Issue 24: bulk postings", has the figures):
--
-- - `knowledge_lexical_add_chunks` counted what it inserted by reading its own RETURNING back (30 rows
--   per chunk). It now builds the chunk set once and counts from it: an INSERT without ON CONFLICT
--   writes every row it is given or fails the statement, so the set is exactly what was written.
-- - `knowledge_lexical_sync` called the per-row scope function for every ready pair of its sources,
--   listed or not, and a `mark_staged_ready` runs it twice (once per table it updates). It now skips
--   pairs already listed, creates the missing scopes in one statement and lists the new pairs by a hash
--   join on the scopes: `IS NOT DISTINCT FROM` alone (the platform is a NULL organization) cannot be
--   hashed and would compare every pair with every scope; the nil uuid stands for NULL in the hash key.
--
-- Both keep their signatures and supersede the bodies of 0040 (which 0063 still calls while migrating);
-- the triggers of 0040 call them unchanged. Statistics stay exact: tests/integration/knowledge/
-- test_bulk_postings.py compares the bulk path with single-row writes and with a recount from the chunks.

CREATE OR REPLACE FUNCTION agent.knowledge_lexical_add_chunks(p_chunk_ids bigint[]) RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, public
AS $$
    WITH chunks AS MATERIALIZED (
        -- The chunks to count: in a searchable pair, not counted yet, with at least one lexeme.
        SELECT c.id, sp.scope_id, c.fts, len.n
          FROM agent.knowledge_chunks c
          JOIN agent.knowledge_searchable sp ON sp.source_id = c.source_id AND sp.embedding_model = c.embedding_model
         CROSS JOIN LATERAL (SELECT sum(cardinality(x.positions))::integer AS n FROM unnest(c.fts) AS x) AS len
         WHERE c.id = ANY (p_chunk_ids) AND len.n > 0
           AND NOT EXISTS (SELECT 1 FROM agent.knowledge_postings q WHERE q.chunk_id = c.id)
    ), terms AS MATERIALIZED (
        SELECT ch.id AS chunk_id, u.lexeme, ch.scope_id, cardinality(u.positions) AS tf, ch.n AS chunk_length
          FROM chunks ch CROSS JOIN LATERAL unnest(ch.fts) AS u
    ), added AS (
        INSERT INTO agent.knowledge_postings (chunk_id, lexeme, scope_id, tf, chunk_length, impact)
        SELECT chunk_id, lexeme, scope_id, tf, chunk_length,
               tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * chunk_length / 64.0))
          FROM terms
         ORDER BY scope_id, lexeme  -- in list-index order: a bulk insert walks the index once instead of at random
    ), lexemes AS (
        INSERT INTO agent.knowledge_lexemes AS l (scope_id, lexeme, df)
        SELECT scope_id, lexeme, count(*) FROM terms GROUP BY scope_id, lexeme ORDER BY scope_id, lexeme
        ON CONFLICT (scope_id, lexeme) DO UPDATE SET df = l.df + EXCLUDED.df
    )
    UPDATE agent.knowledge_lexical_scopes s
       SET chunks = s.chunks + t.n, total_length = s.total_length + t.len
      FROM (SELECT scope_id, count(*) AS n, sum(n) AS len FROM chunks GROUP BY scope_id) AS t
     WHERE s.id = t.scope_id
$$;

CREATE OR REPLACE FUNCTION agent.knowledge_lexical_sync(p_source_ids uuid[]) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_leaving bigint[];
    v_joining bigint[];
BEGIN
    IF p_source_ids IS NULL OR cardinality(p_source_ids) = 0 THEN
        RETURN;
    END IF;
    -- Pairs that stop being searchable (or whose rows are gone): uncount their chunks, then unlist them.
    WITH leaving AS (
        DELETE FROM agent.knowledge_searchable sp
         WHERE sp.source_id = ANY (p_source_ids)
           AND NOT EXISTS (
                SELECT 1 FROM agent.knowledge_sources s
                  JOIN agent.knowledge_source_models r ON r.source_id = s.id
                  JOIN agent.knowledge_lexical_scopes sc ON sc.id = sp.scope_id
                 WHERE s.id = sp.source_id AND r.embedding_model = sp.embedding_model
                   AND s.status = 'ready' AND r.status = 'ready'
                   AND sc.organization_id IS NOT DISTINCT FROM s.organization_id)
        RETURNING sp.source_id, sp.embedding_model
    )
    SELECT array_agg(c.id) INTO v_leaving
      FROM leaving l JOIN agent.knowledge_chunks c
        ON c.source_id = l.source_id AND c.embedding_model = l.embedding_model;
    IF v_leaving IS NOT NULL THEN
        PERFORM agent.knowledge_lexical_remove_chunks(v_leaving);
    END IF;
    -- The scopes of the pairs that become searchable, created in one statement (a conflict waits for a
    -- concurrent creator; the next statement's snapshot sees its row).
    INSERT INTO agent.knowledge_lexical_scopes (organization_id, embedding_model)
    SELECT DISTINCT s.organization_id, r.embedding_model
      FROM agent.knowledge_sources s
      JOIN agent.knowledge_source_models r ON r.source_id = s.id
     WHERE s.id = ANY (p_source_ids) AND s.status = 'ready' AND r.status = 'ready'
       AND NOT EXISTS (SELECT 1 FROM agent.knowledge_searchable sp
                        WHERE sp.source_id = s.id AND sp.embedding_model = r.embedding_model)
       AND NOT EXISTS (SELECT 1 FROM agent.knowledge_lexical_scopes sc
                        WHERE coalesce(sc.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
                              = coalesce(s.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
                          AND sc.organization_id IS NOT DISTINCT FROM s.organization_id
                          AND sc.embedding_model = r.embedding_model)
     ORDER BY 1, 2
    ON CONFLICT ON CONSTRAINT knowledge_lexical_scopes_key DO NOTHING;
    -- Pairs that become searchable: list them under their scope, then count their chunks.
    WITH joining AS (
        INSERT INTO agent.knowledge_searchable (source_id, embedding_model, scope_id)
        SELECT s.id, r.embedding_model, sc.id
          FROM agent.knowledge_sources s
          JOIN agent.knowledge_source_models r ON r.source_id = s.id
          -- LEFT: a scope this statement cannot see fails it (scope_id is NOT NULL) rather than leave the pair out.
          LEFT JOIN agent.knowledge_lexical_scopes sc
            ON coalesce(sc.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
               = coalesce(s.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
           AND sc.organization_id IS NOT DISTINCT FROM s.organization_id AND sc.embedding_model = r.embedding_model
         WHERE s.id = ANY (p_source_ids) AND s.status = 'ready' AND r.status = 'ready'
           AND NOT EXISTS (SELECT 1 FROM agent.knowledge_searchable sp
                            WHERE sp.source_id = s.id AND sp.embedding_model = r.embedding_model)
         ORDER BY s.id, r.embedding_model
        ON CONFLICT (source_id, embedding_model) DO NOTHING
        RETURNING source_id, embedding_model
    )
    SELECT array_agg(c.id) INTO v_joining
      FROM joining j JOIN agent.knowledge_chunks c
        ON c.source_id = j.source_id AND c.embedding_model = j.embedding_model;
    IF v_joining IS NOT NULL THEN
        PERFORM agent.knowledge_lexical_add_chunks(v_joining);
    END IF;
END
$$;
