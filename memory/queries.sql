-- The runtime statements of the memory package. Each block: `-- name: <query_name>`, what it does and its
-- parameters, then the statement. Every read names the organization explicitly: these run on the service
-- role, which row-level security does not filter.

-- name: fetch_invocation
-- Whether an invocation's definition, run and user belong to its organization.
-- $1 organization id, $2 definition id, $3 run id, $4 user id or NULL.
SELECT
    (SELECT d.definition_kind FROM agent.definitions AS d
      WHERE d.id = $2::uuid AND (d.organization_id IS NULL OR d.organization_id = $1::uuid)) AS definition_kind,
    EXISTS (SELECT 1 FROM agent.runs AS r
             WHERE r.id = $3::uuid AND r.organization_id = $1::uuid AND r.definition_id = $2::uuid) AS run_matches,
    ($4::uuid IS NULL OR EXISTS (SELECT 1 FROM public.users AS u
                                  WHERE u.id = $4::uuid AND u.organization_id = $1::uuid)) AS user_matches;

-- name: fetch_head
-- The current revision of one chain (a tombstone included), or no row when the chain does not exist.
-- $1 organization id, $2 definition id, $3 scope, $4 scope owner id, $5 subject key.
SELECT id, organization_id, definition_id, scope, user_id, scope_owner_id, subject_key, text, subject_refs,
       proposed_by_run_id, supersedes_id, forgotten_at, created_at, expires_at
FROM agent.memory_heads
WHERE organization_id = $1 AND definition_id = $2 AND scope = $3 AND scope_owner_id = $4 AND subject_key = $5;

-- name: fetch_revision
-- One revision of the organization by id, and whether it is the current head of its chain.
-- $1 organization id, $2 memory id.
SELECT m.id, m.organization_id, m.definition_id, m.scope, m.user_id, m.scope_owner_id, m.subject_key, m.text,
       m.subject_refs, m.proposed_by_run_id, m.supersedes_id, m.forgotten_at, m.created_at, m.expires_at,
       NOT EXISTS (SELECT 1 FROM agent.memories AS c WHERE c.supersedes_id = m.id) AS is_head
FROM agent.memories AS m
WHERE m.organization_id = $1 AND m.id = $2;

-- name: insert_revision
-- Append one live revision; supersedes_id NULL starts a chain. The chain constraints refuse a second root
-- or a second child, which is how two writers that read one head race.
-- $1 organization id, $2 definition id, $3 scope, $4 user id or NULL, $5 scope owner id, $6 subject key,
-- $7 text, $8 subject_refs (jsonb array), $9 run id, $10 supersedes id or NULL, $11 expires at or NULL.
INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key, text,
                            subject_refs, proposed_by_run_id, supersedes_id, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11)
RETURNING id, organization_id, definition_id, scope, user_id, scope_owner_id, subject_key, text, subject_refs,
          proposed_by_run_id, supersedes_id, forgotten_at, created_at, expires_at;

-- name: insert_tombstone
-- Append a tombstone after one revision of the organization, copying its chain identity and subject refs
-- (never its expiry: a tombstone carries none). The expiry sweep writes it too, with no run.
-- $1 organization id, $2 the revision it forgets, $3 run id or NULL (the sweep).
INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key, text,
                            subject_refs, proposed_by_run_id, supersedes_id, forgotten_at)
SELECT m.organization_id, m.definition_id, m.scope, m.user_id, m.scope_owner_id, m.subject_key, NULL,
       m.subject_refs, $3, m.id, now()
FROM agent.memories AS m
WHERE m.organization_id = $1 AND m.id = $2
RETURNING id, organization_id, definition_id, scope, user_id, scope_owner_id, subject_key, text, subject_refs,
          proposed_by_run_id, supersedes_id, forgotten_at, created_at, expires_at;

-- name: lock_run_remembers
-- Serialise the memory.remember writes of one run for the rest of the transaction (the count limit).
-- $1 run id.
SELECT pg_advisory_xact_lock(1835363698, hashtext($1::uuid::text));

-- name: count_run_remembers
-- How many live revisions (memory.remember writes) one run has appended; an expired one no longer counts.
-- $1 run id.
SELECT count(*) FROM agent.memories
WHERE proposed_by_run_id = $1 AND text IS NOT NULL AND (expires_at IS NULL OR expires_at > now());

