-- Runtime reads of the functions layer that no core module answers.

-- name: knowledge_source_state
-- The status and scope of one knowledge source, so a rerun of a finished ingestion is a no-op.
-- $1 source id.
SELECT id, organization_id, status, failure_reason
  FROM agent.knowledge_sources
 WHERE id = $1;

-- name: switch_failures
-- Why re-embeds of a switchover failed: the failed readiness rows of the new model in the scope.
-- $1 organization_id (NULL = platform), $2 new model, $3 limit.
SELECT r.source_id, s.title, r.failure_reason
  FROM agent.knowledge_switch_scope($1) sc
  JOIN agent.knowledge_source_models r ON r.source_id = sc.source_id AND r.embedding_model = $2
  JOIN agent.knowledge_sources s ON s.id = r.source_id
 WHERE r.status = 'failed'
 ORDER BY s.title, r.source_id
 LIMIT $3;
