-- Memory read by relevance, bounded (issue 43, item 5): the read no longer loops over every memory in scope.
--
-- 0101's read materialised the subject's whole live scope, read every posting of each query lexeme (a word
-- every memory holds meant every memory) and computed the distance of every vector in the tenant's
-- embeddings table joined to that scope; and, as one prepared statement, after five calls on a connection
-- PostgreSQL cached a generic plan that scanned the scope whatever the parameters (38 ms against 12 ms).
-- This migration gives the read the shape knowledge_search has:
--
-- * agent.memory_postings gains the revision's BM25 length and an impact (the posting's BM25 term weight at
--   k1 1.2, b 0.75 and a reference length of 12 lexemes: within one lexeme, the order of its contribution),
--   and an index in impact order per (organization, scope owner, lexeme): the lexical half reads a common
--   lexeme (one in more than a fifth of the owners' revisions, and more than p_depth) only to its p_depth
--   best postings, then completes the score of its best partial candidates with the postings of the
--   lexemes it cut (primary-key probes), as knowledge_search does; every other lexeme is read whole (a
--   question's names and rare words decide the rank, so they are never cut).
-- * agent.memory_embeddings gains the revision's organization and scope owner, and an index per (model,
--   organization, owner): the dense half reads the owners' vectors of the query's model alone (exact, no
--   HNSW: one person's rows), never another tenant's.
-- * BM25's statistics (the count and average length, each lexeme's document frequency) are the owners'
--   revisions with text, read from indexes (an index-only count), not the live scope; a superseded,
--   forgotten or expired revision, or one of another definition, counts too. Only the statistics: the
--   candidates each half keeps are checked live and in scope, revision by revision, before the cut.
-- * A candidate is live and in scope by the live view's rule (no tombstone, not expired, no child) and the
--   source's (the organization; the definition unless NULL; `personal`: the person's user-scope preferences,
--   else organization scope and the person's own user chain), written out where each half keeps candidates.
-- * agent.memory_relevance is the read, a PL/pgSQL function planned for its arguments on every call
--   (plan_cache_mode = force_custom_plan): the plan that fits one person's 20 memories never serves another's
--   10,000 after the fifth call on a connection.
--
-- The indexes stay what 0101 made them: rows of a revision, removed with it by cascade (erasure leaves none).

ALTER TABLE agent.memory_postings ADD COLUMN lexical_length integer, ADD COLUMN impact real;
UPDATE agent.memory_postings AS p
   SET lexical_length = m.lexical_length,
       impact = p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * m.lexical_length / 12.0))
  FROM agent.memories AS m
 WHERE m.id = p.memory_id;
ALTER TABLE agent.memory_postings ALTER COLUMN lexical_length SET NOT NULL, ALTER COLUMN impact SET NOT NULL;
CREATE INDEX memory_postings_impact_idx
    ON agent.memory_postings (organization_id, scope_owner_id, lexeme, impact DESC, memory_id) INCLUDE (tf, lexical_length);

CREATE OR REPLACE FUNCTION agent.memory_postings_on_insert() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    INSERT INTO agent.memory_postings (organization_id, scope_owner_id, lexeme, memory_id, tf, lexical_length, impact)
    SELECT n.organization_id, n.scope_owner_id, t.lexeme, n.id, t.tf, n.lexical_length,
           t.tf * 2.2 / (t.tf + 1.2 * (0.25 + 0.75 * n.lexical_length / 12.0))
      FROM new_rows AS n
     CROSS JOIN LATERAL agent.memory_terms(n.text) AS t
     WHERE n.text IS NOT NULL
     ORDER BY 1, 2, 3;
    RETURN NULL;
END
$$;

ALTER TABLE agent.memory_embeddings ADD COLUMN organization_id uuid, ADD COLUMN scope_owner_id uuid;
UPDATE agent.memory_embeddings AS e
   SET organization_id = m.organization_id, scope_owner_id = m.scope_owner_id
  FROM agent.memories AS m
 WHERE m.id = e.memory_id;
