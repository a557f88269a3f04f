-- knowledge_search planned once per model (issue 45). Supersedes the function of 0103 (same signature,
-- same results) and agent.ensure_embedding_model_index of 0010.
--
-- 0103 wrote its main statement with format() only to put the live model's literal and dimension in it (so
-- the planner matches the model's partial HNSW index) and ran it with RETURN QUERY EXECUTE: parsed, analysed
-- and planned on every call (bench/bench_search_planning.py: 100 plans in 100 calls, 1.85 ms of planning
-- beside 7.25 ms of execution at 3,000 chunks). Now every registered model has its own function,
-- agent.knowledge_search_<model>, holding the same statement as static SQL with the literal and the
-- dimension written in when the model is registered (agent.ensure_embedding_model_index, which every
-- registration already calls to build the model's index). PL/pgSQL keeps a static statement's plan for the
-- session, and plan_cache_mode = force_generic_plan makes it one generic plan from the first call (the
-- statement's parameters are scores and sizes, no value whose custom plan would differ in shape).
-- agent.knowledge_search_by_model(model, ...) dispatches to the model's function with one static call per
-- registered model; it is rewritten with every registration. knowledge_search keeps its prologue (the live
-- model, the scopes, the query lexemes) and its results: the statement text is 0103's, parameter for
-- parameter ($1..$29 are the model function's first 29 arguments, in 0103's USING order; $30 explain).
-- knowledge_search runs its own statements with generic plans too: the prologue's lexeme statement was
-- otherwise planned afresh on every call (custom plans chosen each time, 0.25-0.33 ms of planning beside
-- 0.13 ms of execution).
--
-- The model's identifiers come from agent.embedding_models (its literal through format's %L, its dimension an
-- integer column, the function's name derived like the index name), never from a caller.

-- The text of one model's search function: 0103's statement, the model's literal and dimension written in.
-- Its name is derived from the model id as the index name is (0010's generated column, the part after
-- 'knowledge_chunks_hnsw_'), so it can be named after the model's row is gone.
CREATE FUNCTION agent.knowledge_search_function_name(p_model_id text) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$ SELECT 'knowledge_search_' || left(regexp_replace(p_model_id, '[^a-z0-9]+', '_', 'g'), 30)
             || '_' || left(md5(p_model_id), 8) $$;

CREATE FUNCTION agent.write_knowledge_search_function(p_model_id text) RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $gen$
DECLARE
    m agent.embedding_models;
    v_name text;
    v_template text := $q$
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
    $q$;
    v_explain text;
    v_plain text;
BEGIN
    SELECT * INTO m FROM agent.embedding_models WHERE model_id = p_model_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'KS003',
            MESSAGE = format('embedding model %s is not registered in agent.embedding_models', p_model_id);
    END IF;
    v_name := agent.knowledge_search_function_name(m.model_id);
    v_explain := format(v_template, m.dimensions, m.model_id, '', format($t$
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
    $t$, m.dimensions, m.model_id));
    v_plain := format(v_template, m.dimensions, m.model_id, 'WHERE s.kept', format($t$
        SELECT f.id, f.source_id, s.title, s.organization_id, f.ordinal, f.text, f.tokens, %2$L::text,
               f.dr::integer, f.lr::integer, f.distance::double precision, f.bm25::real,
               f.fused_score::double precision, NULL::text, f.relevance::double precision,
               CASE WHEN f.nth > $21 THEN 'cap_fill' ELSE 'rank' END
          FROM capped f
          JOIN agent.knowledge_sources s ON s.id = f.source_id
         ORDER BY f.nth > $21, f.fused_score DESC, f.id
         LIMIT $8
    $t$, m.dimensions, m.model_id));
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION agent.%I(
    p_query_embedding vector,
    p_scopes integer[],
    p_candidates integer,
    p_unused tsquery,
    p_dense double precision,
    p_lexical double precision,
    p_rrf_k double precision,
    p_limit integer,
    p_terms text[],
    p_idf double precision[],
    p_common text[],
    p_common_idf double precision[],
    p_k1 double precision,
    p_b double precision,
    p_avg double precision,
    p_lexical_scopes integer[],
    p_depth integer,
    p_fusion text,
    p_best double precision,
    p_min_relevance double precision,
    p_per_source integer,
    p_walk integer,
    p_source double precision,
    p_source_idf double precision[],
    p_source_avg double precision,
    p_keep_top integer,
    p_keep_floor double precision,
    p_answer_cosine double precision,
    p_answer_lexical double precision,
    p_explain boolean
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
    SET plan_cache_mode = force_generic_plan
    AS %L
$f$, v_name, E'#variable_conflict use_column\nBEGIN\n    IF $30 THEN\n        RETURN QUERY' || v_explain
        || E';\n    ELSE\n        RETURN QUERY' || v_plain || E';\n    END IF;\nEND\n');
    EXECUTE format('COMMENT ON FUNCTION agent.%I IS %L', v_name,
        format('knowledge_search''s statement for %s (%s dimensions), written by agent.write_knowledge_search_function '
               '(migrations/0107); call knowledge_search, not this.', m.model_id, m.dimensions));
    EXECUTE format('REVOKE ALL ON FUNCTION agent.%I FROM PUBLIC', v_name);
    EXECUTE format('GRANT EXECUTE ON FUNCTION agent.%I TO ac_tenant, authenticated', v_name);
    RETURN v_name;
END
$gen$;

-- The dispatcher: one static call per model that has its function, rewritten after each one is written.
CREATE FUNCTION agent.write_knowledge_search_dispatch() RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $gen$
DECLARE
    v_cases text;
    v_count integer;
BEGIN
    SELECT string_agg(format(
               E'        WHEN %L THEN\n            RETURN QUERY SELECT * FROM agent.%I($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, '
               '$14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31);',
               m.model_id, agent.knowledge_search_function_name(m.model_id)), E'\n' ORDER BY m.model_id),
           count(*)
      INTO v_cases, v_count
      FROM agent.embedding_models m
     WHERE to_regproc('agent.' || quote_ident(agent.knowledge_search_function_name(m.model_id))) IS NOT NULL;
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION agent.knowledge_search_by_model(
    p_model text,
    p_query_embedding vector,
    p_scopes integer[],
    p_candidates integer,
    p_unused tsquery,
    p_dense double precision,
    p_lexical double precision,
    p_rrf_k double precision,
    p_limit integer,
    p_terms text[],
    p_idf double precision[],
    p_common text[],
    p_common_idf double precision[],
    p_k1 double precision,
    p_b double precision,
    p_avg double precision,
    p_lexical_scopes integer[],
    p_depth integer,
    p_fusion text,
    p_best double precision,
    p_min_relevance double precision,
    p_per_source integer,
    p_walk integer,
    p_source double precision,
    p_source_idf double precision[],
    p_source_avg double precision,
    p_keep_top integer,
    p_keep_floor double precision,
    p_answer_cosine double precision,
    p_answer_lexical double precision,
    p_explain boolean
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
    SET plan_cache_mode = force_generic_plan
    AS %L
$f$, E'BEGIN\n    CASE p_model\n' || coalesce(v_cases || E'\n', '')
        || E'        ELSE RAISE EXCEPTION USING ERRCODE = ''KS004'', MESSAGE = format(''embedding model %s has no search '
           'function: run agent.ensure_embedding_model_index'', p_model);\n    END CASE;\nEND\n');
    REVOKE ALL ON FUNCTION agent.knowledge_search_by_model(text, vector, integer[], integer, tsquery, double precision, double precision, double precision, integer, text[], double precision[], text[], double precision[], double precision, double precision, double precision, integer[], integer, text, double precision, double precision, integer, integer, double precision, double precision[], double precision, integer, double precision, double precision, double precision, boolean) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION agent.knowledge_search_by_model(text, vector, integer[], integer, tsquery, double precision, double precision, double precision, integer, text[], double precision[], text[], double precision[], double precision, double precision, double precision, integer[], integer, text, double precision, double precision, integer, integer, double precision, double precision[], double precision, integer, double precision, double precision, double precision, boolean) TO ac_tenant, authenticated;
    RETURN v_count;
END
$gen$;

-- Registration (0010's function, same name and result): the index, then the model's search function and the
-- dispatcher, under one lock so two registrations never rewrite the dispatcher at once.
CREATE OR REPLACE FUNCTION agent.ensure_embedding_model_index(p_model_id text) RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    m agent.embedding_models;
BEGIN
    SELECT * INTO m FROM agent.embedding_models WHERE model_id = p_model_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'KS003',
            MESSAGE = format('embedding model %s is not registered in agent.embedding_models', p_model_id);
    END IF;
    EXECUTE format(
        'CREATE INDEX IF NOT EXISTS %I ON agent.knowledge_chunks '
        'USING hnsw ((embedding::public.vector(%s)) public.vector_cosine_ops) WHERE embedding_model = %L',
        m.index_name, m.dimensions, m.model_id);
    PERFORM pg_advisory_xact_lock(hashtext('agent.knowledge_search_by_model'));
    PERFORM agent.write_knowledge_search_function(m.model_id);
    PERFORM agent.write_knowledge_search_dispatch();
    RETURN m.index_name;
END
$$;

-- Retiring a model (deleting its agent.embedding_models row, which the foreign keys allow only once no chunk,
-- readiness row, setting, switch or memory vector names it) takes what registration made: its search
-- function, its index, and its branch of the dispatcher. Nothing in the service deletes a model today; the
-- trigger keeps the functions and the table in step whoever does.
CREATE FUNCTION agent.drop_knowledge_search_function(p_model_id text) RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_name text := agent.knowledge_search_function_name(p_model_id);
    v_found boolean;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('agent.knowledge_search_by_model'));
    v_found := to_regproc('agent.' || quote_ident(v_name)) IS NOT NULL;
    EXECUTE format('DROP FUNCTION IF EXISTS agent.%I', v_name);
    -- The dispatcher names only models that are registered and have their function: this one no longer.
    PERFORM agent.write_knowledge_search_dispatch();
    RETURN v_found;
END
$$;

CREATE FUNCTION agent.embedding_model_deleted() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
BEGIN
    EXECUTE format('DROP INDEX IF EXISTS agent.%I', OLD.index_name);
    PERFORM agent.drop_knowledge_search_function(OLD.model_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER embedding_model_deleted AFTER DELETE ON agent.embedding_models
    FOR EACH ROW EXECUTE FUNCTION agent.embedding_model_deleted();

SELECT agent.write_knowledge_search_function(m.model_id) FROM agent.embedding_models m ORDER BY m.model_id;
SELECT agent.write_knowledge_search_dispatch();

REVOKE ALL ON FUNCTION agent.knowledge_search_function_name(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.drop_knowledge_search_function(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.embedding_model_deleted() FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.write_knowledge_search_function(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION agent.write_knowledge_search_dispatch() FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.knowledge_search(
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
SET plan_cache_mode = force_generic_plan
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

    -- The statement itself is the live model's own function (agent.knowledge_search_by_model dispatches
    -- to it): static, so each session plans it once, with the model's literal and dimension written in.
    RETURN QUERY
    SELECT * FROM agent.knowledge_search_by_model(
        v_model, p_query_embedding, v_scopes, v_candidates, NULL::tsquery, v_dense,
        CASE WHEN v_terms IS NULL THEN 0.0 ELSE v_lexical END,
        greatest(coalesce(p_rrf_k, 60), 1)::double precision, p_limit,
        coalesce(v_terms, '{}'), coalesce(v_idf, '{}'), coalesce(v_common, '{}'), coalesce(v_common_idf, '{}'),
        v_k1, v_b, coalesce(v_avg, 1.0), v_scopes, v_depth, v_fusion, v_best,
        coalesce(p_min_relevance, 0.0), coalesce(p_per_source, 1000), v_walk,
        v_source, coalesce(v_source_idf, '{}'), coalesce(v_source_avg, 1.0),
        greatest(coalesce(p_keep_top, 0), 0), coalesce(p_keep_floor, 0.0),
        coalesce(v_answer_cosine, '-Infinity'::double precision), coalesce(p_answer_lexical, 'Infinity'::double precision),
        coalesce(p_explain, false));
END
$fn$;

COMMENT ON FUNCTION public.knowledge_search(uuid, vector, text, boolean, boolean, integer, text,
    double precision, double precision, integer, integer, integer, text, double precision, integer, integer,
    integer, double precision, double precision, double precision, integer, double precision, boolean,
    double precision, double precision) IS
    'Hybrid (dense + Okapi BM25 of the chunk mixed with its source''s, fused as the live model is calibrated; a floor that keeps either half''s top or an answered query''s ranking; a per-source cap that fills what the limit leaves) search of ready knowledge under the live model, its statement planned once per session by the model''s own function; SECURITY INVOKER.';

-- 0103's grants, here since 0103's copy of the function is gone (a fresh database creates it in this file).
REVOKE ALL ON FUNCTION public.knowledge_search(uuid, vector, text, boolean, boolean, integer, text,
    double precision, double precision, integer, integer, integer, text, double precision, integer, integer,
    integer, double precision, double precision, double precision, integer, double precision, boolean,
    double precision, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.knowledge_search(uuid, vector, text, boolean, boolean, integer, text,
    double precision, double precision, integer, integer, integer, text, double precision, integer, integer,
    integer, double precision, double precision, double precision, integer, double precision, boolean,
    double precision, double precision) TO ac_tenant, authenticated;
