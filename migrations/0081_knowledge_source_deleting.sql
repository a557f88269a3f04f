-- Deleting a knowledge source (issue 22): the status `deleting`, which no search, no switchover and no
-- ingestion step reads as live.
--
-- knowledge/delete.py sets it in one short transaction. The lexical trigger of migrations/0040
-- (`knowledge_lexical_on_source`) sees a status change away from `ready` and takes the source's (source,
-- model) pairs out of agent.knowledge_searchable and its postings out of the statistics at once, so no
-- search reads the source from that commit on (knowledge_search of 0071 reads searchable pairs and the
-- postings of their scopes only). Its chunks then go in bounded batches and the row last.
--
-- A deleting source never becomes anything else: the trigger below skips any update that would move it
-- out of `deleting` (an ingestion step marking it ready or failed, the sweep, a retry), so no step in
-- flight can make it searchable again. It is wanted under no model (the view and the scope function
-- below supersede 0010's texts), so the write checks of 0073 (`agent.knowledge_model_wanted`, the staged
-- write's filter) write nothing for it, and a switchover neither re-embeds it nor waits for it.

ALTER TABLE agent.knowledge_sources DROP CONSTRAINT knowledge_sources_status_check;
ALTER TABLE agent.knowledge_sources ADD CONSTRAINT knowledge_sources_status_check
    CHECK (status IN ('pending', 'ready', 'failed', 'deleting'));

CREATE FUNCTION agent.knowledge_source_stays_deleting() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
BEGIN
    RETURN NULL;  -- skip the row: a deleting source is never made pending, ready or failed again
END
$$;

CREATE TRIGGER knowledge_source_stays_deleting BEFORE UPDATE OF status ON agent.knowledge_sources
    FOR EACH ROW WHEN (OLD.status = 'deleting' AND NEW.status IS DISTINCT FROM 'deleting')
    EXECUTE FUNCTION agent.knowledge_source_stays_deleting();

-- 0010's view, with deleting sources wanted under no model.
CREATE OR REPLACE VIEW agent.knowledge_wanted_models AS
SELECT s.id AS source_id, coalesce(own.active_embedding_model, platform.active_embedding_model) AS embedding_model
  FROM agent.knowledge_sources s
  JOIN public.knowledge_settings platform ON platform.organization_id IS NULL
  LEFT JOIN public.knowledge_settings own ON own.organization_id = s.organization_id
 WHERE s.organization_id IS NOT NULL AND s.status <> 'deleting'
UNION
SELECT s.id, w.to_model
  FROM agent.knowledge_sources s
  JOIN agent.knowledge_switches w ON w.status = 'running'
 WHERE s.organization_id IS NOT NULL AND s.status <> 'deleting'
   AND (w.organization_id = s.organization_id
        OR (w.organization_id IS NULL AND NOT EXISTS (
                SELECT 1 FROM public.knowledge_settings own WHERE own.organization_id = s.organization_id)))
UNION
SELECT s.id, k.active_embedding_model
  FROM agent.knowledge_sources s CROSS JOIN public.knowledge_settings k
 WHERE s.organization_id IS NULL AND s.status <> 'deleting'
UNION
SELECT s.id, w.to_model
  FROM agent.knowledge_sources s JOIN agent.knowledge_switches w ON w.status = 'running'
 WHERE s.organization_id IS NULL AND s.status <> 'deleting';

-- 0010's scope of a switchover, without deleting sources (a switch never waits for one).
CREATE OR REPLACE FUNCTION agent.knowledge_switch_scope(p_organization_id uuid) RETURNS TABLE (source_id uuid)
LANGUAGE sql STABLE
SET search_path = pg_catalog, public
AS $$
    SELECT s.id
      FROM agent.knowledge_sources s
     WHERE s.status NOT IN ('failed', 'deleting')
       AND (s.organization_id IS NULL
            OR (p_organization_id IS NOT NULL AND s.organization_id = p_organization_id)
            OR (p_organization_id IS NULL AND NOT EXISTS (
                    SELECT 1 FROM public.knowledge_settings own WHERE own.organization_id = s.organization_id)))
$$;
