-- Memory relevance's dense half through an HNSW index (issue 45, item 4).
--
-- 0104's read scored every vector of the person exactly: at 10,000 memories about 6 ms of the read's CPU
-- (a distance per vector, the sort), whatever the question. Every registered model now gets a partial HNSW
-- index on agent.memory_embeddings, as it has one on knowledge_chunks (the cast to the model's dimension,
-- only the model's rows), and the read (memory/queries.sql, fetch_relevant_memories) takes the dense half's
-- best k (memory id, cosine distance) of an organization's owners:
--
-- * from agent.memory_dense_walk, which walks the model's index with pgvector's iterative scans (relaxed
--   order, then sorted), when the owners hold at least the read's `walk_above` revisions (called only then)
--   and at least a tenth of the index (a walk through a graph of mostly other people's vectors would visit
--   ten of theirs for each of the owners': below that the exact scan is cheaper), and the walk filled k;
-- * else, or when the walk fell short (a filter the graph could not satisfy within hnsw.max_scan_tuples), by
--   the exact scan of 0104: the owners' vectors of the model by (model, organization, owner), every one scored.
--
-- The walk's statement needs the model's literal and dimension to match the partial index, so it is written
-- with format() from agent.embedding_models (never from a caller) and planned on each call: a statement of
-- one scan, a fraction of a millisecond. The exact scan stays static SQL in the read. Neither reads
-- agent.memories: liveness, scope and supersession stay the read's checks, one probe per kept candidate.
--
-- The index is created for every registered model here and for every model registered later by a trigger
-- on agent.embedding_models (whoever registers it: the switchover, a test, a bench), so no registration path
-- can forget it. Its name is derived from the model's knowledge index name (agent.embedding_models.index_name).

CREATE FUNCTION agent.memory_embedding_index_name(p_index_name text) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$ SELECT 'memory_embeddings_hnsw_' || substr(p_index_name, length('knowledge_chunks_hnsw_') + 1) $$;

CREATE FUNCTION agent.ensure_memory_embedding_index(p_model_id text) RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    m agent.embedding_models;
    v_name text;
BEGIN
    SELECT * INTO m FROM agent.embedding_models WHERE model_id = p_model_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'KS003',
            MESSAGE = format('embedding model %s is not registered in agent.embedding_models', p_model_id);
    END IF;
    v_name := agent.memory_embedding_index_name(m.index_name);
    EXECUTE format(
        'CREATE INDEX IF NOT EXISTS %I ON agent.memory_embeddings '
        'USING hnsw ((embedding::public.vector(%s)) public.vector_cosine_ops) WHERE embedding_model = %L',
        v_name, m.dimensions, m.model_id);
    RETURN v_name;
END
$$;

CREATE FUNCTION agent.memory_embedding_index_on_register() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM agent.ensure_memory_embedding_index(NEW.model_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER memory_embedding_index_on_register AFTER INSERT ON agent.embedding_models
    FOR EACH ROW EXECUTE FUNCTION agent.memory_embedding_index_on_register();

SELECT agent.ensure_memory_embedding_index(m.model_id) FROM agent.embedding_models AS m ORDER BY m.model_id;

-- The walk: the owners' best p_k vectors under p_model through the model's HNSW index, (memory id, cosine
-- distance) nearest first, ties by id; no rows when the walk would not pay or could not answer (a NULL
-- query, an unregistered model or a vector of another dimension, owners holding less than a tenth of the
-- index, or a walk that found fewer than p_k: the caller then scores the owners' vectors exactly).
-- p_owner_rows: the owners' revisions with text (the read's BM25 count).
CREATE FUNCTION agent.memory_dense_walk(
    p_organization_id uuid,
    p_owners uuid[],
    p_model text,
    p_query vector,
    p_k integer,
    p_owner_rows bigint
) RETURNS TABLE (memory_id uuid, distance double precision)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, public
SET hnsw.iterative_scan = 'relaxed_order'
SET hnsw.ef_search = '200'
SET enable_sort = off  -- the walk's plan is the index's order, never a sort of the owners' rows
AS $$
DECLARE
    m agent.embedding_models;
    v_index_rows real;
    v_ids uuid[];
    v_distances double precision[];
BEGIN
    IF p_query IS NULL OR p_model IS NULL OR p_k <= 0 THEN
        RETURN;
    END IF;
    SELECT * INTO m FROM agent.embedding_models AS e WHERE e.model_id = p_model;
    IF NOT FOUND OR vector_dims(p_query) <> m.dimensions THEN
        RETURN;
    END IF;
    SELECT c.reltuples INTO v_index_rows
      FROM pg_class AS c
     WHERE c.oid = to_regclass('agent.' || agent.memory_embedding_index_name(m.index_name));
    IF v_index_rows IS NULL OR p_owner_rows < 0.1 * v_index_rows THEN
        RETURN;
    END IF;
    EXECUTE format($walk$
        SELECT array_agg(w.memory_id ORDER BY w.distance, w.memory_id),
               array_agg(w.distance ORDER BY w.distance, w.memory_id)
          FROM (SELECT e.memory_id, (e.embedding::vector(%1$s)) <=> $1::vector(%1$s) AS distance
                  FROM agent.memory_embeddings AS e
                 WHERE e.embedding_model = %2$L
                   AND e.organization_id = $2 AND e.scope_owner_id = ANY ($3)
                 ORDER BY (e.embedding::vector(%1$s)) <=> $1::vector(%1$s)
                 LIMIT $4) AS w
    $walk$, m.dimensions, m.model_id)
    INTO v_ids, v_distances
    USING p_query, p_organization_id, p_owners, p_k;
    IF cardinality(v_ids) >= p_k THEN
        RETURN QUERY SELECT u.id, u.d FROM unnest(v_ids, v_distances) WITH ORDINALITY AS u (id, d, n) ORDER BY u.n;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION agent.memory_embedding_index_name(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.ensure_memory_embedding_index(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.memory_embedding_index_on_register() FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.memory_dense_walk(uuid, uuid[], text, vector, integer, bigint) FROM PUBLIC;