ALTER TABLE agent.memory_embeddings
    ALTER COLUMN organization_id SET NOT NULL, ALTER COLUMN scope_owner_id SET NOT NULL;
CREATE INDEX memory_embeddings_owner_idx ON agent.memory_embeddings (embedding_model, organization_id, scope_owner_id);

-- BM25's count and average length per owner, from the index alone.
CREATE INDEX memories_owner_length_idx ON agent.memories (organization_id, scope_owner_id) INCLUDE (lexical_length)
    WHERE text IS NOT NULL;

CREATE FUNCTION agent.memory_relevance(
    p_organization_id uuid,
    p_definition_id uuid,
    p_user_id uuid,
    p_limit integer,
    p_query_text text,
    p_query_vector vector,
    p_query_model text,
    p_candidates integer,
    p_personal boolean,
    p_dense_weight double precision,
    p_lexical_weight double precision,
    p_k1 double precision,
    p_b double precision,
    p_depth integer
) RETURNS TABLE (id uuid, score double precision, rank integer)
LANGUAGE plpgsql STABLE SECURITY INVOKER
SET search_path = pg_catalog, public
SET plan_cache_mode = force_custom_plan
AS $fn$
#variable_conflict use_column
DECLARE
    v_owners uuid[] := CASE WHEN p_personal THEN ARRAY[p_user_id]
                            ELSE array_remove(ARRAY[p_organization_id, p_user_id], NULL) END;
