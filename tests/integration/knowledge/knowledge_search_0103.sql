-- knowledge_search as migration 0103 wrote it (issue 43), kept for tests/integration/knowledge/test_search_static.py
-- after 0107 replaced it and 0103's copy was removed (issue 45): the dynamic statement (RETURN QUERY EXECUTE
-- format(...)) that the static per-model functions must answer exactly as. Not a migration; never applied.

CREATE FUNCTION public.knowledge_search(
    p_organization_id uuid,
    p_query_embedding vector,
    p_query_text text,
    p_include_platform boolean,
    p_include_organization boolean,
    p_limit integer,
    p_query_model text DEFAULT NULL,
    p_dense_weight double precision DEFAULT NULL,
    p_lexical_weight double precision DEFAULT NULL,
    p_candidates integer DEFAULT NULL,
    p_rrf_k integer DEFAULT 60,
    p_exact_below integer DEFAULT 10000,
    p_fusion text DEFAULT NULL,
    p_min_relevance double precision DEFAULT 0.0,
    p_per_source integer DEFAULT NULL,
    p_lexical_depth integer DEFAULT 200,
    p_ef_search integer DEFAULT NULL,
    p_k1 double precision DEFAULT 1.2,
    p_b double precision DEFAULT 0.75,
    p_source_weight double precision DEFAULT 0.75,
    p_keep_top integer DEFAULT 0,
    p_keep_floor double precision DEFAULT 0.0,
    p_explain boolean DEFAULT false,
    p_answer_cosine double precision DEFAULT NULL,
    p_answer_lexical double precision DEFAULT NULL
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
    score double precision,
    cut text,
    relevance double precision,
    placed text
)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, public
SET hnsw.iterative_scan = 'relaxed_order'
SET hnsw.ef_search = '200'
AS $fn$
#variable_conflict use_column
DECLARE
    v_model text;
    v_dims integer;
    v_fusion text;
    v_answer_cosine double precision;
    v_scopes integer[];
    v_walk integer;
    v_chunks bigint;
    v_avg double precision;
    v_sources bigint;
    v_source_avg double precision;
    v_source_idf double precision[];
    v_candidates integer;
    v_depth integer;
    v_terms text[];
    v_idf double precision[];
    v_common text[];
    v_common_idf double precision[];
    v_best double precision;
    v_k1 double precision := greatest(coalesce(p_k1, 1.2), 0.0);
    v_b double precision := least(greatest(coalesce(p_b, 0.75), 0.0), 1.0);
    v_dense double precision;
    v_lexical double precision;
    v_source double precision := least(greatest(coalesce(p_source_weight, 0.0), 0.0), 1.0);
