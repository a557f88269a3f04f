-- The runtime statements of knowledge's database half. Every statement names its organization or its
-- source explicitly; none is assembled from request text.

-- name: insert_source
-- Register a source unless one with the same identity (URI, else content hash) exists in its scope.
-- $1 organization_id (NULL = platform), $2 kind, $3 title, $4 uri, $5 object_key, $6 content_sha256,
-- $7 media_type, $8 filename, $9 byte_size, $10 owner, $11 review_by (NULL = none), $12 the new row's id (its
-- object key names it). Returns the new row's id and status, or nothing on a conflict.
INSERT INTO agent.knowledge_sources
    (id, organization_id, kind, title, uri, object_key, content_sha256, media_type, filename, byte_size, owner,
     review_by)
VALUES ($12, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (organization_id, identity) WHERE replaces IS NULL DO NOTHING
RETURNING id, status;

-- name: ensure_wanted_models
-- Give a source a pending readiness row under every model it is wanted under and lacks. $1 source id.
INSERT INTO agent.knowledge_source_models (source_id, embedding_model)
SELECT w.source_id, w.embedding_model
  FROM agent.knowledge_wanted_models w
 WHERE w.source_id = $1
ON CONFLICT (source_id, embedding_model) DO NOTHING;

-- name: models_to_build
-- The models a source still has to be made ready under, in a stable order. $1 source id.
SELECT embedding_model
  FROM agent.knowledge_source_models
 WHERE source_id = $1 AND status <> 'ready'
 ORDER BY embedding_model;

-- name: source_document
-- What extraction needs to read a source's bytes. $1 source id.
SELECT id, organization_id, title, object_key, media_type, filename, status
  FROM agent.knowledge_sources
 WHERE id = $1;

-- name: source_model_state
-- The readiness row of one (source, model) and how many chunk rows it holds. $1 source id, $2 model.
SELECT r.status, r.chunk_count, r.embedded_count,
       (SELECT count(*) FROM agent.knowledge_chunks c
         WHERE c.source_id = $1 AND c.embedding_model = $2)::integer AS rows
  FROM agent.knowledge_source_models r
 WHERE r.source_id = $1 AND r.embedding_model = $2;

-- name: add_wanted_model_row
-- Create a pending readiness row for (source, model) if missing, only while the source is wanted under the
-- model (after `lock_model_writes`, so a cancel that stops wanting it cannot interleave). $1 source id,
-- $2 model.
INSERT INTO agent.knowledge_source_models (source_id, embedding_model)
SELECT $1, $2
 WHERE agent.knowledge_model_wanted($1, $2)
ON CONFLICT (source_id, embedding_model) DO NOTHING;

-- name: lock_model_writes
-- Take a model's write lock shared for this transaction (migrations/0073): writers run together; a cancel
-- or a cleanup deleting the model's unwanted chunks waits for them. $1 model.
SELECT agent.knowledge_model_lock_shared($1);

-- name: lock_model_drop
-- Take a model's write lock exclusive for this transaction: every write under the model in flight has
-- committed when it returns, and none starts until this transaction ends. $1 model.
SELECT agent.knowledge_model_lock_exclusive($1);

-- name: model_wanted
-- Whether a source is still wanted under a model (a live model of its scope or a running switch's
-- target). $1 source id, $2 model.
SELECT agent.knowledge_model_wanted($1, $2);


-- name: donor_chunks
-- The chunk texts of another model whose chunk rows are complete, to re-embed without re-extracting.
-- $1 source id, $2 target model. Empty when no other model holds a complete set.
WITH donor AS (
    SELECT r.embedding_model
      FROM agent.knowledge_source_models r
     WHERE r.source_id = $1 AND r.embedding_model <> $2 AND r.chunk_count > 0
       AND r.chunk_count = (SELECT count(*) FROM agent.knowledge_chunks c
                             WHERE c.source_id = $1 AND c.embedding_model = r.embedding_model)
     ORDER BY (r.status = 'ready') DESC, r.embedding_model
     LIMIT 1
)
SELECT c.ordinal, c.text, c.tokens
  FROM agent.knowledge_chunks c JOIN donor d ON d.embedding_model = c.embedding_model
 WHERE c.source_id = $1
 ORDER BY c.ordinal;

-- name: upsert_chunks
-- Write chunk rows under one model; a re-run keeps the vector of an unchanged chunk and clears a changed
-- one. $1 source id, $2 model, $3 ordinals int[], $4 texts text[], $5 tokens int[].
INSERT INTO agent.knowledge_chunks AS c (source_id, embedding_model, ordinal, text, tokens)
SELECT $1, $2, u.ordinal, u.text, u.tokens
  FROM unnest($3::integer[], $4::text[], $5::integer[]) AS u (ordinal, text, tokens)
ON CONFLICT ON CONSTRAINT knowledge_chunks_source_model_ordinal_key DO UPDATE
   SET text = EXCLUDED.text,
       tokens = EXCLUDED.tokens,
       embedding = CASE WHEN c.text = EXCLUDED.text THEN c.embedding END
 WHERE c.text IS DISTINCT FROM EXCLUDED.text OR c.tokens IS DISTINCT FROM EXCLUDED.tokens;

-- name: delete_chunks_from
-- Remove the chunk rows of one model at or beyond an ordinal (a shorter re-run). $1 source, $2 model, $3 ordinal.
DELETE FROM agent.knowledge_chunks
 WHERE source_id = $1 AND embedding_model = $2 AND ordinal >= $3;

-- name: record_chunk_count
-- Record how many chunks a (source, model) has, and how many already hold a vector.
-- $1 source id, $2 model, $3 chunk count. Returns the counts.
UPDATE agent.knowledge_source_models r
   SET chunk_count = $3,
       embedded_count = (SELECT count(*) FROM agent.knowledge_chunks c
                          WHERE c.source_id = $1 AND c.embedding_model = $2 AND c.embedding IS NOT NULL),
       updated_at = now()
 WHERE r.source_id = $1 AND r.embedding_model = $2
RETURNING r.chunk_count, r.embedded_count;

-- name: model_dimensions
-- The registered dimension of a model, or nothing. $1 model id.
SELECT dimensions FROM agent.embedding_models WHERE model_id = $1;

-- name: unembedded_chunks
-- The next chunks of one model without a vector, in ordinal order. $1 source id, $2 model, $3 batch size.
SELECT id, text
  FROM agent.knowledge_chunks
 WHERE source_id = $1 AND embedding_model = $2 AND embedding IS NULL
 ORDER BY ordinal
 LIMIT $3;

-- name: store_embeddings
-- Store vectors on chunks that have none yet and count them on the readiness row.
-- $1 source id, $2 model, $3 chunk ids bigint[], $4 vectors vector[]. Returns the new counts.
WITH stored AS (
    UPDATE agent.knowledge_chunks c
       SET embedding = v.embedding
      FROM unnest($3::bigint[], $4::vector[]) AS v (id, embedding)
     WHERE c.id = v.id AND c.source_id = $1 AND c.embedding_model = $2 AND c.embedding IS NULL
    RETURNING c.id
)
UPDATE agent.knowledge_source_models r
   SET embedded_count = r.embedded_count + (SELECT count(*) FROM stored), updated_at = now()
 WHERE r.source_id = $1 AND r.embedding_model = $2
RETURNING (SELECT count(*) FROM stored)::integer AS stored, r.embedded_count, r.chunk_count;

-- name: mark_model_ready
-- In one statement: the (source, model) row becomes ready only when all its chunk rows exist and every
-- one holds a vector; the source becomes ready with it. $1 source id, $2 model.
WITH counts AS (
    SELECT count(*)::integer AS total, count(c.embedding)::integer AS embedded
      FROM agent.knowledge_chunks c
     WHERE c.source_id = $1 AND c.embedding_model = $2
), model_ready AS (
    UPDATE agent.knowledge_source_models r
       SET status = 'ready', failure_reason = NULL, pending_since = NULL,
           embedded_count = counts.embedded, updated_at = now()
      FROM counts
     WHERE r.source_id = $1 AND r.embedding_model = $2
       AND r.chunk_count IS NOT NULL AND r.chunk_count > 0
       AND counts.total = r.chunk_count AND counts.embedded = counts.total
    RETURNING r.source_id
), source_ready AS (
    UPDATE agent.knowledge_sources s
       SET status = 'ready', failure_reason = NULL, pending_since = NULL, updated_at = now()
      FROM model_ready
     WHERE s.id = model_ready.source_id AND s.status <> 'ready'
    RETURNING s.id
)
SELECT EXISTS (SELECT 1 FROM model_ready) AS ready,
       EXISTS (SELECT 1 FROM source_ready) AS source_became_ready,
       counts.total, counts.embedded
  FROM counts;

-- name: mark_models_failed
-- Fail the not-yet-ready readiness rows of a source (one model, or every model when $2 is NULL).
-- $1 source id, $2 model or NULL, $3 reason. Returns one row per failed model.
UPDATE agent.knowledge_source_models
   SET status = 'failed', failure_reason = $3, pending_since = NULL, updated_at = now()
 WHERE source_id = $1 AND ($2::text IS NULL OR embedding_model = $2) AND status <> 'ready'
RETURNING embedding_model;

-- name: mark_source_failed
-- Fail a source that is still pending (a ready source keeps serving under its ready model).
-- $1 source id, $2 reason. Returns the id when the source was failed.
UPDATE agent.knowledge_sources
   SET status = 'failed', failure_reason = $2, pending_since = NULL, updated_at = now()
 WHERE id = $1 AND status = 'pending'
RETURNING id;

-- name: list_sources
-- An admin's view of the sources of one scope, newest first. $1 organization_id (NULL = platform), $2 limit.
-- $3 true = only the overdue ones (review_by before today in UTC, migrations/0087; a deleting one is not).
-- $4 only this status, or NULL for any.
SELECT s.id, s.organization_id, s.kind, s.title, s.uri, s.status, s.failure_reason, s.attempts,
       s.pending_since, s.created_at, s.updated_at, s.owner, s.review_by,
       coalesce(s.review_by < (now() AT TIME ZONE 'UTC')::date, false) AS overdue
  FROM agent.knowledge_sources s
 WHERE s.organization_id IS NOT DISTINCT FROM $1
   AND (NOT $3::boolean OR (s.review_by < (now() AT TIME ZONE 'UTC')::date AND s.status <> 'deleting'))
   AND ($4::text IS NULL OR s.status = $4)
 ORDER BY s.created_at DESC, s.id DESC
 LIMIT $2;

-- name: sweep_pending_sources
-- Fail every source pending since before the cutoff, with a reason an admin can read.
-- $1 cutoff timestamptz, $2 the age limit as words ("1 hour"). Returns the failed sources.
UPDATE agent.knowledge_sources
   SET status = 'failed',
       failure_reason = format(
           'ingestion_stalled: ingestion did not finish within %s (pending since %s UTC, attempt %s): the ingestion job '
           'stopped or is stuck. Retry the source to ingest it again.',
           $2::text, to_char(pending_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'), attempts),
       pending_since = NULL,
       updated_at = now()
 WHERE status = 'pending' AND pending_since < $1
RETURNING id, organization_id, failure_reason;

-- name: sweep_pending_models
-- Fail every readiness row pending since before the cutoff (e.g. a re-embed for a switchover that died).
-- $1 cutoff timestamptz, $2 the age limit as words. Returns the failed (source, model) pairs.
UPDATE agent.knowledge_source_models
   SET status = 'failed',
       failure_reason = format(
           'ingestion_stalled: embedding under %s did not finish within %s (pending since %s UTC): the job stopped or is '
           'stuck. Retry the source to embed it again.',
           embedding_model, $2::text, to_char(pending_since AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI')),
       pending_since = NULL,
       updated_at = now()
 WHERE status = 'pending' AND pending_since < $1
RETURNING source_id, embedding_model;

-- name: retry_source
-- Reset a failed source of this scope to pending. $1 source id, $2 organization_id (NULL = platform).
-- Returns the id and status whether or not it was failed, or nothing when no such source is in scope.
WITH old AS (
    SELECT id, failure_reason FROM agent.knowledge_sources
     WHERE id = $1 AND organization_id IS NOT DISTINCT FROM $2 AND status = 'failed'
       FOR UPDATE
), reset AS (
    UPDATE agent.knowledge_sources s
       SET status = 'pending', failure_reason = NULL, pending_since = now(), attempts = s.attempts + 1,
           updated_at = now()
      FROM old
     WHERE s.id = old.id
    RETURNING s.id, s.status, s.attempts
)
SELECT id, status, attempts, true AS reset FROM reset
UNION ALL
SELECT id, status, attempts, false FROM agent.knowledge_sources
 WHERE id = $1 AND organization_id IS NOT DISTINCT FROM $2 AND NOT EXISTS (SELECT 1 FROM reset);

-- name: retry_source_models
-- Reset the failed readiness rows of a source to pending. $1 source id.
UPDATE agent.knowledge_source_models
   SET status = 'pending', failure_reason = NULL, pending_since = now(), updated_at = now()
 WHERE source_id = $1 AND status = 'failed';

-- name: live_model
-- The live embedding model of an organization (its own row, else the platform row), its dimension and its
-- calibrated fusion (migrations/0103). $1 organization_id (NULL asks for the platform default).
SELECT ks.active_embedding_model AS model_id, m.dimensions, ks.organization_id IS NULL AS platform_default,
       m.fusion_method, m.dense_weight, m.lexical_weight
  FROM public.knowledge_settings ks
  JOIN agent.embedding_models m ON m.model_id = ks.active_embedding_model
 WHERE ks.organization_id = $1 OR ks.organization_id IS NULL
 ORDER BY ks.organization_id NULLS LAST
 LIMIT 1;

-- name: platform_following_organizations
-- The organizations with no knowledge_settings row of their own: a switch of the platform default changes
-- their live model (what else they embed, their memories, follows the switch).
SELECT o.id
  FROM public.organizations AS o
 WHERE NOT EXISTS (SELECT 1 FROM public.knowledge_settings AS ks WHERE ks.organization_id = o.id)
 ORDER BY o.id;

-- name: register_embedding_model
-- Register a model's dimension (no-op when registered). $1 model id, $2 dimensions. Returns the stored dimension.
WITH added AS (
    INSERT INTO agent.embedding_models (model_id, dimensions) VALUES ($1, $2)
    ON CONFLICT (model_id) DO NOTHING
    RETURNING dimensions
)
SELECT dimensions FROM added
UNION ALL
SELECT dimensions FROM agent.embedding_models WHERE model_id = $1 AND NOT EXISTS (SELECT 1 FROM added);

-- name: ensure_model_index
-- Create the partial HNSW index of a registered model from the model table, and its knowledge_search function
-- with the dispatcher that calls it (migrations/0107). $1 model id. Returns the index's name.
SELECT agent.ensure_embedding_model_index($1);

-- name: start_switch
-- Record a running switchover of one scope unless one is running. $1 organization_id (NULL = platform),
-- $2 from model, $3 to model.
-- Returns the new switch's id, or nothing when one is running.
INSERT INTO agent.knowledge_switches (organization_id, from_model, to_model)
VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: running_switch
-- The running switchover of one scope, if any. $1 organization_id (NULL = platform).
SELECT id, organization_id, from_model, to_model, started_at
  FROM agent.knowledge_switches
 WHERE organization_id IS NOT DISTINCT FROM $1 AND status = 'running';

-- name: add_scope_model_rows
-- Give every source in a switch's scope a pending readiness row under the new model.
-- $1 organization_id (NULL = platform), $2 new model. Returns the sources of the scope not yet ready under it.
WITH added AS (
    INSERT INTO agent.knowledge_source_models (source_id, embedding_model)
    SELECT sc.source_id, $2 FROM agent.knowledge_switch_scope($1) sc
    ON CONFLICT (source_id, embedding_model) DO NOTHING
    RETURNING source_id
)
SELECT sc.source_id
  FROM agent.knowledge_switch_scope($1) sc
  LEFT JOIN agent.knowledge_source_models r ON r.source_id = sc.source_id AND r.embedding_model = $2
 WHERE r.status IS DISTINCT FROM 'ready'
 UNION
SELECT source_id FROM added;

-- name: switch_counts
-- How far a switchover of one scope is: sources in scope and their readiness under the new model.
-- $1 organization_id (NULL = platform), $2 new model.
SELECT count(*)::integer AS total,
       count(*) FILTER (WHERE r.status = 'ready')::integer AS ready,
       count(*) FILTER (WHERE r.status = 'pending')::integer AS pending,
       count(*) FILTER (WHERE r.status = 'failed')::integer AS failed,
       count(*) FILTER (WHERE r.status IS NULL)::integer AS missing
  FROM agent.knowledge_switch_scope($1) sc
  LEFT JOIN agent.knowledge_source_models r ON r.source_id = sc.source_id AND r.embedding_model = $2;

-- name: flip_live_model
-- The switch: one row, one instant. Names the new model live for the scope only when every source in
-- scope is ready under it. $1 organization_id (NULL = platform), $2 new model. Returns the row when flipped.
INSERT INTO public.knowledge_settings AS ks (organization_id, active_embedding_model)
SELECT $1, $2
 WHERE NOT EXISTS (
        SELECT 1
          FROM agent.knowledge_switch_scope($1) sc
          LEFT JOIN agent.knowledge_source_models r ON r.source_id = sc.source_id AND r.embedding_model = $2
         WHERE r.status IS DISTINCT FROM 'ready')
ON CONFLICT ON CONSTRAINT knowledge_settings_organization_key DO UPDATE
   SET active_embedding_model = EXCLUDED.active_embedding_model, updated_at = now()
RETURNING ks.id, ks.active_embedding_model;

-- name: finish_switch
-- Close one running switchover (after `lock_running_switch`). $1 switch id, $2 'flipped' or 'cancelled'.
UPDATE agent.knowledge_switches
   SET status = $2, finished_at = now()
 WHERE id = $1 AND status = 'running'
RETURNING id;

-- name: switch_by_id
-- One switchover, running or finished. $1 switch id.
SELECT id, organization_id, from_model, to_model, status, started_at, finished_at
  FROM agent.knowledge_switches
 WHERE id = $1;

-- name: lock_running_switch
-- Lock the running switchover of a scope toward a model for this transaction, so a flip and a cancel of it
-- are one after the other: the second finds it no longer running. $1 organization_id (NULL = platform),
-- $2 to model. Returns it, or nothing when no such switch runs.
SELECT id, organization_id, from_model, to_model, started_at
  FROM agent.knowledge_switches
 WHERE organization_id IS NOT DISTINCT FROM $1 AND to_model = $2 AND status = 'running'
   FOR UPDATE;

-- name: switch_waiting
-- What the flip of a switchover waits for: the sources in scope not ready under the new model, pending
-- first, oldest first. $1 organization_id (NULL = platform), $2 new model, $3 limit.
SELECT sc.source_id, s.title, s.status AS source_status, r.status, r.failure_reason,
       coalesce(r.pending_since, s.pending_since) AS pending_since
  FROM agent.knowledge_switch_scope($1) sc
  JOIN agent.knowledge_sources s ON s.id = sc.source_id
  LEFT JOIN agent.knowledge_source_models r ON r.source_id = sc.source_id AND r.embedding_model = $2
 WHERE r.status IS DISTINCT FROM 'ready'
 ORDER BY (r.status = 'failed') DESC NULLS LAST, coalesce(r.pending_since, s.pending_since) NULLS LAST, sc.source_id
 LIMIT $3;

-- name: drop_unwanted_chunks
-- Delete the chunks of one model on every source that no live model and no running switch still needs,
-- with their readiness rows; run after `lock_model_drop` in the same transaction, so no write in flight
-- under the model lands after it. $1 model. Returns the number of chunks and readiness rows deleted.
WITH wanted AS (
    SELECT w.source_id FROM agent.knowledge_wanted_models w WHERE w.embedding_model = $1
), dropped AS (
    DELETE FROM agent.knowledge_chunks c
     WHERE c.embedding_model = $1 AND c.source_id NOT IN (SELECT source_id FROM wanted)
    RETURNING 1
), dropped_rows AS (
    DELETE FROM agent.knowledge_source_models r
     WHERE r.embedding_model = $1 AND r.source_id NOT IN (SELECT source_id FROM wanted)
    RETURNING 1
)
SELECT (SELECT count(*) FROM dropped)::integer AS chunks, (SELECT count(*) FROM dropped_rows)::integer AS sources;

-- name: knowledge_search
-- Hybrid search through the SQL function (migrations/0107, whose main statement is each model's own static
-- function, agent.knowledge_search_<model>, written at registration; read it whole in docs/schema.sql).
-- $1 organization_id, $2 query embedding, $3 query text, $4 include_platform, $5 include_organization,
-- $6 limit, $7 the model the query was embedded with, $8 dense weight, $9 lexical weight (both NULL: the
-- model's), $10 candidates per list (NULL = 4 x limit), $11 the reciprocal-rank constant k, $12 fusion ('rrf'
-- or 'convex'; NULL: the model's), $13 relevance floor, $14 per-source cap (NULL = none), $15 lexical depth per term,
-- $16 hnsw.ef_search (NULL = the function's), $17 BM25 k1, $18 BM25 b, $19 the weight of a chunk's
-- source's BM25 in its lexical score (0 = the chunk's own BM25 only), $20 the top of either half kept
-- above the lower floor, $21 that lower floor, $22 explain (also return the cut candidates, with `cut`),
-- $23 the cosine that answers a query (NULL: every query is answered), $24 the BM25 share that does.
-- Each hit also carries its source's review date and whether it is overdue (before today in UTC,
-- migrations/0087): one primary-key probe per hit in the same statement, no second round trip.
SELECT h.chunk_id, h.source_id, h.source_title, h.source_organization_id, h.ordinal, h.text, h.tokens,
       h.embedding_model, h.dense_rank, h.lexical_rank, h.dense_distance, h.lexical_score, h.score, h.cut,
       h.relevance, h.placed,
       r.review_by AS source_review_by,
       coalesce(r.review_by < (now() AT TIME ZONE 'UTC')::date, false) AS source_overdue
  FROM public.knowledge_search($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, p_fusion => $12,
                               p_min_relevance => $13, p_per_source => $14, p_lexical_depth => $15,
                               p_ef_search => $16, p_k1 => $17, p_b => $18, p_source_weight => $19,
                               p_keep_top => $20, p_keep_floor => $21, p_explain => $22,
                               p_answer_cosine => $23, p_answer_lexical => $24)
       WITH ORDINALITY AS h
 CROSS JOIN LATERAL (
        -- A scalar subquery, so each hit is one probe of the primary key whatever the planner's row guess.
        SELECT (SELECT s.review_by FROM agent.knowledge_sources s WHERE s.id = h.source_id) AS review_by) AS r
 ORDER BY h.ordinality;

-- name: source_by_id
-- An operator's view of one source, whatever its scope (the caller checks the scope). $1 source id.
SELECT s.id, s.organization_id, s.kind, s.title, s.uri, s.status, s.failure_reason, s.attempts,
       s.pending_since, s.created_at, s.updated_at, s.owner, s.review_by,
       coalesce(s.review_by < (now() AT TIME ZONE 'UTC')::date, false) AS overdue
  FROM agent.knowledge_sources s
 WHERE s.id = $1;

-- name: source_model_readiness
-- The readiness of some sources under each model, with the chunk rows each holds. $1 source ids (uuid[]).
SELECT r.source_id, r.embedding_model, r.status, r.chunk_count, r.embedded_count, r.failure_reason,
       r.pending_since
  FROM agent.knowledge_source_models r
 WHERE r.source_id = ANY($1::uuid[])
 ORDER BY r.source_id, r.embedding_model;

-- name: bulk_plan
-- What bulk ingestion needs of many sources: each one's document, status and the models it still needs.
-- $1 source ids uuid[].
SELECT s.id, s.status, s.failure_reason, s.object_key, s.media_type, s.filename,
       coalesce(array_agg(r.embedding_model ORDER BY r.embedding_model)
                FILTER (WHERE r.embedding_model IS NOT NULL), '{}') AS models
  FROM agent.knowledge_sources s
  LEFT JOIN agent.knowledge_source_models r ON r.source_id = s.id AND r.status <> 'ready'
 WHERE s.id = ANY($1::uuid[])
 GROUP BY s.id;

-- name: create_chunk_staging
-- A transaction's staging table for COPY: chunks with their vectors, dropped at commit.
CREATE TEMP TABLE IF NOT EXISTS knowledge_chunk_staging (
    source_id uuid NOT NULL,
    ordinal integer NOT NULL,
    text text NOT NULL,
    tokens integer NOT NULL,
    embedding vector NOT NULL
) ON COMMIT DROP;

-- name: merge_staged_chunks
-- Move the staged chunks of one model into place: a re-run overwrites the rows of an earlier, interrupted
-- run instead of duplicating them (the unique key decides). $1 model.
INSERT INTO agent.knowledge_chunks AS c (source_id, embedding_model, ordinal, text, tokens, embedding)
SELECT st.source_id, $1, st.ordinal, st.text, st.tokens, st.embedding
  FROM pg_temp.knowledge_chunk_staging st
ON CONFLICT ON CONSTRAINT knowledge_chunks_source_model_ordinal_key DO UPDATE
   SET text = EXCLUDED.text, tokens = EXCLUDED.tokens, embedding = EXCLUDED.embedding
 WHERE c.text IS DISTINCT FROM EXCLUDED.text OR c.tokens IS DISTINCT FROM EXCLUDED.tokens
    OR c.embedding IS NULL;

-- name: drop_unwanted_staged
-- Take out of the staging table the chunks of the sources no longer wanted under the model (after
-- `lock_model_writes`: a cancel stopped wanting it while they were embedded). $1 model, $2 the staged
-- source ids uuid[] (an array, so the filter reaches every branch of the view). Returns the sources taken out.
WITH wanted AS (
    SELECT w.source_id
      FROM agent.knowledge_wanted_models w
     WHERE w.embedding_model = $1 AND w.source_id = ANY($2::uuid[])
), gone AS (
    DELETE FROM pg_temp.knowledge_chunk_staging st
     WHERE st.source_id NOT IN (SELECT source_id FROM wanted)
    RETURNING st.source_id
)
SELECT DISTINCT source_id FROM gone;

-- name: delete_unstaged_chunks
-- Remove a staged source's rows of one model beyond its staged chunks (a shorter re-run). $1 model.
DELETE FROM agent.knowledge_chunks c
 USING (SELECT source_id, max(ordinal) AS last FROM pg_temp.knowledge_chunk_staging GROUP BY source_id) st
 WHERE c.source_id = st.source_id AND c.embedding_model = $1 AND c.ordinal > st.last;

-- name: mark_staged_ready
-- In one statement: each staged (source, model) row becomes ready only when its chunk rows are exactly the
-- staged ones and every one holds a vector; the sources become ready with them. $1 model. Returns the
-- sources whose model row became ready and those that became ready themselves.
WITH staged AS (
    SELECT source_id, count(*)::integer AS n FROM pg_temp.knowledge_chunk_staging GROUP BY source_id
), counts AS (
    SELECT c.source_id, count(*)::integer AS total, count(c.embedding)::integer AS embedded
      FROM agent.knowledge_chunks c JOIN staged USING (source_id)
     WHERE c.embedding_model = $1
     GROUP BY c.source_id
), model_ready AS (
    UPDATE agent.knowledge_source_models r
       SET status = 'ready', chunk_count = counts.total, embedded_count = counts.embedded,
           failure_reason = NULL, pending_since = NULL, updated_at = now()
      FROM counts JOIN staged USING (source_id)
     WHERE r.source_id = counts.source_id AND r.embedding_model = $1 AND r.status <> 'ready'
       AND counts.total = staged.n AND counts.embedded = counts.total AND counts.total > 0
    RETURNING r.source_id
), source_ready AS (
    UPDATE agent.knowledge_sources s
       SET status = 'ready', failure_reason = NULL, pending_since = NULL, updated_at = now()
      FROM model_ready
     WHERE s.id = model_ready.source_id AND s.status <> 'ready'
    RETURNING s.id
)
SELECT coalesce((SELECT array_agg(source_id) FROM model_ready), '{}') AS models_ready,
       coalesce((SELECT array_agg(id) FROM source_ready), '{}') AS sources_ready;

-- name: swap_replaced_sources
-- The re-sync swap, in the transaction that made the new versions ready (the new row locked first, then the
-- old: the order `lock_source_for_delete` takes, so a delete waits for the swap without a deadlock): delete
-- the rows they replace (their chunks go with them; the new rows' `replaces` becomes NULL), the new rows
-- keeping the replaced ids in `earlier_versions` (migrations/0097) so a delete by an old id still finds
-- them; the trigger of migrations/0098 queues their objects' deletes. $1 source ids that became ready.
-- Returns the deleted rows' ids and object keys.
WITH old AS (
    SELECT o.id, o.earlier_versions, n.id AS new_id
      FROM agent.knowledge_sources n
      JOIN agent.knowledge_sources o ON o.id = n.replaces
     WHERE n.id = ANY($1::uuid[])
), remembered AS (
    UPDATE agent.knowledge_sources n
       SET earlier_versions = old.earlier_versions || old.id
      FROM old
     WHERE n.id = old.new_id
)
DELETE FROM agent.knowledge_sources s
 USING old
 WHERE s.id = old.id
RETURNING s.id, s.object_key;

-- name: lock_versions_of_identity
-- Lock the versions of one URI in one scope (the live row and its replacement), replacements first, before
-- a registration reads them (the order of `lock_source_for_delete`): a delete in flight commits first. $1 organization_id (NULL = platform),
-- $2 identity.
SELECT s.id
  FROM agent.knowledge_sources s
 WHERE s.organization_id IS NOT DISTINCT FROM $1 AND s.identity = $2
 ORDER BY (s.replaces IS NULL), s.id
   FOR UPDATE OF s;

-- name: existing_version
-- The live row of a URI (the one that replaces nothing) and its pending or failed replacement, if any.
-- $1 organization_id (NULL = platform), $2 identity.
SELECT live.id, live.status, live.content_sha256,
       next.id AS next_id, next.status AS next_status, next.content_sha256 AS next_sha256
  FROM agent.knowledge_sources live
  LEFT JOIN agent.knowledge_sources next ON next.replaces = live.id
 WHERE live.organization_id IS NOT DISTINCT FROM $1 AND live.identity = $2 AND live.replaces IS NULL;

-- name: insert_replacement
-- Register a new version of a URI-backed source that replaces the live one. Same columns as insert_source,
-- then $10 the id it replaces (its owner and review date carry over where $11 and $12 are NULL), $13 the new
-- row's id (its object key names it). Returns the new row's id and status.
INSERT INTO agent.knowledge_sources
    (id, organization_id, kind, title, uri, object_key, content_sha256, media_type, filename, byte_size, replaces,
     owner, review_by)
SELECT $13, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, coalesce($11, live.owner), coalesce($12::date, live.review_by)
  FROM agent.knowledge_sources live
 WHERE live.id = $10
RETURNING id, status;

-- name: delete_replacement
-- Drop a replacement that never became ready (a newer version supersedes it; the trigger of migrations/0098
-- queues its object's delete). $1 its id. Returns its object key, or nothing.
DELETE FROM agent.knowledge_sources WHERE id = $1 AND replaces IS NOT NULL AND status <> 'ready'
RETURNING object_key;

-- name: insert_sources_many
-- Register many sources of one scope at once; conflicts (already registered) return nothing.
-- $1 organization_id, $2 kinds text[], $3 titles, $4 uris, $5 object keys, $6 hashes, $7 media types,
-- $8 filenames, $9 byte sizes bigint[], $10 owners text[], $11 review dates date[] (NULL = none), $12 the new
-- rows' ids uuid[] (their object keys name them). Returns the new rows' id, identity and status.
INSERT INTO agent.knowledge_sources
    (id, organization_id, kind, title, uri, object_key, content_sha256, media_type, filename, byte_size, owner,
     review_by)
SELECT u.id, $1, u.kind, u.title, u.uri, u.object_key, u.sha, u.media_type, u.filename, u.byte_size, u.owner,
       u.review_by
  FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[],
              $10::text[], $11::date[], $12::uuid[])
       AS u (kind, title, uri, object_key, sha, media_type, filename, byte_size, owner, review_by, id)
ON CONFLICT (organization_id, identity) WHERE replaces IS NULL DO NOTHING
RETURNING id, identity, status;

-- name: existing_sources_many
-- The live rows of many identities in one scope. $1 organization_id, $2 identities text[].
SELECT id, identity, status, content_sha256
  FROM agent.knowledge_sources
 WHERE organization_id IS NOT DISTINCT FROM $1 AND identity = ANY($2::text[]) AND replaces IS NULL;

-- name: ensure_wanted_models_many
-- `ensure_wanted_models` for many sources. $1 source ids uuid[]. Returns each pending (source, model).
WITH added AS (
    INSERT INTO agent.knowledge_source_models (source_id, embedding_model)
    SELECT w.source_id, w.embedding_model
      FROM agent.knowledge_wanted_models w
      JOIN agent.knowledge_sources s ON s.id = w.source_id AND s.status <> 'failed'
     WHERE w.source_id = ANY($1::uuid[])
    ON CONFLICT (source_id, embedding_model) DO NOTHING
    RETURNING source_id, embedding_model
)
SELECT source_id, embedding_model FROM added
UNION
SELECT source_id, embedding_model FROM agent.knowledge_source_models
 WHERE source_id = ANY($1::uuid[]) AND status <> 'ready';

-- name: lock_source_for_delete
-- Lock every version of a source for a delete, in this transaction: the versions of the URI (same scope and
-- identity) of the row whose id, or one of whose `earlier_versions` (migrations/0097), is $1. Replacements
-- first, as a swap locks them (`swap_replaced_sources`), so a re-sync made ready meanwhile is waited for and
-- then found under the same identity. Returns the rows; nothing when no version has that id.
WITH asked AS (
    SELECT a.organization_id, a.identity
      FROM agent.knowledge_sources a
     WHERE a.id = $1 OR a.earlier_versions @> ARRAY[$1::uuid]
     LIMIT 1
)
SELECT s.id, s.organization_id, s.status, s.object_key, s.replaces
  FROM agent.knowledge_sources s
  JOIN asked ON s.organization_id IS NOT DISTINCT FROM asked.organization_id AND s.identity = asked.identity
 ORDER BY (s.replaces IS NULL), s.id
   FOR UPDATE OF s;

-- name: source_deletion_receipt
-- The newest deletion receipt of a source, whatever its organization: the one asked for it, or one that
-- removed it as a version of its URI (migrations/0097). $1 source id.
SELECT id, organization_id, status
  FROM agent.removal_receipts
 WHERE kind = 'source' AND (target_id = $1 OR versions @> ARRAY[$1::uuid])
 ORDER BY started_at DESC, id DESC
 LIMIT 1;

-- name: count_unsearchable_rows
-- What making these sources unsearchable removes: their searchable pairs, their postings and their source-level
-- statistics rows (migrations/0092; all go with the postings). Run before `mark_sources_deleting` in the same
-- transaction. $1 source ids uuid[].
SELECT (SELECT count(*) FROM agent.knowledge_searchable sp WHERE sp.source_id = ANY($1::uuid[]))::bigint AS pairs,
       (SELECT count(*) FROM agent.knowledge_postings p
          JOIN agent.knowledge_chunks c ON c.id = p.chunk_id
         WHERE c.source_id = ANY($1::uuid[]))::bigint AS postings,
       (SELECT count(*) FROM agent.knowledge_lexical_chunks k
         WHERE k.source_id = ANY($1::uuid[]))::bigint AS lexical_chunks,
       (SELECT count(*) FROM agent.knowledge_lexical_sources ls
         WHERE ls.source_id = ANY($1::uuid[]))::bigint AS lexical_sources,
       (SELECT count(*) FROM agent.knowledge_source_terms st
         WHERE st.source_id = ANY($1::uuid[]))::bigint AS source_terms;

-- name: mark_sources_deleting
-- Make sources unsearchable at once (migrations/0081: the lexical trigger of 0040 unlists their pairs and
-- uncounts their postings in this statement). $1 source ids uuid[]. Returns the sources marked.
UPDATE agent.knowledge_sources
   SET status = 'deleting', failure_reason = NULL, pending_since = NULL, updated_at = now()
 WHERE id = ANY($1::uuid[]) AND status <> 'deleting'
RETURNING id;

-- name: delete_source_chunk_batch
-- Delete up to $2 chunks (of every model) of deleting sources $1 (uuid[]), with their postings (the
-- chunk trigger of 0040). Returns the chunks and postings deleted.
WITH batch AS (
    SELECT c.id FROM agent.knowledge_chunks c
     WHERE c.source_id = ANY($1::uuid[])
     ORDER BY c.source_id, c.embedding_model, c.ordinal
     LIMIT $2
), postings AS (
    SELECT count(*) AS n FROM agent.knowledge_postings p WHERE p.chunk_id IN (SELECT id FROM batch)
), deleted AS (
    DELETE FROM agent.knowledge_chunks c WHERE c.id IN (SELECT id FROM batch) RETURNING 1
)
SELECT (SELECT count(*) FROM deleted)::bigint AS chunks, (SELECT n FROM postings)::bigint AS postings;

-- name: record_receipt_versions
-- List the versions a source delete removes on its receipt (migrations/0097). $1 receipt id, $2 ids uuid[].
UPDATE agent.removal_receipts
   SET versions = ARRAY(SELECT DISTINCT v FROM unnest(versions || $2::uuid[]) v ORDER BY v)
 WHERE id = $1;

-- name: object_key_shared
-- Whether a source other than these still names an object key. $1 key, $2 the deleted source ids uuid[].
SELECT EXISTS (SELECT 1 FROM agent.knowledge_sources WHERE object_key = $1 AND NOT (id = ANY($2::uuid[])));

-- name: delete_source_rows
-- Delete deleting sources (after `lock_source_for_delete`): any chunk a raced write left, their readiness
-- rows and attempts (migrations/0120), then the rows. $1 source ids uuid[], replacements before the row they
-- replace. Returns the counts.
WITH chunks AS (
    DELETE FROM agent.knowledge_chunks c WHERE c.source_id = ANY($1::uuid[]) RETURNING 1
), models AS (
    DELETE FROM agent.knowledge_source_models r WHERE r.source_id = ANY($1::uuid[]) RETURNING 1
), attempts AS (
    DELETE FROM agent.knowledge_source_attempts a WHERE a.source_id = ANY($1::uuid[]) RETURNING 1
)
SELECT (SELECT count(*) FROM chunks)::bigint AS chunks, (SELECT count(*) FROM models)::bigint AS source_models,
       (SELECT count(*) FROM attempts)::bigint AS attempts;

-- name: count_source_citations
-- The brief citations (migration 0122) of these sources, in every organization: the statement trigger on
-- agent.knowledge_sources deletes them with the rows. $1 source ids uuid[].
SELECT count(*)::bigint FROM agent.brief_citations
 WHERE ref_kind = 'knowledge_source' AND ref_id = ANY(SELECT unnest($1::uuid[])::text);

-- name: delete_sources_by_id
-- The rows themselves, once `delete_source_rows` emptied them. $1 source ids uuid[]. Returns the count.
WITH gone AS (
    DELETE FROM agent.knowledge_sources s WHERE s.id = ANY($1::uuid[]) AND s.status = 'deleting' RETURNING 1
)
SELECT count(*)::bigint FROM gone;

-- name: organization_unsearchable_counts
-- What making an organization's sources unsearchable removes: its searchable pairs, postings and source-level
-- statistics rows (migrations/0092). $1 org.
SELECT (SELECT count(*) FROM agent.knowledge_searchable sp
          JOIN agent.knowledge_sources s ON s.id = sp.source_id
         WHERE s.organization_id = $1)::bigint AS pairs,
       (SELECT count(*) FROM agent.knowledge_postings p
          JOIN agent.knowledge_chunks c ON c.id = p.chunk_id
          JOIN agent.knowledge_sources s ON s.id = c.source_id
         WHERE s.organization_id = $1)::bigint AS postings,
       (SELECT count(*) FROM agent.knowledge_lexical_chunks k
          JOIN agent.knowledge_sources s ON s.id = k.source_id
         WHERE s.organization_id = $1)::bigint AS lexical_chunks,
       (SELECT count(*) FROM agent.knowledge_lexical_sources ls
          JOIN agent.knowledge_sources s ON s.id = ls.source_id
         WHERE s.organization_id = $1)::bigint AS lexical_sources,
       (SELECT count(*) FROM agent.knowledge_source_terms st
          JOIN agent.knowledge_sources s ON s.id = st.source_id
         WHERE s.organization_id = $1)::bigint AS source_terms;

-- name: mark_organization_deleting
-- Make every source of one organization unsearchable (as `mark_sources_deleting`). $1 organization id.
-- Returns the sources marked.
UPDATE agent.knowledge_sources
   SET status = 'deleting', failure_reason = NULL, pending_since = NULL, updated_at = now()
 WHERE organization_id = $1 AND status <> 'deleting'
RETURNING id;

-- name: delete_organization_chunk_batch
-- Delete up to $2 chunks (of every model) of one organization's sources ($1), with their postings.
-- Returns the chunks and postings deleted.
WITH batch AS (
    SELECT c.id FROM agent.knowledge_chunks c
      JOIN agent.knowledge_sources s ON s.id = c.source_id
     WHERE s.organization_id = $1 AND s.status = 'deleting'
     LIMIT $2
), postings AS (
    SELECT count(*) AS n FROM agent.knowledge_postings p WHERE p.chunk_id IN (SELECT id FROM batch)
), deleted AS (
    DELETE FROM agent.knowledge_chunks c WHERE c.id IN (SELECT id FROM batch) RETURNING 1
)
SELECT (SELECT count(*) FROM deleted)::bigint AS chunks, (SELECT n FROM postings)::bigint AS postings;

-- name: organization_source_batch
-- Up to $2 deleting sources of one organization ($1) with their object keys, replacements first.
SELECT s.id, s.object_key
  FROM agent.knowledge_sources s
 WHERE s.organization_id = $1 AND s.status = 'deleting'
 ORDER BY (s.replaces IS NULL), s.id
 LIMIT $2;

-- name: lock_deleting_sources
-- Lock these deleting sources for this transaction (a write in flight to one commits first), replacements
-- first as every lock of source rows is taken (`lock_source_for_delete`). $1 ids uuid[].
SELECT s.id FROM agent.knowledge_sources s
 WHERE s.id = ANY($1::uuid[]) AND s.status = 'deleting'
 ORDER BY (s.replaces IS NULL), s.id
   FOR UPDATE;

-- name: organization_scopes
-- The lexical scope ids of one organization (every model). $1 organization id.
SELECT id FROM agent.knowledge_lexical_scopes WHERE organization_id = $1 ORDER BY id;

-- name: delete_scope_lexeme_batch
-- Delete up to $2 lexeme rows of these scopes ($1 integer[]). Returns the count.
WITH batch AS (
    SELECT l.scope_id, l.lexeme FROM agent.knowledge_lexemes l WHERE l.scope_id = ANY($1::integer[]) LIMIT $2
), gone AS (
    DELETE FROM agent.knowledge_lexemes l USING batch b
     WHERE l.scope_id = b.scope_id AND l.lexeme = b.lexeme
    RETURNING 1
)
SELECT count(*)::bigint FROM gone;

-- name: delete_scope_rows
-- The rest of these scopes once their lexemes are gone: stray postings, source-level statistics (0092) and
-- searchable pairs, then the scope rows. $1 scope ids integer[]. Returns the counts.
WITH postings AS (
    DELETE FROM agent.knowledge_postings p WHERE p.scope_id = ANY($1::integer[]) RETURNING 1
), counted AS (
    DELETE FROM agent.knowledge_lexical_chunks k WHERE k.scope_id = ANY($1::integer[]) RETURNING 1
), lexical_sources AS (
    DELETE FROM agent.knowledge_lexical_sources ls WHERE ls.scope_id = ANY($1::integer[]) RETURNING 1
), source_terms AS (
    DELETE FROM agent.knowledge_source_terms st WHERE st.scope_id = ANY($1::integer[]) RETURNING 1
), pairs AS (
    DELETE FROM agent.knowledge_searchable sp WHERE sp.scope_id = ANY($1::integer[]) RETURNING 1
), scopes AS (
    DELETE FROM agent.knowledge_lexical_scopes sc WHERE sc.id = ANY($1::integer[]) RETURNING 1
)
SELECT (SELECT count(*) FROM postings)::bigint AS postings, (SELECT count(*) FROM pairs)::bigint AS pairs,
       (SELECT count(*) FROM scopes)::bigint AS scopes, (SELECT count(*) FROM counted)::bigint AS lexical_chunks,
       (SELECT count(*) FROM lexical_sources)::bigint AS lexical_sources,
       (SELECT count(*) FROM source_terms)::bigint AS source_terms;

-- name: delete_organization_settings
-- An organization's own live-model row and its switchovers. $1 organization id. Returns the counts.
WITH settings AS (
    DELETE FROM public.knowledge_settings WHERE organization_id = $1 RETURNING 1
), switches AS (
    DELETE FROM agent.knowledge_switches WHERE organization_id = $1 RETURNING 1
)
SELECT (SELECT count(*) FROM settings)::bigint AS settings, (SELECT count(*) FROM switches)::bigint AS switches;

-- name: set_sources_review
-- The re-upload rule (docs/decisions.md, issue 22): a document registered again with an owner or a review
-- date sets it on the row it lands on; a field sent as NULL keeps what the row holds. $1 source ids uuid[],
-- $2 owners text[], $3 review dates date[] (NULL = keep). A deleting source is left alone. Returns the ids
-- it changed.
UPDATE agent.knowledge_sources s
   SET owner = coalesce(u.owner, s.owner), review_by = coalesce(u.review_by, s.review_by), updated_at = now()
  FROM unnest($1::uuid[], $2::text[], $3::date[]) AS u (id, owner, review_by)
 WHERE s.id = u.id AND (u.owner IS NOT NULL OR u.review_by IS NOT NULL) AND s.status <> 'deleting'
   AND (s.owner IS DISTINCT FROM coalesce(u.owner, s.owner) OR s.review_by IS DISTINCT FROM coalesce(u.review_by, s.review_by))
RETURNING s.id;

-- name: overdue_source_counts
-- The /metrics count: overdue sources (review_by before today in UTC, migrations/0087) per organization,
-- NULL for the platform, a deleting source not counted; an index-only scan of knowledge_sources_review_idx.
-- No parameter.
SELECT s.organization_id, count(*)::integer AS overdue
  FROM agent.knowledge_sources s
 WHERE s.review_by IS NOT NULL AND s.status <> 'deleting' AND s.review_by < (now() AT TIME ZONE 'UTC')::date
 GROUP BY s.organization_id
 ORDER BY s.organization_id NULLS FIRST;

-- name: queued_object_deletes
-- Up to $4 queued object deletes (migrations/0098), oldest first, whose key no row names any more: of the keys
-- $1 (text[], NULL = any), of one scope when $2 (the organization $3, NULL = platform), else of every scope.
SELECT q.object_key
  FROM agent.knowledge_object_deletes q
 WHERE ($1::text[] IS NULL OR q.object_key = ANY($1::text[]))
   AND (NOT $2::boolean OR q.organization_id IS NOT DISTINCT FROM $3::uuid)
   AND NOT EXISTS (SELECT 1 FROM agent.knowledge_sources s WHERE s.object_key = q.object_key)
 ORDER BY q.queued_at, q.object_key
 LIMIT $4;

-- name: forget_object_deletes
-- Drop the queued deletes of objects just deleted from the store. $1 keys text[]. Returns the keys dropped.
DELETE FROM agent.knowledge_object_deletes WHERE object_key = ANY($1::text[]) RETURNING object_key;

-- Paged reads (knowledge/ingestion/source_pages.py, state/paging.py): each page starts after a keyset
-- position and fetches one row more than it shows; the first page starts from a sentinel beyond every row.

-- name: count_sources_filtered
-- How many sources `page_sources` pages through. $1 organization_id (NULL = platform), $2 true = only the
-- overdue ones, $3 only this status or NULL, $4 text the title contains (any case) or NULL. The scope is
-- matched through the expression of knowledge_sources_page_idx (migrations/0102).
SELECT count(*)
  FROM agent.knowledge_sources s
 WHERE coalesce(s.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
       = coalesce($1::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
   AND (NOT $2::boolean OR (s.review_by < (now() AT TIME ZONE 'UTC')::date AND s.status <> 'deleting'))
   AND ($3::text IS NULL OR s.status = $3)
   AND ($4::text IS NULL OR strpos(lower(s.title), lower($4)) > 0);

-- name: page_sources
-- A page of one scope's sources, newest first, each with the model it is shown under (its scope's live
-- model when it is wanted under it, else the newest model it is wanted under) and its chunk counts there.
-- $1 organization_id (NULL = platform), $2 only overdue, $3 status or NULL, $4 title text or NULL,
-- $5 the most rows, $6 created_at and $7 id the page starts after. `page_sources` (knowledge/ingestion/
-- source_pages.py) swaps the keyset line and the ORDER BY for another sort or the previous page (both from
-- code, never from request text; its indexes are named there).
WITH live AS (
    SELECT ks.active_embedding_model AS model
      FROM public.knowledge_settings ks
     WHERE ks.organization_id = $1 OR ks.organization_id IS NULL
     ORDER BY ks.organization_id NULLS LAST
     LIMIT 1)
SELECT s.id, s.organization_id, s.kind, s.title, s.uri, s.status, s.failure_reason, s.attempts,
       s.pending_since, s.created_at, s.updated_at, s.owner, s.review_by,
       coalesce(s.review_by < (now() AT TIME ZONE 'UTC')::date AND s.status <> 'deleting', false) AS overdue,
       m.embedding_model, m.chunk_count, m.embedded_count
  FROM agent.knowledge_sources s
  LEFT JOIN LATERAL (
       SELECT r.embedding_model, r.chunk_count, r.embedded_count
         FROM agent.knowledge_source_models r
        WHERE r.source_id = s.id
        ORDER BY r.embedding_model IS NOT DISTINCT FROM (SELECT model FROM live) DESC, r.created_at DESC,
                 r.embedding_model
        LIMIT 1) m ON true
 WHERE coalesce(s.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
       = coalesce($1::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
   AND (NOT $2::boolean OR (s.review_by < (now() AT TIME ZONE 'UTC')::date AND s.status <> 'deleting'))
   AND ($3::text IS NULL OR s.status = $3)
   AND ($4::text IS NULL OR strpos(lower(s.title), lower($4)) > 0)
   AND (s.created_at, s.id) < ($6::timestamptz, $7::uuid)
 ORDER BY s.created_at DESC, s.id DESC
 LIMIT $5;

-- name: source_shown_model
-- The model a source is shown under: its scope's live model when the source is wanted under it, else the
-- newest model it is wanted under; no row when it has none yet. $1 source id.
SELECT r.embedding_model
  FROM agent.knowledge_source_models r
  JOIN agent.knowledge_sources s ON s.id = r.source_id
 WHERE r.source_id = $1
 ORDER BY r.embedding_model IS NOT DISTINCT FROM (
              SELECT ks.active_embedding_model
                FROM public.knowledge_settings ks
               WHERE ks.organization_id = s.organization_id OR ks.organization_id IS NULL
               ORDER BY ks.organization_id NULLS LAST
               LIMIT 1) DESC,
          r.created_at DESC, r.embedding_model
 LIMIT 1;

-- name: count_source_chunks
-- How many chunks a source has under one model (the unique index on source, model, ordinal counts them).
-- $1 source id, $2 embedding model.
SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = $1 AND embedding_model = $2;

-- name: page_source_chunks
-- A page of a source's chunks under one model, in ordinal order, full text. $1 source id, $2 embedding
-- model, $3 the ordinal the page starts after, $4 the most rows.
SELECT id, source_id, embedding_model, ordinal, text, tokens, embedding IS NOT NULL AS embedded
  FROM agent.knowledge_chunks
 WHERE source_id = $1 AND embedding_model = $2 AND ordinal > $3
 ORDER BY ordinal
 LIMIT $4;

-- name: say_attempt_cause
-- Tell the attempt triggers of migrations/0120 what this transaction is (`batch`, `sweep`), for this
-- transaction only. $1 the word.
SELECT set_config('ac.attempt_cause', $1, true);

-- name: source_attempts
-- The latest attempts of one source, newest first (migrations/0120). $1 source id, $2 the most rows.
SELECT id, source_id, organization_id, embedding_model, cause, started_at, finished_at, outcome, ended_by, reason
  FROM agent.knowledge_source_attempts
 WHERE source_id = $1
 ORDER BY id DESC
 LIMIT $2;

-- name: page_source_chunks_before
-- The previous page of a source's chunks: those before an ordinal, nearest first (the caller shows them in
-- ordinal order). $1 source id, $2 embedding model, $3 the ordinal the page ends before, $4 the most rows.
SELECT id, source_id, embedding_model, ordinal, text, tokens, embedding IS NOT NULL AS embedded
  FROM agent.knowledge_chunks
 WHERE source_id = $1 AND embedding_model = $2 AND ordinal < $3
 ORDER BY ordinal DESC
 LIMIT $4;
