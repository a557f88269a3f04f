-- Receipts of data leaving the layer: one row per deletion of a knowledge source and per erasure of a
-- person or an organization (docs/decisions.md, issue 22).
--
-- A receipt is the deletion record: what was asked (kind, organization, target id, optional subject ref),
-- by whom, when it started and ended, and what was removed, as counts per table or store and the object
-- keys deleted, without the file name part of a key (a file name is content). It never holds text.
--
-- A removal runs in bounded batches; each batch adds its counts in the transaction that deletes its rows
-- (agent.removal_receipt_add), so the counts stay exact across a crash and a rerun picks the running
-- receipt up again (resumed counts the reruns). No foreign keys: a receipt outlives what it removed.
-- Closed to the tenant and user-key roles, as agent.api_keys (migration 0070).

CREATE TABLE agent.removal_receipts (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    kind text NOT NULL CHECK (kind IN ('source', 'user', 'organization')),
    organization_id uuid,  -- NULL for a platform source
    target_id uuid NOT NULL,  -- the source, the user or the organization
    subject text NOT NULL DEFAULT '' CHECK (length(subject) <= 300),  -- e.g. 'crm.person:<id>', or ''
    requested_by text NOT NULL CHECK (btrim(requested_by) <> '' AND length(requested_by) <= 200),
    status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'complete')),
    counts jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(counts) = 'object'),
    object_keys text[] NOT NULL DEFAULT '{}',
    resumed integer NOT NULL DEFAULT 0 CHECK (resumed >= 0),
    started_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    CONSTRAINT removal_receipts_finished_when_complete CHECK ((status = 'complete') = (finished_at IS NOT NULL)),
    CONSTRAINT removal_receipts_organization_kind CHECK (kind = 'source' OR organization_id IS NOT NULL)
);

-- One running removal per request: a rerun finds it and finishes it.
CREATE UNIQUE INDEX removal_receipts_one_running
    ON agent.removal_receipts (kind, organization_id, target_id, subject) NULLS NOT DISTINCT
    WHERE status = 'running';
CREATE INDEX removal_receipts_target ON agent.removal_receipts (target_id, started_at DESC);
CREATE INDEX removal_receipts_organization ON agent.removal_receipts (organization_id, started_at DESC);

-- Add a batch's counts (a JSON object of non-negative integers, keyed by table or store) and object keys
-- to a running receipt. Refuses a receipt that is not running, so a finished receipt never changes.
CREATE FUNCTION agent.removal_receipt_add(p_id uuid, p_counts jsonb, p_object_keys text[]) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
BEGIN
    UPDATE agent.removal_receipts r
       SET counts = (
               SELECT coalesce(jsonb_object_agg(k, total), '{}'::jsonb)
                 FROM (SELECT k, sum(v) AS total
                         FROM (SELECT key AS k, value::bigint AS v FROM jsonb_each_text(r.counts)
                               UNION ALL
                               SELECT key, value::bigint FROM jsonb_each_text(coalesce(p_counts, '{}'::jsonb))) AS c
                        GROUP BY k) AS s),
           object_keys = ARRAY(SELECT DISTINCT unnest(r.object_keys || coalesce(p_object_keys, '{}')) ORDER BY 1)
     WHERE r.id = p_id AND r.status = 'running';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'removal receipt % is not running', p_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'removal_receipts_add_running';
    END IF;
END
$$;

ALTER TABLE agent.removal_receipts ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON agent.removal_receipts FROM PUBLIC, authenticated, ac_tenant;
REVOKE ALL ON FUNCTION agent.removal_receipt_add(uuid, jsonb, text[]) FROM PUBLIC, authenticated, ac_tenant;
