-- knowledge_search: hybrid search over the ready knowledge of one organization under one model.
--
-- SECURITY INVOKER, so a user-key caller stays subject to row-level security; the explicit organization
-- filter protects the service-key path. One search reads one model: the organization's live model, else
-- the platform default, and every chunk it reads (platform and organization alike) is filtered to it.
-- Dense candidates come from an exact scan of a small scope (fewer than p_exact_below chunks), else from
-- that model's partial HNSW index with iterative scans (so a filter does not starve a small tenant);
-- lexical candidates from the English full-text column (any query term matches, ranked by ts_rank); both
-- fused by weighted reciprocal rank: w / (k + rank) summed over both lists.
--
-- SQLSTATEs raised: KS001 no knowledge_settings row names a live model; KS002 the caller embedded the
-- query with another model than the live one (the model flipped in between: embed again); 22023 a bad
-- argument (wrong query dimension, negative limit, no organization).

-- OR of tsqueries, used to turn the query text's lexemes into "any term matches".
CREATE AGGREGATE agent.tsquery_or_agg(tsquery) (SFUNC = tsquery_or, STYPE = tsquery);

CREATE FUNCTION public.knowledge_search(
    p_organization_id uuid,
    p_query_embedding vector,
    p_query_text text,
    p_include_platform boolean,
    p_include_organization boolean,
    p_limit integer,
    p_query_model text DEFAULT NULL,
    p_dense_weight double precision DEFAULT 1.0,
    p_lexical_weight double precision DEFAULT 1.0,
    p_candidates integer DEFAULT NULL,
    p_rrf_k integer DEFAULT 60,
    p_exact_below integer DEFAULT 10000
) RETURNS TABLE (
    chunk_id bigint,
    source_id uuid,
    source_title text,
    source_organization_id uuid,
    ordinal integer,
    text text,
    tokens integer,
    embedding_model text,
    dense_rank integer,
    lexical_rank integer,
    dense_distance double precision,
    lexical_score real,
    score double precision
)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, public
SET hnsw.iterative_scan = 'relaxed_order'
SET hnsw.ef_search = '100'
AS $fn$
#variable_conflict use_column
DECLARE
    v_model text;
    v_dims integer;
    v_sources uuid[];
    v_scope_chunks bigint;
    v_order_suffix text;
    v_candidates integer;
    v_query tsquery;
