-- The memory relevance read as commit a71b856 shipped it (memory/queries.sql before migration 0110), kept for
-- bench/bench_memory_read_cost.py alone: it runs this statement and today's on the same data, interleaved, so
-- the before/after ratio is measured in one run. Same parameters as today's $1..$14 (today adds $15). No
-- runtime path reads this file.

-- name: fetch_relevant_memories_a71b856
-- The relevance-ordered read of either source (migrations/0101, bounded by 0104): the same live rows, filters
-- and limit as fetch_live_memories ($9 false) or fetch_personal_memories ($9 true), ranked by knowledge's
-- hybrid score: Okapi BM25 of the memory text (statistics of the owners' revisions; at most $14 postings of
-- each query lexeme per owner in impact order, the best partial candidates completed), and the cosine
-- similarity of the memory's vector under the query's model (the owners' vectors, exact); each list's live
-- candidates in scope cut to its best $8, min-max normalised, fused convexly ($10 x dense + $11 x lexical).
-- A memory with no vector under the model is scored by BM25 alone at the weight of both halves; a NULL query
-- vector reads BM25 alone. Memories neither half ranks follow, newest first, so the limit still fills.
-- Every row is reached by an index by equality on the parameters, so the generic plan cached after five
-- calls on a connection keeps the custom plan's shape (migrations/0104).
-- $1 organization id, $2 definition id or NULL, $3 user id or NULL (personal: required), $4 limit,
-- $5 query text, $6 query vector or NULL, $7 its model or NULL, $8 candidates per list, $9 personal,
-- $10 dense weight, $11 lexical weight, $12 BM25 k1, $13 BM25 b, $14 postings per lexeme and owner.
-- Answers the rows of fetch_live_memories with rank (1-based) and score (NULL when neither half ranked it).
WITH terms AS MATERIALIZED (
    SELECT DISTINCT q.lexeme
      FROM unnest(tsvector_to_array(to_tsvector('agent.knowledge_english'::regconfig,
                                                left($5::text, 65536)))) AS q (lexeme)
     LIMIT 256
), stats AS MATERIALIZED (
    SELECT greatest(count(*), 1)::double precision AS n,
           coalesce(avg(m.lexical_length), 1)::double precision AS avgdl
      FROM agent.memories AS m
     WHERE m.organization_id = $1::uuid AND m.scope_owner_id = ANY (CASE WHEN $9::boolean THEN ARRAY[$3::uuid] ELSE ARRAY[$1::uuid, $3::uuid] END) AND m.text IS NOT NULL
), df AS MATERIALIZED (
    -- Each query lexeme's postings per owner (an index-only count); the idf sums the owners.
    SELECT t.lexeme, o.owner_id,
           (SELECT count(*) FROM agent.memory_postings AS p
             WHERE p.organization_id = $1::uuid AND p.scope_owner_id = o.owner_id
               AND p.lexeme = t.lexeme)::double precision AS df
      FROM terms AS t CROSS JOIN unnest(CASE WHEN $9::boolean THEN ARRAY[$3::uuid] ELSE array_remove(ARRAY[$1::uuid, $3::uuid], NULL) END) AS o (owner_id)
), idf AS MATERIALIZED (
    -- The idf sums the owners' postings; `cut`: the owner's postings of the lexeme are read to $14::integer only.
    SELECT d.lexeme, d.owner_id, ln(1 + (st.n - l.df + 0.5) / (l.df + 0.5)) AS idf,
           d.df > greatest($14::integer, 0.2 * st.n) AS cut
      FROM df AS d
      JOIN (SELECT x.lexeme, sum(x.df) AS df FROM df AS x GROUP BY x.lexeme) AS l ON l.lexeme = d.lexeme
     CROSS JOIN stats AS st
     WHERE d.df > 0
), top AS MATERIALIZED (
    -- Each lexeme's postings for each owner: whole when it is in at most a fifth of the owners' revisions
    -- (or at most $14::integer), else its $14::integer best in impact order (a common word: its idf is at most ln 5).
    SELECT p.memory_id, p.scope_owner_id, p.lexeme, p.tf, p.lexical_length
      FROM idf AS d
     CROSS JOIN LATERAL (
            SELECT x.memory_id, x.scope_owner_id, x.lexeme, x.tf, x.lexical_length
              FROM agent.memory_postings AS x
             WHERE x.organization_id = $1::uuid AND x.scope_owner_id = d.owner_id
               AND x.lexeme = d.lexeme
             ORDER BY x.impact DESC, x.memory_id
             LIMIT CASE WHEN d.cut THEN $14::integer END) AS p
), partial AS MATERIALIZED (
    -- Ranked by what the postings read give; scored exactly by the lexemes read whole, the cut ones next.
    SELECT t.memory_id, t.scope_owner_id AS owner_id,
           sum(i.idf * t.tf * ($12::double precision + 1) / (t.tf + $12::double precision * (1 - $13::double precision + $13::double precision * t.lexical_length / st.avgdl))) AS seen,
           coalesce(sum(i.idf * t.tf * ($12::double precision + 1) / (t.tf + $12::double precision * (1 - $13::double precision + $13::double precision * t.lexical_length / st.avgdl)))
                    FILTER (WHERE NOT i.cut), 0) AS bm25
      FROM top AS t JOIN idf AS i ON i.lexeme = t.lexeme AND i.owner_id = t.scope_owner_id CROSS JOIN stats AS st
     GROUP BY t.memory_id, t.scope_owner_id  -- a revision has one owner
     ORDER BY 3 DESC, 1
     LIMIT 2 * $8::integer
), completed AS (
    -- The cut lexemes' postings of the best partial candidates (primary-key probes).
    SELECT c.memory_id,
           c.bm25 + coalesce((
               SELECT sum(i.idf * x.tf * ($12::double precision + 1)
                          / (x.tf + $12::double precision * (1 - $13::double precision + $13::double precision * x.lexical_length / st.avgdl)))
                 FROM idf AS i
                 JOIN agent.memory_postings AS x
                   ON x.organization_id = $1::uuid AND x.scope_owner_id = c.owner_id
                  AND x.lexeme = i.lexeme AND x.memory_id = c.memory_id
                WHERE i.owner_id = c.owner_id AND i.cut
           ), 0) AS bm25
      FROM partial AS c CROSS JOIN stats AS st
), lexical AS MATERIALIZED (
    SELECT c.memory_id AS id, c.bm25, m.created_at
      FROM completed AS c
     CROSS JOIN LATERAL (  -- one primary-key probe per candidate (LIMIT: never a join)
            SELECT m.created_at FROM agent.memories AS m
             WHERE m.id = c.memory_id AND m.organization_id = $1::uuid AND m.forgotten_at IS NULL AND m.text IS NOT NULL
               AND (m.expires_at IS NULL OR m.expires_at > now())
               AND ($2::uuid IS NULL OR m.definition_id = $2::uuid)
               AND CASE WHEN $9::boolean
                        THEN m.scope = 'user' AND m.user_id = $3::uuid
                             AND split_part(m.subject_key, ':', 3) LIKE 'preference.%'
                        ELSE m.scope = 'organization' OR (m.scope = 'user' AND m.user_id = $3::uuid) END
               AND NOT EXISTS (SELECT 1 FROM agent.memories AS ch WHERE ch.supersedes_id = m.id)
             LIMIT 1) AS m
     ORDER BY c.bm25 DESC, c.memory_id
     LIMIT $8::integer
), dense_all AS MATERIALIZED (
    SELECT e.memory_id, e.embedding <=> $6::vector AS distance
      FROM agent.memory_embeddings AS e
     WHERE $6::vector IS NOT NULL AND e.embedding_model = $7::text
       AND e.organization_id = $1::uuid AND e.scope_owner_id = ANY (CASE WHEN $9::boolean THEN ARRAY[$3::uuid] ELSE ARRAY[$1::uuid, $3::uuid] END)
     ORDER BY 2, 1
     LIMIT 2 * $8::integer
), dense AS MATERIALIZED (
    SELECT d.memory_id AS id, d.distance, m.created_at
      FROM dense_all AS d
     CROSS JOIN LATERAL (  -- one primary-key probe per candidate (LIMIT: never a join)
            SELECT m.created_at FROM agent.memories AS m
             WHERE m.id = d.memory_id AND m.organization_id = $1::uuid AND m.forgotten_at IS NULL AND m.text IS NOT NULL
               AND (m.expires_at IS NULL OR m.expires_at > now())
               AND ($2::uuid IS NULL OR m.definition_id = $2::uuid)
               AND CASE WHEN $9::boolean
                        THEN m.scope = 'user' AND m.user_id = $3::uuid
                             AND split_part(m.subject_key, ':', 3) LIKE 'preference.%'
                        ELSE m.scope = 'organization' OR (m.scope = 'user' AND m.user_id = $3::uuid) END
               AND NOT EXISTS (SELECT 1 FROM agent.memories AS ch WHERE ch.supersedes_id = m.id)
             LIMIT 1) AS m
     ORDER BY d.distance, d.memory_id
     LIMIT $8::integer
), candidates AS (
    SELECT coalesce(d.id, l.id) AS id, coalesce(d.created_at, l.created_at) AS created_at,
           1 - d.distance AS similarity, l.bm25,
           CASE WHEN d.distance IS NOT NULL THEN true
                WHEN $6::vector IS NULL THEN false
                ELSE EXISTS (SELECT 1 FROM agent.memory_embeddings AS e
                              WHERE e.memory_id = l.id AND e.embedding_model = $7::text) END AS has_vector
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
           CASE WHEN NOT n.has_vector THEN ($10::double precision + $11::double precision) * n.lexical_norm
                ELSE $10::double precision * n.dense_norm + $11::double precision * n.lexical_norm END AS score
      FROM normalised AS n
     ORDER BY 3 DESC, 2 DESC, 1 DESC
     LIMIT $4::integer
), filled AS (
    -- The newest live memories in scope that neither half ranked, after every ranked one, read only when the
    -- ranked ones do not fill the limit: two branches with literal predicates, so each one's index serves it
    -- in any plan (the personal index of 0090).
    (SELECT m.id, m.created_at, NULL::double precision AS score
       FROM agent.memories AS m
      WHERE NOT $9::boolean AND m.organization_id = $1::uuid AND m.forgotten_at IS NULL
        AND m.text IS NOT NULL AND (m.expires_at IS NULL OR m.expires_at > now())
        AND ($2::uuid IS NULL OR m.definition_id = $2::uuid)
        AND (m.scope = 'organization' OR (m.scope = 'user' AND m.user_id = $3::uuid))
        AND NOT EXISTS (SELECT 1 FROM agent.memories AS ch WHERE ch.supersedes_id = m.id)
        AND m.id NOT IN (SELECT c.id FROM candidates AS c)
      ORDER BY m.created_at DESC, m.id DESC
      LIMIT greatest($4::integer - (SELECT count(*) FROM ranked), 0))
    UNION ALL
    (SELECT m.id, m.created_at, NULL::double precision AS score
       FROM agent.memories AS m
      WHERE $9::boolean AND m.organization_id = $1::uuid AND m.user_id = $3::uuid
        AND m.scope = 'user' AND m.forgotten_at IS NULL
        AND split_part(m.subject_key, ':', 3) LIKE 'preference.%'
        AND m.text IS NOT NULL AND (m.expires_at IS NULL OR m.expires_at > now())
        AND ($2::uuid IS NULL OR m.definition_id = $2::uuid)
        AND NOT EXISTS (SELECT 1 FROM agent.memories AS ch WHERE ch.supersedes_id = m.id)
        AND m.id NOT IN (SELECT c.id FROM candidates AS c)
      ORDER BY m.created_at DESC, m.id DESC
      LIMIT greatest($4::integer - (SELECT count(*) FROM ranked), 0))
), chosen AS (
    SELECT o.id, o.score,
           row_number() OVER (ORDER BY o.score DESC NULLS LAST, o.created_at DESC, o.id DESC) AS rank
      FROM (SELECT * FROM ranked UNION ALL SELECT * FROM filled) AS o
)
SELECT m.id, m.organization_id, m.definition_id, m.scope, m.user_id, m.subject_key, m.text, m.subject_refs,
       m.proposed_by_run_id, m.supersedes_id, m.created_at, c.score, c.rank::integer AS rank
  FROM chosen AS c
  JOIN agent.memories AS m ON m.id = c.id
 WHERE c.rank <= $4::integer
 ORDER BY c.rank;
