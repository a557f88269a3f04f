-- Objects whose last row is gone: the durable list of object deletes still owed to the store.
--
-- A source row is deleted without its object by the re-sync swap (the replaced version goes in the
-- transaction that makes the new one ready, knowledge/queries.sql `swap_replaced_sources`), by a newer
-- version superseding a pending one (`delete_replacement`), and by a cascade from its organization. The
-- object store is not transactional, so the key is queued here in the statement that deletes the row and
-- the object is deleted after commit (knowledge/object_deletes.py); a crash between the two leaves the row
-- here, and the next drain (the re-sync's own, the hourly sweep's, a delete's or an erasure's of the same
-- organization, which counts it on its receipt) deletes the object. A key another row still names is not
-- queued (keys written before migration 0098 were content-addressed and could be shared).
--
-- Rows in status `deleting` are not queued: the delete path (knowledge/delete.py) deletes their objects
-- itself, before the rows, and counts them on its receipt. Closed to the tenant and user-key roles, as
-- agent.removal_receipts (migration 0080). No foreign key: the key must outlive its row and organization.

CREATE TABLE agent.knowledge_object_deletes (
    object_key text PRIMARY KEY,
    organization_id uuid,  -- NULL = platform
    queued_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX knowledge_object_deletes_organization ON agent.knowledge_object_deletes (organization_id, queued_at);

CREATE FUNCTION agent.knowledge_queue_object_deletes() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
BEGIN
    INSERT INTO agent.knowledge_object_deletes (object_key, organization_id)
    SELECT DISTINCT ON (g.object_key) g.object_key, g.organization_id
      FROM gone g
     WHERE g.status <> 'deleting'
       AND NOT EXISTS (SELECT 1 FROM agent.knowledge_sources s WHERE s.object_key = g.object_key)
     ORDER BY g.object_key
    ON CONFLICT (object_key) DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER knowledge_sources_queue_object_deletes
    AFTER DELETE ON agent.knowledge_sources
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_queue_object_deletes();

ALTER TABLE agent.knowledge_object_deletes ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON agent.knowledge_object_deletes FROM PUBLIC, authenticated, ac_tenant;
REVOKE ALL ON FUNCTION agent.knowledge_queue_object_deletes() FROM PUBLIC, authenticated, ac_tenant;

-- The trigger above and `object_key_shared` look a key up among the rows: by index, not by a scan.
CREATE INDEX knowledge_sources_object_key ON agent.knowledge_sources (object_key);
