-- Counters kept by triggers (issue 47, item 5): the totals of the operator's lists without counting rows.
--
-- agent.organization_counts holds one row per organization: its knowledge sources per status and its open
-- memory chains (chains whose head is not a tombstone). Statement-level triggers on agent.knowledge_sources
-- and agent.memories add each statement's net change in one UPDATE per organization it touched, so two
-- writers at once stay exact (the UPDATE waits on the row lock and adds to the committed value) and a bulk
-- insert costs one UPDATE, not one per row. The row is made with its organization (trigger on
-- public.organizations) and goes with it (ON DELETE CASCADE, so an erasure's receipt counts it through
-- agent.organization_cascade_counts); the triggers only UPDATE, so a row being erased is never made again.
--
-- Live memories are the open chains whose head has not expired: expiry passes without a write, so a reader
-- subtracts the open heads whose expires_at has passed (through memories_expiry_idx, few rows: the sweep
-- removes them). A memory deletion always takes whole chains (agent.erase_memory_chains deletes every
-- revision of a chain identity in one statement; the cascades from an organization, a definition or a
-- person take whole chains too), so a deleted statement's open heads are its rows that are no tombstone and
-- have no child among the deleted rows.

CREATE TABLE agent.organization_counts (
    organization_id uuid PRIMARY KEY REFERENCES public.organizations (id) ON DELETE CASCADE,
    sources_pending bigint NOT NULL DEFAULT 0,
    sources_ready bigint NOT NULL DEFAULT 0,
    sources_failed bigint NOT NULL DEFAULT 0,
    sources_deleting bigint NOT NULL DEFAULT 0,
    memories_open bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE agent.organization_counts IS
    'Per organization, kept by triggers: sources per status and open memory chains (migration 0117).';

CREATE FUNCTION agent.organization_counts_on_organization() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog
AS $$
BEGIN
    INSERT INTO agent.organization_counts (organization_id)
    SELECT n.id FROM new_rows AS n ORDER BY 1
    ON CONFLICT (organization_id) DO NOTHING;
    RETURN NULL;
END
$$;

CREATE TRIGGER organization_counts_on_organization AFTER INSERT ON public.organizations
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agent.organization_counts_on_organization();

-- Sources: +1 per new row's status, -1 per old row's status (an UPDATE is both).
CREATE FUNCTION agent.organization_counts_add_sources(p_delta jsonb) RETURNS void
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog
AS $$
    WITH d AS (
        SELECT (e ->> 'o')::uuid AS organization_id,
               coalesce(sum((e ->> 'n')::bigint) FILTER (WHERE e ->> 's' = 'pending'), 0) AS pending,
               coalesce(sum((e ->> 'n')::bigint) FILTER (WHERE e ->> 's' = 'ready'), 0) AS ready,
               coalesce(sum((e ->> 'n')::bigint) FILTER (WHERE e ->> 's' = 'failed'), 0) AS failed,
               coalesce(sum((e ->> 'n')::bigint) FILTER (WHERE e ->> 's' = 'deleting'), 0) AS deleting
          FROM jsonb_array_elements(p_delta) AS e
         GROUP BY 1
    )
    UPDATE agent.organization_counts AS c
       SET sources_pending = c.sources_pending + d.pending,
           sources_ready = c.sources_ready + d.ready,
           sources_failed = c.sources_failed + d.failed,
           sources_deleting = c.sources_deleting + d.deleting
      FROM d
     WHERE c.organization_id = d.organization_id
       AND (d.pending, d.ready, d.failed, d.deleting) <> (0::bigint, 0::bigint, 0::bigint, 0::bigint)
$$;

CREATE FUNCTION agent.organization_counts_on_sources() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog
AS $$
DECLARE
    v_delta jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT jsonb_agg(jsonb_build_object('o', organization_id, 's', status, 'n', n) ORDER BY organization_id)
          INTO v_delta
          FROM (SELECT organization_id, status, count(*) AS n FROM new_rows GROUP BY 1, 2) AS g;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT jsonb_agg(jsonb_build_object('o', organization_id, 's', status, 'n', -n) ORDER BY organization_id)
          INTO v_delta
          FROM (SELECT organization_id, status, count(*) AS n FROM old_rows GROUP BY 1, 2) AS g;
    ELSE
        SELECT jsonb_agg(jsonb_build_object('o', organization_id, 's', status, 'n', n) ORDER BY organization_id)
          INTO v_delta
          FROM (SELECT organization_id, status, sum(n) AS n
                  FROM (SELECT organization_id, status, 1 AS n FROM new_rows
                        UNION ALL
                        SELECT organization_id, status, -1 FROM old_rows) AS u
                 GROUP BY 1, 2
                HAVING sum(n) <> 0) AS g;
    END IF;
    IF v_delta IS NOT NULL THEN
        PERFORM agent.organization_counts_add_sources(v_delta);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER organization_counts_sources_insert AFTER INSERT ON agent.knowledge_sources
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agent.organization_counts_on_sources();
CREATE TRIGGER organization_counts_sources_update AFTER UPDATE ON agent.knowledge_sources
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agent.organization_counts_on_sources();
CREATE TRIGGER organization_counts_sources_delete AFTER DELETE ON agent.knowledge_sources
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agent.organization_counts_on_sources();

-- Memories: an inserted revision that is no tombstone opens a chain head (+1); one that supersedes a
-- revision that is no tombstone closes that head (-1). Deleted whole chains take their open heads (-1 each).
CREATE FUNCTION agent.organization_counts_on_memories() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE agent.organization_counts AS c
           SET memories_open = c.memories_open + d.n
          FROM (SELECT n.organization_id,
                       count(*) FILTER (WHERE n.forgotten_at IS NULL)
                       - count(*) FILTER (WHERE n.supersedes_id IS NOT NULL AND EXISTS (
                             SELECT 1 FROM agent.memories AS p
                              WHERE p.id = n.supersedes_id AND p.forgotten_at IS NULL)) AS n
                  FROM new_rows AS n
                 GROUP BY 1) AS d
         WHERE c.organization_id = d.organization_id AND d.n <> 0;
    ELSE
        UPDATE agent.organization_counts AS c
           SET memories_open = c.memories_open - d.n
          FROM (SELECT o.organization_id, count(*) AS n
                  FROM old_rows AS o
                 WHERE o.forgotten_at IS NULL
                   AND NOT EXISTS (SELECT 1 FROM old_rows AS k WHERE k.supersedes_id = o.id)
                 GROUP BY 1) AS d
         WHERE c.organization_id = d.organization_id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER organization_counts_memories_insert AFTER INSERT ON agent.memories
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agent.organization_counts_on_memories();
CREATE TRIGGER organization_counts_memories_delete AFTER DELETE ON agent.memories
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agent.organization_counts_on_memories();

-- The counts of what exists already (under a lock that holds writers off while they are taken).
LOCK TABLE public.organizations, agent.knowledge_sources, agent.memories IN SHARE MODE;
INSERT INTO agent.organization_counts (organization_id, sources_pending, sources_ready, sources_failed,
                                       sources_deleting, memories_open)
SELECT o.id,
       (SELECT count(*) FROM agent.knowledge_sources s WHERE s.organization_id = o.id AND s.status = 'pending'),
       (SELECT count(*) FROM agent.knowledge_sources s WHERE s.organization_id = o.id AND s.status = 'ready'),
       (SELECT count(*) FROM agent.knowledge_sources s WHERE s.organization_id = o.id AND s.status = 'failed'),
       (SELECT count(*) FROM agent.knowledge_sources s WHERE s.organization_id = o.id AND s.status = 'deleting'),
       (SELECT count(*) FROM agent.memories m
         WHERE m.organization_id = o.id AND m.forgotten_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM agent.memories c WHERE c.supersedes_id = m.id))
  FROM public.organizations AS o;

ALTER TABLE agent.organization_counts ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON agent.organization_counts FROM PUBLIC, authenticated, ac_tenant;
REVOKE ALL ON FUNCTION agent.organization_counts_on_organization(), agent.organization_counts_on_sources(),
    agent.organization_counts_on_memories(), agent.organization_counts_add_sources(jsonb)
    FROM PUBLIC, authenticated, ac_tenant;