-- name: fetch_live_memories
-- The `memory` source read: live memories of the organization, newest first. A NULL definition drops the
-- definition filter (the one widening the spec allows); a NULL user reads organization scope alone. The
-- person's preference.* rows stay in: when `personal_memory` is enabled too, the packer keeps its copy
-- (same subject key, higher class) and counts this one dropped, so one memory never appears twice.
-- $1 organization id, $2 definition id or NULL, $3 user id or NULL, $4 limit.
SELECT id, organization_id, definition_id, scope, user_id, subject_key, text, subject_refs, proposed_by_run_id,
       supersedes_id, created_at
FROM agent.live_memories
WHERE organization_id = $1::uuid
  AND ($2::uuid IS NULL OR definition_id = $2::uuid)
  AND (scope = 'organization' OR (scope = 'user' AND user_id = $3::uuid))
ORDER BY created_at DESC, id DESC
LIMIT $4;

-- name: count_live_memories
-- How many rows `fetch_live_memories` answers without its limit (what `ac-context memory list` is "N of").
-- $1 organization id, $2 definition id or NULL, $3 user id or NULL.
SELECT count(*)
FROM agent.live_memories
WHERE organization_id = $1::uuid
  AND ($2::uuid IS NULL OR definition_id = $2::uuid)
  AND (scope = 'organization' OR (scope = 'user' AND user_id = $3::uuid));

-- name: fetch_personal_memories
-- The `personal_memory` source read: one person's user-scope preference.* live memories in one definition,
-- newest first. A NULL definition (a Front Door turn) reads the person's preferences across the
-- organization's definitions: the same single widening as `fetch_live_memories`. The user may not be NULL
-- (a NULL matches nothing).
-- $1 organization id, $2 definition id or NULL, $3 user id, $4 limit.
SELECT id, organization_id, definition_id, scope, user_id, subject_key, text, subject_refs, proposed_by_run_id,
       supersedes_id, created_at
FROM agent.live_memories
WHERE organization_id = $1::uuid
  AND ($2::uuid IS NULL OR definition_id = $2::uuid)
  AND scope = 'user'
  AND user_id = $3::uuid
  AND split_part(subject_key, ':', 3) LIKE 'preference.%'
ORDER BY created_at DESC, id DESC
LIMIT $4;