BEGIN
    RETURN QUERY
    WITH terms AS MATERIALIZED (
        SELECT DISTINCT q.lexeme
          FROM unnest(tsvector_to_array(to_tsvector('agent.knowledge_english'::regconfig,
                                                    left(p_query_text, 65536)))) AS q (lexeme)
         LIMIT 256
    ), stats AS MATERIALIZED (
        SELECT greatest(count(*), 1)::double precision AS n,
               coalesce(avg(m.lexical_length), 1)::double precision AS avgdl
          FROM agent.memories AS m
         WHERE m.organization_id = p_organization_id AND m.scope_owner_id = ANY (v_owners) AND m.text IS NOT NULL
    ), df AS MATERIALIZED (
        -- Each query lexeme's postings per owner (an index-only count); the idf sums the owners.
        SELECT t.lexeme, o.owner_id,
               (SELECT count(*) FROM agent.memory_postings AS p
                 WHERE p.organization_id = p_organization_id AND p.scope_owner_id = o.owner_id
                   AND p.lexeme = t.lexeme)::double precision AS df
          FROM terms AS t CROSS JOIN unnest(v_owners) AS o (owner_id)
    ), idf AS MATERIALIZED (
        -- The idf sums the owners' postings; `cut`: the owner's postings of the lexeme are read to p_depth only.
        SELECT d.lexeme, d.owner_id, ln(1 + (st.n - l.df + 0.5) / (l.df + 0.5)) AS idf,
               d.df > greatest(p_depth, 0.2 * st.n) AS cut
          FROM df AS d
          JOIN (SELECT x.lexeme, sum(x.df) AS df FROM df AS x GROUP BY x.lexeme) AS l ON l.lexeme = d.lexeme
         CROSS JOIN stats AS st
         WHERE d.df > 0
    ), top AS MATERIALIZED (
        -- Each lexeme's postings for each owner: whole when it is in at most a fifth of the owners' revisions
        -- (or at most p_depth), else its p_depth best in impact order (a common word: its idf is at most ln 5).
        SELECT p.memory_id, p.scope_owner_id, p.lexeme, p.tf, p.lexical_length
          FROM idf AS d
         CROSS JOIN LATERAL (
                SELECT x.memory_id, x.scope_owner_id, x.lexeme, x.tf, x.lexical_length
                  FROM agent.memory_postings AS x
                 WHERE x.organization_id = p_organization_id AND x.scope_owner_id = d.owner_id
                   AND x.lexeme = d.lexeme
                 ORDER BY x.impact DESC, x.memory_id
                 LIMIT CASE WHEN d.cut THEN p_depth END) AS p
    ), partial AS MATERIALIZED (
        -- Ranked by what the postings read give; scored exactly by the lexemes read whole, the cut ones next.
        SELECT t.memory_id, t.scope_owner_id AS owner_id,
               sum(i.idf * t.tf * (p_k1 + 1) / (t.tf + p_k1 * (1 - p_b + p_b * t.lexical_length / st.avgdl))) AS seen,
               coalesce(sum(i.idf * t.tf * (p_k1 + 1) / (t.tf + p_k1 * (1 - p_b + p_b * t.lexical_length / st.avgdl)))
                        FILTER (WHERE NOT i.cut), 0) AS bm25
          FROM top AS t JOIN idf AS i ON i.lexeme = t.lexeme AND i.owner_id = t.scope_owner_id CROSS JOIN stats AS st
         GROUP BY t.memory_id, t.scope_owner_id  -- a revision has one owner
         ORDER BY 3 DESC, 1
         LIMIT 2 * p_candidates
    ), completed AS (
        -- The cut lexemes' postings of the best partial candidates (primary-key probes).
        SELECT c.memory_id,
               c.bm25 + coalesce((
                   SELECT sum(i.idf * x.tf * (p_k1 + 1)
                              / (x.tf + p_k1 * (1 - p_b + p_b * x.lexical_length / st.avgdl)))
                     FROM idf AS i
                     JOIN agent.memory_postings AS x
                       ON x.organization_id = p_organization_id AND x.scope_owner_id = c.owner_id
                      AND x.lexeme = i.lexeme AND x.memory_id = c.memory_id
                    WHERE i.owner_id = c.owner_id AND i.cut
               ), 0) AS bm25
          FROM partial AS c CROSS JOIN stats AS st
    ), lexical AS MATERIALIZED (
        SELECT c.memory_id AS id, c.bm25, m.created_at
          FROM completed AS c
          JOIN agent.memories AS m ON m.id = c.memory_id
         WHERE m.organization_id = p_organization_id AND m.forgotten_at IS NULL AND m.text IS NOT NULL
           AND (m.expires_at IS NULL OR m.expires_at > now())
           AND (p_definition_id IS NULL OR m.definition_id = p_definition_id)
           AND CASE WHEN p_personal
                    THEN m.scope = 'user' AND m.user_id = p_user_id
                         AND split_part(m.subject_key, ':', 3) LIKE 'preference.%'
                    ELSE m.scope = 'organization' OR (m.scope = 'user' AND m.user_id = p_user_id) END
           AND NOT EXISTS (SELECT 1 FROM agent.memories AS ch WHERE ch.supersedes_id = m.id)
         ORDER BY c.bm25 DESC, c.memory_id
         LIMIT p_candidates
    ), dense_all AS MATERIALIZED (
        SELECT e.memory_id, e.embedding <=> p_query_vector AS distance
          FROM agent.memory_embeddings AS e
         WHERE p_query_vector IS NOT NULL AND e.embedding_model = p_query_model
           AND e.organization_id = p_organization_id AND e.scope_owner_id = ANY (v_owners)
         ORDER BY 2, 1
         LIMIT 2 * p_candidates
    ), dense AS MATERIALIZED (
        SELECT d.memory_id AS id, d.distance, m.created_at
          FROM dense_all AS d
          JOIN agent.memories AS m ON m.id = d.memory_id
         WHERE m.organization_id = p_organization_id AND m.forgotten_at IS NULL AND m.text IS NOT NULL
           AND (m.expires_at IS NULL OR m.expires_at > now())
           AND (p_definition_id IS NULL OR m.definition_id = p_definition_id)
           AND CASE WHEN p_personal
                    THEN m.scope = 'user' AND m.user_id = p_user_id
                         AND split_part(m.subject_key, ':', 3) LIKE 'preference.%'
                    ELSE m.scope = 'organization' OR (m.scope = 'user' AND m.user_id = p_user_id) END
           AND NOT EXISTS (SELECT 1 FROM agent.memories AS ch WHERE ch.supersedes_id = m.id)
         ORDER BY d.distance, d.memory_id
         LIMIT p_candidates
    ), candidates AS (
        SELECT coalesce(d.id, l.id) AS id, coalesce(d.created_at, l.created_at) AS created_at,
               1 - d.distance AS similarity, l.bm25,
               CASE WHEN d.distance IS NOT NULL THEN true
                    WHEN p_query_vector IS NULL THEN false
                    ELSE EXISTS (SELECT 1 FROM agent.memory_embeddings AS e
                                  WHERE e.memory_id = l.id AND e.embedding_model = p_query_model) END AS has_vector
          FROM dense AS d FULL JOIN lexical AS l ON l.id = d.id
    ), normalised AS (
        SELECT c.*,
               CASE WHEN c.similarity IS NULL THEN 0.0
                    ELSE coalesce((c.similarity - min(c.similarity) OVER ())
                                  / nullif(max(c.similarity) OVER () - min(c.similarity) OVER (), 0), 1.0) END AS dense_norm,
               CASE WHEN c.bm25 IS NULL THEN 0.0
                    ELSE coalesce((c.bm25 - min(c.bm25) OVER ())
                                  / nullif(max(c.bm25) OVER () - min(c.bm25) OVER (), 0), 1.0) END AS lexical_norm
          FROM candidates AS c
    ), ranked AS (
        SELECT n.id, n.created_at,
               CASE WHEN NOT n.has_vector THEN (p_dense_weight + p_lexical_weight) * n.lexical_norm
                    ELSE p_dense_weight * n.dense_norm + p_lexical_weight * n.lexical_norm END AS score
          FROM normalised AS n
         ORDER BY 3 DESC, 2 DESC, 1 DESC
         LIMIT p_limit
    ), filled AS (
        -- The newest live memories in scope that neither half ranked, after every ranked one.
        SELECT m.id, m.created_at, NULL::double precision AS score
          FROM agent.memories AS m
         WHERE m.organization_id = p_organization_id AND m.forgotten_at IS NULL AND m.text IS NOT NULL
           AND (m.expires_at IS NULL OR m.expires_at > now())
           AND (p_definition_id IS NULL OR m.definition_id = p_definition_id)
           AND CASE WHEN p_personal
                    THEN m.scope = 'user' AND m.user_id = p_user_id
                         AND split_part(m.subject_key, ':', 3) LIKE 'preference.%'
                    ELSE m.scope = 'organization' OR (m.scope = 'user' AND m.user_id = p_user_id) END
           AND NOT EXISTS (SELECT 1 FROM agent.memories AS ch WHERE ch.supersedes_id = m.id)
           AND m.id NOT IN (SELECT c.id FROM candidates AS c)
         ORDER BY m.created_at DESC, m.id DESC
         LIMIT p_limit
    ), chosen AS (
        SELECT o.id, o.score,
               row_number() OVER (ORDER BY o.score DESC NULLS LAST, o.created_at DESC, o.id DESC) AS rank
          FROM (SELECT * FROM ranked UNION ALL SELECT * FROM filled) AS o
    )
    SELECT c.id, c.score, c.rank::integer FROM chosen AS c WHERE c.rank <= p_limit ORDER BY c.rank;
END
$fn$;

REVOKE ALL ON FUNCTION agent.memory_relevance(uuid, uuid, uuid, integer, text, vector, text, integer, boolean,
    double precision, double precision, double precision, double precision, integer) FROM PUBLIC;