BEGIN
    IF p_organization_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'knowledge_search needs an organization';
    END IF;
    IF p_limit IS NULL OR p_limit < 0 OR p_limit > 1000 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('p_limit must be within 0..1000, got %s', p_limit);
    END IF;
    IF p_limit = 0 OR NOT (coalesce(p_include_platform, false) OR coalesce(p_include_organization, false)) THEN
        RETURN;
    END IF;

    -- The live model: the organization's own row, else the platform default.
    SELECT ks.active_embedding_model, m.dimensions INTO v_model, v_dims
      FROM public.knowledge_settings ks
      JOIN agent.embedding_models m ON m.model_id = ks.active_embedding_model
     WHERE ks.organization_id = p_organization_id OR ks.organization_id IS NULL
     ORDER BY ks.organization_id NULLS LAST
     LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'KS001',
            MESSAGE = 'no knowledge_settings row names a live embedding model for this organization or the platform';
    END IF;
    IF p_query_model IS NOT NULL AND p_query_model <> v_model THEN
        RAISE EXCEPTION USING ERRCODE = 'KS002',
            MESSAGE = format('the query was embedded with %s but the live model is %s', p_query_model, v_model);
    END IF;
    IF p_query_embedding IS NULL OR vector_dims(p_query_embedding) <> v_dims THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('the query embedding has %s dimensions; the live model %s has %s',
                             vector_dims(p_query_embedding), v_model, v_dims);
    END IF;

    -- The ready sources in scope, ready under this very model.
    SELECT array_agg(s.id), sum(r.chunk_count) INTO v_sources, v_scope_chunks
      FROM agent.knowledge_sources s
      JOIN agent.knowledge_source_models r
        ON r.source_id = s.id AND r.embedding_model = v_model AND r.status = 'ready'
     WHERE s.status = 'ready'
       AND ((p_include_platform AND s.organization_id IS NULL)
            OR (p_include_organization AND s.organization_id = p_organization_id));
    IF v_sources IS NULL THEN
        RETURN;
    END IF;

    -- A small scope is ranked exactly (a scan of its few chunks beats a filtered graph walk, and it is
    -- complete); a large one walks the model's HNSW index with iterative scans. The suffix only defeats the
    -- index match of the ORDER BY expression; it is one of two constants.
    v_order_suffix := CASE WHEN v_scope_chunks < coalesce(p_exact_below, 10000) THEN ' + 0' ELSE '' END;
    v_candidates := least(greatest(coalesce(p_candidates, p_limit * 4), p_limit, 1), 1000);
    SELECT agent.tsquery_or_agg(plainto_tsquery('simple', lexeme)) INTO v_query
      FROM (SELECT lexeme
              FROM unnest(tsvector_to_array(to_tsvector('english'::regconfig, left(coalesce(p_query_text, ''), 65536))))
                   AS lexeme
             LIMIT 256) AS terms;
    IF v_query IS NOT NULL AND numnode(v_query) = 0 THEN
        v_query := NULL;
    END IF;

    -- Dynamic SQL only to write the model's literal and dimension into the statement, so the planner can
    -- match the model's partial index; both come from the model table, never from the caller.
    RETURN QUERY EXECUTE format($q$
        WITH dense AS MATERIALIZED (
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(%1$s)) <=> $1::vector(%1$s) AS distance
              FROM agent.knowledge_chunks c
             WHERE c.embedding_model = %2$L AND c.source_id = ANY ($2)
             ORDER BY ((c.embedding::vector(%1$s)) <=> $1::vector(%1$s))%3$s
             LIMIT CASE WHEN $5 > 0 THEN $3 ELSE 0 END
        ), lexical AS MATERIALIZED (
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens, ts_rank(c.fts, $4) AS rank_score
              FROM agent.knowledge_chunks c
             WHERE c.embedding_model = %2$L AND c.source_id = ANY ($2) AND c.fts @@ $4
             ORDER BY rank_score DESC, c.id
             LIMIT CASE WHEN $6 > 0 THEN $3 ELSE 0 END
        ), ranked_dense AS (
            SELECT *, row_number() OVER (ORDER BY distance, id) AS r FROM dense
        ), ranked_lexical AS (
            SELECT *, row_number() OVER (ORDER BY rank_score DESC, id) AS r FROM lexical
        ), fused AS (
            -- The candidates carry their own columns: joining the chunk table again would let the planner
            -- scan it whole behind the row-level security filter, whose selectivity it cannot estimate.
            SELECT coalesce(d.id, l.id) AS id, coalesce(d.source_id, l.source_id) AS source_id,
                   coalesce(d.ordinal, l.ordinal) AS ordinal, coalesce(d.text, l.text) AS text,
                   coalesce(d.tokens, l.tokens) AS tokens, d.r AS dr, l.r AS lr, d.distance, l.rank_score,
                   coalesce($5 / ($7 + d.r), 0) + coalesce($6 / ($7 + l.r), 0) AS fused_score
              FROM ranked_dense d FULL JOIN ranked_lexical l ON l.id = d.id
        )
        SELECT f.id, f.source_id, s.title, s.organization_id, f.ordinal, f.text, f.tokens, %2$L::text,
               f.dr::integer, f.lr::integer, f.distance::double precision, f.rank_score::real,
               f.fused_score::double precision
          FROM fused f
          JOIN agent.knowledge_sources s ON s.id = f.source_id
         ORDER BY f.fused_score DESC, f.id
         LIMIT $8
    $q$, v_dims, v_model, v_order_suffix)
    USING p_query_embedding, v_sources, v_candidates, v_query,
          greatest(coalesce(p_dense_weight, 1.0), 0.0), greatest(coalesce(p_lexical_weight, 1.0), 0.0),
          greatest(coalesce(p_rrf_k, 60), 1)::double precision, p_limit;
END
$fn$;

COMMENT ON FUNCTION public.knowledge_search(uuid, vector, text, boolean, boolean, integer, text,
    double precision, double precision, integer, integer, integer) IS
    'Hybrid (dense + full-text, reciprocal rank fusion) search of ready knowledge under the live model; SECURITY INVOKER.';