-- name: fetch_expired_heads
-- The expiry sweep's read: chain heads that are live revisions whose expiry has passed, soonest expiry
-- first, across every organization (the sweep is the service's own job). The writer re-reads each head with
-- fetch_head before it appends the tombstone.
-- $1 the sweep's time or NULL (the database clock), $2 limit.
SELECT id, organization_id, definition_id, scope, user_id, scope_owner_id, subject_key, text, subject_refs,
       proposed_by_run_id, supersedes_id, forgotten_at, created_at, expires_at
FROM agent.memory_heads
WHERE expires_at IS NOT NULL
  AND expires_at <= coalesce($1::timestamptz, now())
  AND forgotten_at IS NULL
ORDER BY expires_at, id
LIMIT $2;
-- name: user_in_organization
-- Whether the user belongs to the organization (public.users carries the one organization of a user).
-- $1 organization id, $2 user id.
SELECT EXISTS (SELECT 1 FROM public.users AS u WHERE u.id = $2::uuid AND u.organization_id = $1::uuid);

-- name: erase_memory_chains
-- Erase one batch of whole memory chains through the one audited path (migration 0083) and answer how many
-- chains and revisions went. $1 scope ('user', 'subject' or 'organization'), $2 organization id, $3 user id
-- or NULL, $4 subject '<kind>:<id>' or NULL, $5 most chains.
SELECT chains, revisions FROM agent.erase_memory_chains($1::text, $2::uuid, $3::uuid, $4::text, $5::integer);

-- name: erasable_memory_exists
-- Whether any revision of the organization is still in the erasure scope (the predicate the erasure uses).
-- $1 scope, $2 organization id, $3 user id or NULL, $4 subject '<kind>:<id>' or NULL.
SELECT EXISTS (
    SELECT 1 FROM agent.memories AS m
     WHERE m.organization_id = $2::uuid
       AND agent.memory_erasure_matches(m.scope, m.scope_owner_id, m.subject_key, $1::text, $3::uuid, $4::text));

-- Paged reads (memory/pages.py, state/paging.py): a page starts after a keyset position and fetches one row
-- more than it shows; the first page starts from a sentinel beyond every row.

-- name: people_matching
-- The people of an organization whose email or display name contains a text (any case): the memories
-- list's person filter. $1 organization id, $2 the text.
SELECT id
FROM public.users
WHERE organization_id = $1::uuid
  AND (strpos(lower(email), lower($2::text)) > 0 OR strpos(lower(coalesce(display_name, '')), lower($2::text)) > 0)
ORDER BY id
LIMIT 1000;

-- name: count_organization_live_memories
-- How many live memories an organization holds, without counting them: the open chains the triggers of
-- migration 0117 keep in agent.organization_counts, less the open heads whose expiry has passed (through
-- memories_expiry_idx: the sweep removes them, so few). $1 organization id.
SELECT coalesce((SELECT memories_open FROM agent.organization_counts WHERE organization_id = $1::uuid), 0)
     - (SELECT count(*)
          FROM agent.memories AS m
         WHERE m.expires_at <= now() AND m.forgotten_at IS NULL AND m.organization_id = $1::uuid
           AND NOT EXISTS (SELECT 1 FROM agent.memories AS c WHERE c.supersedes_id = m.id));

-- name: memory_chain
-- Every revision of the chain a memory belongs to, oldest first, tombstones and expired revisions
-- included, each saying whether it is the live one (through memories_chain_idx). $1 organization id,
-- $2 the id of any revision of the chain. No row when the organization has no such revision.
WITH target AS (
    SELECT organization_id, definition_id, scope, scope_owner_id, subject_key
      FROM agent.memories
     WHERE id = $2::uuid AND organization_id = $1::uuid)
SELECT m.id, m.organization_id, m.definition_id, m.scope, m.user_id, m.scope_owner_id, m.subject_key, m.text,
       m.subject_refs, m.proposed_by_run_id, m.supersedes_id, m.forgotten_at, m.created_at, m.expires_at,
       (m.forgotten_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > now())
        AND NOT EXISTS (SELECT 1 FROM agent.memories c WHERE c.supersedes_id = m.id)) AS live
  FROM agent.memories m
  JOIN target t ON m.organization_id = t.organization_id AND m.definition_id = t.definition_id
               AND m.scope = t.scope AND m.scope_owner_id = t.scope_owner_id AND m.subject_key = t.subject_key
 ORDER BY m.created_at, m.id;