BEGIN
    IF p_organization_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'knowledge_search needs an organization';
    END IF;
    IF p_limit IS NULL OR p_limit < 0 OR p_limit > 1000 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('p_limit must be within 0..1000, got %s', p_limit);
    END IF;
    IF p_fusion IS NOT NULL AND p_fusion NOT IN ('rrf', 'convex') THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('p_fusion must be rrf or convex, got %s', p_fusion);
    END IF;
    IF p_per_source IS NOT NULL AND p_per_source < 1 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('p_per_source must be positive, got %s', p_per_source);
    END IF;
    IF p_limit = 0 OR NOT (coalesce(p_include_platform, false) OR coalesce(p_include_organization, false)) THEN
        RETURN;
    END IF;

    -- The live model: the organization's own row, else the platform default, with its calibrated fusion
    -- (a caller's weights or method, when given, replace the model's).
    SELECT ks.active_embedding_model, m.dimensions, coalesce(p_fusion, m.fusion_method),
           greatest(coalesce(p_dense_weight, m.dense_weight), 0.0),
           greatest(coalesce(p_lexical_weight, m.lexical_weight), 0.0), coalesce(p_answer_cosine, m.answer_cosine)
      INTO v_model, v_dims, v_fusion, v_dense, v_lexical, v_answer_cosine
      FROM public.knowledge_settings ks
      JOIN agent.embedding_models m ON m.model_id = ks.active_embedding_model
     WHERE ks.organization_id = p_organization_id OR ks.organization_id IS NULL
     ORDER BY ks.organization_id NULLS LAST
     LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'KS001',
            MESSAGE = 'no knowledge_settings row names a live embedding model for this organization or the platform';
    END IF;
    IF v_dense = 0 AND v_lexical = 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'the dense and the lexical weight are both zero';
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
    IF p_ef_search IS NOT NULL THEN
        PERFORM set_config('hnsw.ef_search', least(greatest(p_ef_search, 1), 1000)::text, true);
    END IF;

    -- The scopes searched under this model, their statistics, and their searchable (ready, ready) sources.
    SELECT array_agg(sc.id), sum(sc.chunks), sum(sc.total_length)::double precision / nullif(sum(sc.chunks), 0),
           sum(sc.sources), sum(sc.source_length)::double precision / nullif(sum(sc.sources), 0)
      INTO v_scopes, v_chunks, v_avg, v_sources, v_source_avg
      FROM agent.knowledge_lexical_scopes sc
     WHERE sc.embedding_model = v_model
       AND ((p_include_platform AND sc.organization_id IS NULL)
            OR (p_include_organization AND sc.organization_id = p_organization_id));
    IF v_scopes IS NULL THEN
        RETURN;
    END IF;

    v_candidates := least(greatest(coalesce(p_candidates, p_limit * 4), p_limit, 1), 1000);
    -- A scope below p_exact_below chunks is scanned exactly and never walks (a walk of LIMIT 0 reads nothing).
    v_walk := CASE WHEN coalesce(v_chunks, 0) < coalesce(p_exact_below, 10000) OR v_dense = 0 THEN 0
                   ELSE v_candidates END;
    v_depth := least(greatest(coalesce(p_lexical_depth, 200), v_candidates), 100000);

    -- The query lexemes known to the scopes, with their IDF; those commoner than the depth are completed.
    IF v_lexical > 0 AND v_chunks > 0 THEN
        SELECT array_agg(t.lexeme ORDER BY t.lexeme), array_agg(t.idf ORDER BY t.lexeme),
               array_agg(t.lexeme ORDER BY t.lexeme) FILTER (WHERE t.max_df > v_depth),
               array_agg(t.idf ORDER BY t.lexeme) FILTER (WHERE t.max_df > v_depth),
               array_agg(t.source_idf ORDER BY t.lexeme),
               ((1 - v_source) * sum(t.idf) + v_source * sum(t.source_idf)) * (v_k1 + 1)
          INTO v_terms, v_idf, v_common, v_common_idf, v_source_idf, v_best
          FROM (SELECT l.lexeme, max(l.df) AS max_df,
                       ln(1 + (v_chunks - sum(l.df) + 0.5) / (sum(l.df) + 0.5)) AS idf,
                       ln(1 + (coalesce(v_sources, 0) - sum(l.source_df) + 0.5) / (sum(l.source_df) + 0.5))
                         AS source_idf
                  FROM agent.knowledge_lexemes l
                 WHERE l.scope_id = ANY (v_scopes) AND l.df > 0
                   AND l.lexeme = ANY (
                        SELECT DISTINCT q.lexeme
                          FROM unnest(tsvector_to_array(to_tsvector('english'::regconfig,
                                      left(coalesce(p_query_text, ''), 65536)))) AS q (lexeme)
                         LIMIT 256)
                 GROUP BY l.lexeme) AS t;
    END IF;

    -- Dynamic SQL only to write the model's literal and dimension into the statement, so the planner can
    -- match the model's partial index; both come from the model table, never from the caller.
    RETURN QUERY EXECUTE format($q$
        WITH dense_walk AS MATERIALIZED (
            -- The model's HNSW index with iterative scans; each candidate's (source, model) pair is checked
            -- by one primary-key probe, a scalar subquery the planner cannot turn into a hash of every pair.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(%1$s)) <=> $1::vector(%1$s) AS distance
              FROM agent.knowledge_chunks c
             WHERE c.embedding_model = %2$L
               AND (SELECT sp.scope_id FROM agent.knowledge_searchable sp
                     WHERE sp.source_id = c.source_id AND sp.embedding_model = %2$L) = ANY ($2)
             ORDER BY ((c.embedding::vector(%1$s)) <=> $1::vector(%1$s))
             LIMIT $22
        ), dense_exact AS MATERIALIZED (
            -- The scopes' own rows and no other: each searchable pair's chunks through the chunks' unique key
            -- (OFFSET 0 keeps the per-pair scan, so the cost follows the scope, not the table). The gate
            -- names no column, so it is a one-time filter: the scan never starts behind a full walk.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(%1$s)) <=> $1::vector(%1$s) AS distance
              FROM agent.knowledge_searchable sp
             CROSS JOIN LATERAL (
                    SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens, c.embedding
                      FROM agent.knowledge_chunks c
                     WHERE c.source_id = sp.source_id AND c.embedding_model = %2$L
                    OFFSET 0) AS c
             WHERE sp.scope_id = ANY ($2) AND sp.embedding_model = %2$L
               AND $5 > 0 AND (SELECT count(*) FROM dense_walk) < $3
             ORDER BY ((c.embedding::vector(%1$s)) <=> $1::vector(%1$s)) + 0
             LIMIT $3
        ), dense AS MATERIALIZED (
            -- Exactly one of the two: the walk when it filled the candidates, else the exact scan.
            SELECT w.* FROM dense_walk w WHERE (SELECT count(*) FROM dense_walk) >= $3
            UNION ALL
            SELECT e.* FROM dense_exact e
        ), fetched AS MATERIALIZED (
            SELECT p.chunk_id, t.lexeme,
                   t.idf * p.tf * ($13 + 1) / (p.tf + $13 * (1 - $14 + $14 * p.chunk_length / $15)) AS w
              FROM unnest($9::text[], $10::double precision[]) AS t (lexeme, idf)
             CROSS JOIN unnest($16::integer[]) AS sc (id)
             CROSS JOIN LATERAL (
                    SELECT p.chunk_id, p.tf, p.chunk_length
                      FROM agent.knowledge_postings p
                     WHERE p.scope_id = sc.id AND p.lexeme = t.lexeme
                     ORDER BY p.impact DESC, p.chunk_id
                     LIMIT $17) AS p
        ), partial AS MATERIALIZED (
            SELECT f.chunk_id, sum(f.w) AS w, array_agg(f.lexeme) AS seen
              FROM fetched f
             GROUP BY f.chunk_id
             ORDER BY w DESC, f.chunk_id
             LIMIT CASE WHEN $6 > 0 THEN $3 * 2 ELSE 0 END
        ), completed AS MATERIALIZED (
            -- Each partial candidate's own BM25, completed over the common lexemes, and its source (a
            -- primary-key probe of the counted chunks, only when the source's score is mixed in).
            SELECT pa.chunk_id,
                   CASE WHEN $23 > 0
                        THEN (SELECT k.source_id FROM agent.knowledge_lexical_chunks k WHERE k.chunk_id = pa.chunk_id)
                   END AS source_id,
                   pa.w + coalesce((
                       SELECT sum(t.idf * p.tf * ($13 + 1) / (p.tf + $13 * (1 - $14 + $14 * p.chunk_length / $15)))
                         FROM unnest($11::text[], $12::double precision[]) AS t (lexeme, idf)
                         JOIN agent.knowledge_postings p ON p.chunk_id = pa.chunk_id AND p.lexeme = t.lexeme
                        WHERE NOT (t.lexeme = ANY (pa.seen))), 0) AS bm25
              FROM partial pa
        ), source_scores AS MATERIALIZED (
            -- The candidates' sources scored as whole documents: their term frequencies and length over
            -- the scopes' source statistics (migrations/0092). Per source one probe of its length and one
            -- scan of its query lexemes in the source terms' primary key.
            SELECT ls.source_id,
                   sum(t.idf * st.tf * ($13 + 1) / (st.tf + $13 * (1 - $14 + $14 * ls.length / $25))) AS bm25
              FROM (SELECT DISTINCT co.source_id FROM completed co WHERE co.source_id IS NOT NULL) AS so
              JOIN agent.knowledge_lexical_sources ls ON ls.source_id = so.source_id AND ls.scope_id = ANY ($2)
              JOIN agent.knowledge_source_terms st
                ON st.source_id = ls.source_id AND st.scope_id = ls.scope_id AND st.lexeme = ANY ($9::text[])
              JOIN unnest($9::text[], $24::double precision[]) AS t (lexeme, idf) ON t.lexeme = st.lexeme
             GROUP BY ls.source_id
        ), lexical AS MATERIALIZED (
            SELECT co.id, (1 - $23) * co.bm25 + $23 * coalesce(ss.bm25, 0) AS bm25
              FROM (SELECT co.chunk_id AS id, co.source_id, co.bm25 FROM completed co) AS co
              LEFT JOIN source_scores ss ON ss.source_id = co.source_id
             ORDER BY 2 DESC, co.id
             LIMIT $3
        ), lexical_rows AS MATERIALIZED (
            -- The lexical candidates' rows by primary key (never a scan behind the row-level security
            -- filter), with their cosine distance for the relevance floor.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(%1$s)) <=> $1::vector(%1$s) AS distance
              FROM agent.knowledge_chunks c
             WHERE c.id = ANY (ARRAY(SELECT l.id FROM lexical l)) AND c.embedding_model = %2$L
        ), ranked_dense AS (
            SELECT d.*, row_number() OVER (ORDER BY d.distance, d.id) AS r FROM dense d
        ), ranked_lexical AS (
            SELECT l.id, l.bm25, row_number() OVER (ORDER BY l.bm25 DESC, l.id) AS r FROM lexical l
        ), fused AS (
            SELECT coalesce(d.id, lr.id) AS id, coalesce(d.source_id, lr.source_id) AS source_id,
                   coalesce(d.ordinal, lr.ordinal) AS ordinal, coalesce(d.text, lr.text) AS text,
                   coalesce(d.tokens, lr.tokens) AS tokens, d.r AS dr, l.r AS lr,
                   coalesce(d.distance, lr.distance) AS distance, l.bm25
              FROM ranked_dense d
              FULL JOIN (ranked_lexical l JOIN lexical_rows lr ON lr.id = l.id) ON l.id = d.id
        ), normalised AS (
            -- Each list's scores min-max normalised over that list; a chunk absent from a list scores 0 there.
            SELECT f.*,
                   CASE WHEN f.dr IS NULL THEN 0.0
                        ELSE coalesce(((1 - f.distance) - min(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER ())
                             / nullif(max(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER ()
                                      - min(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER (), 0), 1.0)
                   END AS dense_norm,
                   CASE WHEN f.bm25 IS NULL THEN 0.0
                        ELSE coalesce((f.bm25 - min(f.bm25) OVER ())
                             / nullif(max(f.bm25) OVER () - min(f.bm25) OVER (), 0), 1.0)
                   END AS lexical_norm
              FROM fused f
        ), scored AS (
            SELECT n.*,
                   CASE WHEN $18 = 'rrf'
                        THEN coalesce($5 / ($7 + n.dr), 0) + coalesce($6 / ($7 + n.lr), 0)
                        ELSE $5 * n.dense_norm + $6 * n.lexical_norm
                   END AS fused_score,
                   -- The floor's measure: the better of the cosine similarity and the BM25 over the query's best.
                   greatest(1 - n.distance, coalesce(n.bm25 / nullif($19, 0), 0)) AS relevance,
                   1 - n.distance AS cosine, coalesce(n.bm25 / nullif($19, 0), 0) AS lexical_share
              FROM normalised n
        ), answered AS (
            -- Is the query answered at all: its best candidate's cosine, or its best BM25 share, is enough.
            SELECT s.*, (coalesce(max(s.cosine) OVER (), 0) >= $28 OR coalesce(max(s.lexical_share) OVER (), 0) >= $29)
                   AS answered
              FROM scored s
        ), floored AS (
            -- The floor: an answered query's candidate relevant enough, or within a half's own top and above
            -- the lower floor.
            SELECT s.*,
                   (s.answered AND (s.relevance >= $20 OR (least(s.dr, s.lr) <= $26 AND s.relevance >= $27))) AS kept
              FROM answered s
        ), capped AS (
            SELECT s.*, row_number() OVER (PARTITION BY s.source_id, s.kept ORDER BY s.fused_score DESC, s.id) AS nth
              FROM floored s
             %3$s
        )
        %4$s
    $q$, v_dims, v_model,
    CASE WHEN p_explain THEN '' ELSE 'WHERE s.kept' END,
    CASE WHEN p_explain THEN format($t$
        , ordered AS (
            -- The kept candidates in the plain search's order: within their source's cap first, by score,
            -- then the capped ones filling what room the limit has left, by score.
            SELECT c.*, row_number() OVER (PARTITION BY c.kept ORDER BY c.nth > $21, c.fused_score DESC, c.id) AS pos
              FROM capped c
        ), placed AS (
            SELECT o.*, CASE WHEN NOT o.answered THEN 'query_unanswered'
                             WHEN NOT o.kept THEN 'relevance_floor'
                             WHEN o.pos > $8 AND o.nth > $21 THEN 'per_source_cap'
                             WHEN o.pos > $8 THEN 'beyond_limit' END AS rule
              FROM ordered o
        )
        SELECT f.id, f.source_id, s.title, s.organization_id, f.ordinal, f.text, f.tokens, %2$L::text,
               f.dr::integer, f.lr::integer, f.distance::double precision, f.bm25::real,
               f.fused_score::double precision, f.rule, f.relevance::double precision,
               CASE WHEN f.rule IS NOT NULL THEN NULL WHEN f.nth > $21 THEN 'cap_fill' ELSE 'rank' END
          FROM placed f
          JOIN agent.knowledge_sources s ON s.id = f.source_id
         ORDER BY f.rule IS NOT NULL, CASE WHEN f.rule IS NULL THEN f.pos END, f.fused_score DESC, f.id
    $t$, v_dims, v_model) ELSE format($t$
        SELECT f.id, f.source_id, s.title, s.organization_id, f.ordinal, f.text, f.tokens, %2$L::text,
               f.dr::integer, f.lr::integer, f.distance::double precision, f.bm25::real,
               f.fused_score::double precision, NULL::text, f.relevance::double precision,
               CASE WHEN f.nth > $21 THEN 'cap_fill' ELSE 'rank' END
          FROM capped f
          JOIN agent.knowledge_sources s ON s.id = f.source_id
         ORDER BY f.nth > $21, f.fused_score DESC, f.id
         LIMIT $8
    $t$, v_dims, v_model) END)
    USING p_query_embedding, v_scopes, v_candidates, NULL::tsquery, v_dense,
          CASE WHEN v_terms IS NULL THEN 0.0 ELSE v_lexical END,
          greatest(coalesce(p_rrf_k, 60), 1)::double precision, p_limit,
          coalesce(v_terms, '{}'), coalesce(v_idf, '{}'), coalesce(v_common, '{}'), coalesce(v_common_idf, '{}'),
          v_k1, v_b, coalesce(v_avg, 1.0), v_scopes, v_depth, v_fusion, v_best,
          coalesce(p_min_relevance, 0.0), coalesce(p_per_source, 1000), v_walk,
          v_source, coalesce(v_source_idf, '{}'), coalesce(v_source_avg, 1.0),
          greatest(coalesce(p_keep_top, 0), 0), coalesce(p_keep_floor, 0.0),
          coalesce(v_answer_cosine, '-Infinity'::double precision), coalesce(p_answer_lexical, 'Infinity'::double precision);
END
$fn$;
