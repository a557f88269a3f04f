-- Cheaper writes for bulk ingestion (issue 11, second pass).
--
-- 1. The GIN index on knowledge_chunks.fts goes: knowledge_search reads the postings (0041) and nothing else
--    searches the tsvector, so every chunk insert paid for an index no query used. The `fts` column stays:
--    the postings are made from it.
-- 2. knowledge_lexical_sync looks up the lexical scope once per distinct (organization, model) of the pairs
--    joining, not once per pair (a wave of 1,000 sources called the lookup 2,000 times).
-- 3. The triggers hand a source to the sync only when its searchability can have changed: its status moved
--    into or out of 'ready', or its organization changed (a pending -> failed move, or a row rewritten
--    without either, changes nothing the sync reads).

DROP INDEX agent.knowledge_chunks_fts_idx;

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
    -- Pairs that become searchable: list them under their scope (looked up once per scope), then count
    -- their chunks. Pairs listed already are skipped before any lookup.
    WITH pairs AS MATERIALIZED (
        SELECT s.id AS source_id, s.organization_id, r.embedding_model
          FROM agent.knowledge_sources s
          JOIN agent.knowledge_source_models r ON r.source_id = s.id
         WHERE s.id = ANY (p_source_ids) AND s.status = 'ready' AND r.status = 'ready'
           AND NOT EXISTS (SELECT 1 FROM agent.knowledge_searchable sp
                            WHERE sp.source_id = s.id AND sp.embedding_model = r.embedding_model)
    ), scopes AS MATERIALIZED (
        SELECT d.organization_id, d.embedding_model,
               agent.knowledge_lexical_scope(d.organization_id, d.embedding_model) AS scope_id
          FROM (SELECT DISTINCT organization_id, embedding_model FROM pairs) AS d
    ), joining AS (
        INSERT INTO agent.knowledge_searchable (source_id, embedding_model, scope_id)
        SELECT p.source_id, p.embedding_model, sc.scope_id
          FROM pairs p
          JOIN scopes sc ON sc.organization_id IS NOT DISTINCT FROM p.organization_id
                        AND sc.embedding_model = p.embedding_model
         ORDER BY p.source_id, p.embedding_model
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

CREATE OR REPLACE FUNCTION agent.knowledge_lexical_on_readiness() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_sources uuid[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT n.source_id) INTO v_sources FROM new_rows n WHERE n.status = 'ready';
    ELSIF TG_OP = 'UPDATE' THEN
        SELECT array_agg(DISTINCT n.source_id) INTO v_sources
          FROM new_rows n JOIN old_rows o ON o.source_id = n.source_id AND o.embedding_model = n.embedding_model
         WHERE (o.status = 'ready') IS DISTINCT FROM (n.status = 'ready');
    ELSE
        SELECT array_agg(DISTINCT o.source_id) INTO v_sources
          FROM old_rows o
         WHERE EXISTS (SELECT 1 FROM agent.knowledge_searchable sp
                        WHERE sp.source_id = o.source_id AND sp.embedding_model = o.embedding_model);
    END IF;
    PERFORM agent.knowledge_lexical_sync(v_sources);
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION agent.knowledge_lexical_on_source() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_sources uuid[];
BEGIN
    IF TG_OP = 'UPDATE' THEN
        SELECT array_agg(n.id) INTO v_sources
          FROM new_rows n JOIN old_rows o ON o.id = n.id
         WHERE (o.status = 'ready') IS DISTINCT FROM (n.status = 'ready')
            OR o.organization_id IS DISTINCT FROM n.organization_id;
    ELSE
        SELECT array_agg(o.id) INTO v_sources
          FROM old_rows o WHERE EXISTS (SELECT 1 FROM agent.knowledge_searchable sp WHERE sp.source_id = o.id);
    END IF;
    PERFORM agent.knowledge_lexical_sync(v_sources);
    RETURN NULL;
END
$$;
