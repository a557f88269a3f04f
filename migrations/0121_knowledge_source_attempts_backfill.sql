-- The attempt history of the sources that existed before migrations/0120: one row for each, its latest attempt
-- as the source row still tells it (started when it became pending, or when it was registered; finished at its
-- last update when it is ready or failed). Earlier attempts were never recorded and are not invented; the
-- cause is unknown, so a first attempt is an upload (a re-sync when it replaces a version) and a later one a
-- retry. A source being deleted gets none.

INSERT INTO agent.knowledge_source_attempts
    (source_id, organization_id, embedding_model, cause, started_at, finished_at, outcome, ended_by, reason)
SELECT s.id, s.organization_id, NULL,
       CASE WHEN s.attempts > 1 THEN 'retry' WHEN s.replaces IS NOT NULL THEN 'resync' ELSE 'upload' END,
       coalesce(s.pending_since, s.created_at),
       CASE WHEN s.status IN ('ready', 'failed') THEN greatest(s.updated_at, s.created_at) END,
       CASE WHEN s.status IN ('ready', 'failed') THEN s.status END,
       CASE WHEN s.status = 'failed' AND s.failure_reason LIKE 'ingestion_stalled:%' THEN 'sweep'
            WHEN s.status IN ('ready', 'failed') THEN 'ingestion' END,
       CASE WHEN s.status = 'failed' THEN s.failure_reason END
  FROM agent.knowledge_sources s
 WHERE s.status <> 'deleting'
 ORDER BY s.created_at, s.id;