-- name: fetch_relevant_memories
-- The relevance-ordered read of either source (migrations/0101, bounded by 0104): the same live rows, filters
-- and limit as fetch_live_memories ($9 false) or fetch_personal_memories ($9 true), ranked by knowledge's
-- hybrid score: Okapi BM25 of the memory text (statistics of the owners' revisions; at most $14 postings of
-- each query lexeme per owner in impact order, the best partial candidates completed), and the cosine
-- similarity of the memory's vector under the query's model (the owners' vectors: through the model's HNSW
-- index from $15 revisions, agent.memory_dense_walk of migrations/0110, else exact); each list's live
-- candidates in scope cut to its best $8, min-max normalised, fused convexly ($10 x dense + $11 x lexical).
-- A memory with no vector under the model is scored by BM25 alone at the weight of both halves; a NULL query
-- vector reads BM25 alone. Memories neither half ranks follow, newest first, so the limit still fills.
-- Every row is reached by an index by equality on the parameters, so the generic plan cached after five
-- calls on a connection keeps the custom plan's shape (migrations/0104); the rows returned are read by one
-- primary-key probe each, never a join the planner could turn into a hash of every memory.
-- $1 organization id, $2 definition id or NULL, $3 user id or NULL (personal: required), $4 limit,
-- $5 query text, $6 query vector or NULL, $7 its model or NULL, $8 candidates per list, $9 personal,
-- $10 dense weight, $11 lexical weight, $12 BM25 k1, $13 BM25 b, $14 postings per lexeme and owner,
-- $15 the owners' revisions from which the dense half walks the HNSW index.
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
           d.df > greatest($14::integer, 0.2 * st.n) AS cut, st.avgdl
      FROM df AS d
      JOIN (SELECT x.lexeme, sum(x.df) AS df FROM df AS x GROUP BY x.lexeme) AS l ON l.lexeme = d.lexeme
     CROSS JOIN stats AS st
     WHERE d.df > 0
), partial AS MATERIALIZED (
    -- Each lexeme's postings for each owner: whole when it is in at most a fifth of the owners' revisions
    -- (or at most $14::integer), else its $14::integer best in impact order (a common word: its idf is at most
    -- ln 5); each posting's BM25 term weight computed as it is read, summed per revision. Ranked by what
    -- the postings read give; scored exactly by the lexemes read whole, the cut ones next.
    SELECT p.memory_id, d.owner_id, sum(p.w) AS seen, coalesce(sum(p.w) FILTER (WHERE NOT d.cut), 0) AS bm25
      FROM idf AS d
     CROSS JOIN LATERAL (
            SELECT x.memory_id,
                   d.idf * x.tf * ($12::double precision + 1) / (x.tf + $12::double precision * (1 - $13::double precision + $13::double precision * x.lexical_length / d.avgdl)) AS w
              FROM agent.memory_postings AS x
             WHERE x.organization_id = $1::uuid AND x.scope_owner_id = d.owner_id
               AND x.lexeme = d.lexeme
             ORDER BY x.impact DESC, x.memory_id
             LIMIT CASE WHEN d.cut THEN $14::integer END) AS p
     GROUP BY p.memory_id, d.owner_id  -- a revision has one owner
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
    -- Probed best first: the limit stops the probes at the $8th live candidate.
    SELECT c.memory_id AS id, c.bm25, m.created_at
      FROM (SELECT * FROM completed AS c ORDER BY c.bm25 DESC, c.memory_id) AS c
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
), dense_walk AS MATERIALIZED (
    -- The owners' best 2 x $8 vectors through the model's HNSW index (migrations/0110), asked only from $15
    -- revisions with text; no rows when the walk would not pay or fell short.
    SELECT w.memory_id, w.distance
      FROM stats AS st
     CROSS JOIN LATERAL agent.memory_dense_walk(
            $1::uuid, CASE WHEN $9::boolean THEN ARRAY[$3::uuid] ELSE array_remove(ARRAY[$1::uuid, $3::uuid], NULL) END,
            $7::text, $6::vector, 2 * $8::integer, st.n::bigint) AS w
     WHERE st.n >= $15::integer AND $6::vector IS NOT NULL
), dense_all AS MATERIALIZED (
    -- The walk's answer, else every vector of the owners under the query's model scored (0104's exact scan;
    -- the gate names no column, so it is a one-time filter).
    SELECT w.memory_id, w.distance FROM dense_walk AS w
    UNION ALL
    (SELECT e.memory_id, e.embedding <=> $6::vector AS distance
       FROM agent.memory_embeddings AS e
      WHERE $6::vector IS NOT NULL AND e.embedding_model = $7::text
        AND e.organization_id = $1::uuid AND e.scope_owner_id = ANY (CASE WHEN $9::boolean THEN ARRAY[$3::uuid] ELSE ARRAY[$1::uuid, $3::uuid] END)
        AND NOT EXISTS (SELECT 1 FROM dense_walk)
      ORDER BY 2, 1
      LIMIT 2 * $8::integer)
), dense AS MATERIALIZED (
    -- Probed nearest first: the limit stops the probes at the $8th live candidate.
    SELECT d.memory_id AS id, d.distance, m.created_at
      FROM (SELECT * FROM dense_all AS d ORDER BY d.distance, d.memory_id) AS d
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
 CROSS JOIN LATERAL (SELECT m.* FROM agent.memories AS m WHERE m.id = c.id LIMIT 1) AS m  -- a probe per row returned
 WHERE c.rank <= $4::integer
 ORDER BY c.rank;

-- name: fetch_relevant_memories_exact
-- The exact relevance read of migrations/0101, kept as the reference the bounded read is measured against
-- (bench/bench_memory_relevance.py: recall of its top k) and tested against; no runtime path runs it.
-- The relevance-ordered read of either source (migrations/0101): the same live rows, filters and limit as
-- fetch_live_memories ($9 false) or fetch_personal_memories ($9 true), ranked by knowledge's hybrid score:
-- Okapi BM25 of the memory text among the read's own live memories (their count, average length and
-- document frequencies), and the cosine similarity of the memory's vector under the query's model; each list
-- cut to its best $8 candidates, min-max normalised over them, fused convexly ($10 x dense + $11 x lexical).
-- A memory with no vector under the model is scored by BM25 alone at the weight of both halves; a NULL
-- query vector reads BM25 alone. Memories neither half ranks follow, newest first, so the limit still fills.
-- $1 organization id, $2 definition id or NULL, $3 user id or NULL (personal: required), $4 limit,
-- $5 query text, $6 query vector or NULL, $7 its model or NULL, $8 candidates per list, $9 personal,
-- $10 dense weight, $11 lexical weight, $12 BM25 k1, $13 BM25 b.
-- Answers the rows of fetch_live_memories with rank (1-based) and score (NULL when neither half ranked it).
WITH scope AS MATERIALIZED (
    -- Narrow on purpose: only the ranked candidates and the rows returned are read whole.
    SELECT m.id, m.created_at, m.lexical_length
      FROM agent.live_memories AS m
     WHERE m.organization_id = $1::uuid
       AND ($2::uuid IS NULL OR m.definition_id = $2::uuid)
       AND CASE WHEN $9::boolean
                THEN m.scope = 'user' AND m.user_id = $3::uuid AND split_part(m.subject_key, ':', 3) LIKE 'preference.%'
                ELSE m.scope = 'organization' OR (m.scope = 'user' AND m.user_id = $3::uuid) END
), stats AS (
    SELECT count(*)::double precision AS n, coalesce(avg(s.lexical_length), 1)::double precision AS avgdl FROM scope AS s
), terms AS (
    SELECT DISTINCT q.lexeme
      FROM unnest(tsvector_to_array(to_tsvector('agent.knowledge_english'::regconfig, left($5::text, 65536)))) AS q (lexeme)
     LIMIT 256
), hits AS MATERIALIZED (
    -- The postings of the query's lexemes under the owners this read reads, kept for the live rows in scope.
    SELECT p.memory_id, p.lexeme, p.tf, s.lexical_length
      FROM terms AS t
      JOIN agent.memory_postings AS p
        ON p.organization_id = $1::uuid AND p.lexeme = t.lexeme
       AND p.scope_owner_id = ANY (CASE WHEN $9::boolean THEN ARRAY[$3::uuid] ELSE ARRAY[$1::uuid, $3::uuid] END)
      JOIN scope AS s ON s.id = p.memory_id
), idf AS (
    SELECT h.lexeme, ln(1 + (st.n - count(*) + 0.5) / (count(*) + 0.5)) AS idf
      FROM hits AS h CROSS JOIN stats AS st
     GROUP BY h.lexeme, st.n
), lexical AS MATERIALIZED (
    SELECT h.memory_id AS id,
           sum(i.idf * h.tf * ($12::double precision + 1)
               / (h.tf + $12::double precision * (1 - $13::double precision
                                                  + $13::double precision * h.lexical_length / st.avgdl))) AS bm25
      FROM hits AS h JOIN idf AS i ON i.lexeme = h.lexeme CROSS JOIN stats AS st
     GROUP BY h.memory_id
     ORDER BY 2 DESC, 1
     LIMIT $8
), dense AS MATERIALIZED (
    -- One distance per row: the sort key is the selected column, so it is not computed twice.
    SELECT s.id, e.embedding <=> $6::vector AS distance
      FROM scope AS s
      JOIN agent.memory_embeddings AS e ON e.memory_id = s.id AND e.embedding_model = $7::text
     WHERE $6::vector IS NOT NULL
     ORDER BY 2, 1
     LIMIT $8
), candidates AS (
    SELECT s.id, s.created_at, 1 - d.distance AS similarity, l.bm25,
           -- Asked only where it matters: a lexical candidate the dense list did not take.
           CASE WHEN d.distance IS NOT NULL THEN true
                WHEN $6::vector IS NULL THEN false
                ELSE EXISTS (SELECT 1 FROM agent.memory_embeddings AS e
                              WHERE e.memory_id = s.id AND e.embedding_model = $7::text) END AS has_vector
      FROM scope AS s
      LEFT JOIN dense AS d ON d.id = s.id
      LEFT JOIN lexical AS l ON l.id = s.id
     WHERE s.id IN (SELECT id FROM dense UNION SELECT id FROM lexical)
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
     LIMIT $4
), filled AS (
    -- The memories neither half ranked, newest first, after every ranked one.
    SELECT s.id, s.created_at, NULL::double precision AS score
      FROM scope AS s
     WHERE s.id NOT IN (SELECT id FROM dense UNION SELECT id FROM lexical)
     ORDER BY s.created_at DESC, s.id DESC
     LIMIT $4
), chosen AS (
    SELECT o.id, o.score, row_number() OVER (ORDER BY o.score DESC NULLS LAST, o.created_at DESC, o.id DESC) AS rank
      FROM (SELECT * FROM ranked UNION ALL SELECT * FROM filled) AS o
)
SELECT m.id, m.organization_id, m.definition_id, m.scope, m.user_id, m.subject_key, m.text, m.subject_refs,
       m.proposed_by_run_id, m.supersedes_id, m.created_at, c.score, c.rank::integer AS rank
  FROM chosen AS c
  JOIN agent.memories AS m ON m.id = c.id
 WHERE c.rank <= $4
 ORDER BY c.rank;

-- name: store_memory_embeddings
-- Store revisions' vectors under one model (a second call for the same pair keeps the first).
-- $1 memory ids, $2 model, $3 vectors in vector's text form '[x,y,...]' (same order).
INSERT INTO agent.memory_embeddings (memory_id, embedding_model, embedding, organization_id, scope_owner_id)
SELECT v.memory_id, $2::text, v.embedding::vector, m.organization_id, m.scope_owner_id
  FROM unnest($1::uuid[], $3::text[]) AS v (memory_id, embedding)
  JOIN agent.memories AS m ON m.id = v.memory_id
ON CONFLICT (memory_id, embedding_model) DO NOTHING;

-- name: live_memories_without_vector
-- Live memories of the organizations with no vector under the model, oldest first (memory.vectors: the fill
-- after a failed write embedding, and a switchover's fill under its new model, which resumes where it stopped).
-- $1 organization ids, $2 model, $3 limit.
SELECT m.id, m.organization_id, m.text
  FROM agent.live_memories AS m
 WHERE m.organization_id = ANY ($1::uuid[])
   AND NOT EXISTS (SELECT 1 FROM agent.memory_embeddings AS e WHERE e.memory_id = m.id AND e.embedding_model = $2::text)
 ORDER BY m.created_at, m.id
 LIMIT $3;

-- name: memory_vector_coverage
-- How many live memories the organizations hold, and how many of them hold a vector under the model (a
-- switchover's progress). $1 organization ids, $2 model.
SELECT count(*)::integer AS live,
       (count(*) FILTER (WHERE EXISTS (SELECT 1 FROM agent.memory_embeddings AS e
                                        WHERE e.memory_id = m.id AND e.embedding_model = $2::text)))::integer AS embedded
  FROM agent.live_memories AS m
 WHERE m.organization_id = ANY ($1::uuid[]);

-- name: erasable_index_rows
-- How many relevance index rows (migrations/0101) and brief citations (migration 0122, deleted by a trigger)
-- the revisions still in an erasure scope hold; an erasure batch reads it before and after, so its receipt
-- counts what the cascade removed.
-- $1 scope, $2 organization id, $3 user id or NULL, $4 subject '<kind>:<id>' or NULL.
WITH erasable AS MATERIALIZED (
    SELECT m.id FROM agent.memories AS m
     WHERE m.organization_id = $2::uuid
       AND agent.memory_erasure_matches(m.scope, m.scope_owner_id, m.subject_key, $1::text, $3::uuid, $4::text)
)
SELECT (SELECT count(*) FROM agent.memory_postings AS p WHERE p.memory_id IN (SELECT id FROM erasable)) AS postings,
       (SELECT count(*) FROM agent.memory_embeddings AS e WHERE e.memory_id IN (SELECT id FROM erasable)) AS vectors,
       (SELECT count(*) FROM agent.brief_citations AS c
         WHERE c.organization_id = $2::uuid AND c.ref_kind = 'agent.memory'
           AND c.ref_id IN (SELECT id::text FROM erasable)) AS citations;

-- name: export_revisions
-- Every revision of the organization's chains (with $2, only that person's user-scope chains) for an export:
-- chains in a stable order (their root's creation, then the root id), each chain's revisions oldest first by
-- following supersedes_id (never by time), with the chain's root id, the owning definition's name and the
-- person's email. $1 organization id, $2 user id or NULL.
WITH RECURSIVE walk AS (
    SELECT m.id, m.id AS root_id, m.created_at AS root_created_at, 0 AS depth
      FROM agent.memories AS m
     WHERE m.organization_id = $1::uuid AND m.supersedes_id IS NULL
       AND ($2::uuid IS NULL OR (m.scope = 'user' AND m.user_id = $2::uuid))
    UNION ALL
    SELECT c.id, w.root_id, w.root_created_at, w.depth + 1
      FROM walk AS w
      JOIN agent.memories AS c ON c.supersedes_id = w.id AND c.organization_id = $1::uuid
)
SELECT m.id, m.organization_id, m.definition_id, m.scope, m.user_id, m.scope_owner_id, m.subject_key, m.text,
       m.subject_refs, m.supersedes_id, m.forgotten_at, m.created_at, m.expires_at,
       w.root_id, d.name AS definition_name, u.email AS user_email
  FROM walk AS w
  JOIN agent.memories AS m ON m.id = w.id
  JOIN agent.definitions AS d ON d.id = m.definition_id
  LEFT JOIN public.users AS u ON u.id = m.user_id
 ORDER BY w.root_created_at, w.root_id, w.depth;

-- name: import_definitions
-- The agent definitions an organization's import may write under, by name: its own and the platform's
-- (organization NULL), the organization's own first. $1 organization id, $2 names (text[]).
SELECT d.id, d.name, d.organization_id
  FROM agent.definitions AS d
 WHERE (d.organization_id = $1::uuid OR d.organization_id IS NULL)
   AND d.definition_kind = 'agent' AND d.name = ANY($2::text[])
 ORDER BY d.name, d.organization_id NULLS LAST, d.id;

-- name: import_definition
-- One agent definition an organization may write under, by id (no row when it may not). $1 organization id,
-- $2 definition id.
SELECT d.id, d.name
  FROM agent.definitions AS d
 WHERE d.id = $2::uuid AND (d.organization_id = $1::uuid OR d.organization_id IS NULL)
   AND d.definition_kind = 'agent';

-- name: import_people
-- The members of an organization whose email is one of $2, matched without regard to case. $1 organization
-- id, $2 emails (text[], lower case).
SELECT u.id, lower(u.email) AS email
  FROM public.users AS u
 WHERE u.organization_id = $1::uuid AND lower(u.email) = ANY($2::text[])
 ORDER BY lower(u.email), u.id;

-- name: import_person
-- Whether a user is a member of the organization. $1 organization id, $2 user id.
SELECT EXISTS (SELECT 1 FROM public.users AS u WHERE u.id = $2::uuid AND u.organization_id = $1::uuid);

-- name: imported_sources
-- Which of the given file ids the organization imported already (memories_imported_once). $1 organization
-- id, $2 ids in the file.
SELECT m.imported_from AS source_id FROM agent.memories AS m
 WHERE m.organization_id = $1::uuid AND m.imported_from = ANY($2::uuid[]);

-- name: insert_imported_chain
-- Append every revision of one imported chain in one statement, each superseding the one before (the ids
-- are made by the importer, so the links are known before the insert; the chain constraints are checked at
-- the statement's end), with its history kept: its original creation, expiry and (for a tombstone)
-- forgetting time, no run (an import is no run's write), and the id it had in the file. $1 organization
-- id, $2 definition id, $3 scope, $4 user id or NULL, $5 scope owner id, $6 subject key; per revision,
-- oldest first: $7 ids, $8 texts (NULL for a tombstone), $9 subject_refs (JSON text), $10 supersedes ids,
-- $11 forgotten at, $12 created at, $13 expires at, $14 ids in the file.
INSERT INTO agent.memories (id, organization_id, definition_id, scope, user_id, scope_owner_id, subject_key, text,
                            subject_refs, supersedes_id, forgotten_at, created_at, expires_at, imported_from)
SELECT r.id, $1::uuid, $2::uuid, $3::text, $4::uuid, $5::uuid, $6::text, r.text, r.refs::jsonb, r.supersedes_id,
       r.forgotten_at, r.created_at, r.expires_at, r.imported_from
  FROM unnest($7::uuid[], $8::text[], $9::text[], $10::uuid[], $11::timestamptz[], $12::timestamptz[],
              $13::timestamptz[], $14::uuid[])
       AS r(id, text, refs, supersedes_id, forgotten_at, created_at, expires_at, imported_from);
