-- Each ingestion attempt of a knowledge source, for an operator to read (issue 47, item 2): when it started
-- (the source became pending: registered, retried, re-synced, or a ready source's model row by a switch),
-- what started it, when it finished, how (ready, failed) and by what (the ingestion, or the sweep that failed
-- it stuck), and the reason of a failure.
--
-- The rows are written by triggers on the two tables every ingestion path already writes, so no path can
-- forget them: the upload, the batch, the re-sync, the retry (the API, the console, the CLI, dev mode's
-- in-process runner), the bulk core, the resumable steps Inngest replays, the model switch's re-embed and the
-- hourly sweep all end in a status change of agent.knowledge_sources or agent.knowledge_source_models. What
-- the row alone cannot tell (a batch, a sweep) the writer says with a transaction-local setting,
-- `ac.attempt_cause` (knowledge/ingestion/attempts.py), read here; without it an insert is an upload (a
-- re-sync when it replaces a version) and a failed source made pending again is a retry.
--
-- Retention: an attempt lives as long as its source version, and a source keeps its latest
-- ATTEMPTS_KEPT (100) attempts, so a source retried forever never grows the table past that. Deleting a
-- source or erasing its organization deletes its attempts and counts them on the receipt
-- (knowledge/queries.sql delete_source_rows); the foreign key's cascade covers the one path without a receipt,
-- a re-sync's replaced version. Tenants read their organization's rows (and the platform's) under RLS.

CREATE TABLE agent.knowledge_source_attempts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_id uuid NOT NULL REFERENCES agent.knowledge_sources (id) ON DELETE CASCADE,
    organization_id uuid,
    embedding_model text,
    cause text NOT NULL CHECK (cause IN ('upload', 'batch', 'resync', 'retry', 'model_switch')),
    started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    finished_at timestamptz,
    outcome text CHECK (outcome IN ('ready', 'failed')),
    ended_by text CHECK (ended_by IN ('ingestion', 'sweep')),
    reason text,
    CONSTRAINT knowledge_source_attempts_finished_has_outcome
        CHECK ((finished_at IS NULL) = (outcome IS NULL) AND (outcome IS NULL) = (ended_by IS NULL)),
    CONSTRAINT knowledge_source_attempts_failed_has_reason CHECK ((outcome = 'failed') = (reason IS NOT NULL))
);
COMMENT ON TABLE agent.knowledge_source_attempts IS
    'Each ingestion attempt of a source (migrations/0120): cause, start, finish, outcome, who ended it, reason.';
COMMENT ON COLUMN agent.knowledge_source_attempts.embedding_model IS
    'NULL: the whole source; a model: a ready source built under one more model (a model switch).';

CREATE INDEX knowledge_source_attempts_source ON agent.knowledge_source_attempts (source_id, id);

ALTER TABLE agent.knowledge_source_attempts ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON agent.knowledge_source_attempts TO ac_tenant, authenticated;
CREATE POLICY tenant_read ON agent.knowledge_source_attempts FOR SELECT TO ac_tenant, authenticated
    USING (organization_id IS NULL OR organization_id = (SELECT public.current_organization_id()));

CREATE FUNCTION agent.knowledge_attempt_setting() RETURNS text
    LANGUAGE sql STABLE AS $$ SELECT nullif(current_setting('ac.attempt_cause', true), '') $$;
COMMENT ON FUNCTION agent.knowledge_attempt_setting() IS
    'The writer''s word for an attempt (batch, sweep, ...), set transaction-locally; NULL when unset.';

CREATE FUNCTION agent.knowledge_attempt_begin(p_source uuid, p_org uuid, p_model text, p_cause text)
    RETURNS void LANGUAGE sql AS $$
    INSERT INTO agent.knowledge_source_attempts (source_id, organization_id, embedding_model, cause)
    VALUES (p_source, p_org, p_model, p_cause);
    -- Retention: the latest 100 attempts of a source.
    DELETE FROM agent.knowledge_source_attempts a
     WHERE a.source_id = p_source
       AND a.id <= (SELECT k.id FROM agent.knowledge_source_attempts k WHERE k.source_id = p_source
                     ORDER BY k.id DESC OFFSET 100 LIMIT 1);
$$;

CREATE FUNCTION agent.knowledge_attempt_end(p_source uuid, p_model text, p_outcome text, p_reason text)
    RETURNS void LANGUAGE sql AS $$
    UPDATE agent.knowledge_source_attempts a
       SET finished_at = clock_timestamp(), outcome = p_outcome,
           ended_by = CASE WHEN agent.knowledge_attempt_setting() = 'sweep' THEN 'sweep' ELSE 'ingestion' END,
           reason = CASE WHEN p_outcome = 'failed' THEN coalesce(p_reason, 'failed') END
     WHERE a.source_id = p_source AND a.embedding_model IS NOT DISTINCT FROM p_model AND a.finished_at IS NULL;
$$;

CREATE FUNCTION agent.knowledge_source_attempt_trigger() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    said text := agent.knowledge_attempt_setting();
BEGIN
    IF NEW.status = 'pending' AND (TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM 'pending') THEN
        PERFORM agent.knowledge_attempt_begin(NEW.id, NEW.organization_id, NULL, CASE
            WHEN TG_OP = 'UPDATE' THEN 'retry'
            WHEN NEW.replaces IS NOT NULL THEN 'resync'
            WHEN said = 'batch' THEN 'batch'
            ELSE 'upload' END);
    ELSIF TG_OP = 'UPDATE' AND OLD.status = 'pending' AND NEW.status IN ('ready', 'failed') THEN
        PERFORM agent.knowledge_attempt_end(NEW.id, NULL, NEW.status, NEW.failure_reason);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER knowledge_source_attempts AFTER INSERT OR UPDATE OF status ON agent.knowledge_sources
    FOR EACH ROW EXECUTE FUNCTION agent.knowledge_source_attempt_trigger();

-- A ready source built under one more model (a switch's re-embed) is an attempt of that model; a model row of
-- a pending source belongs to the source's own attempt.
CREATE FUNCTION agent.knowledge_model_attempt_trigger() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    source record;
BEGIN
    IF NEW.status = 'pending' AND (TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM 'pending') THEN
        SELECT s.status, s.organization_id INTO source FROM agent.knowledge_sources s WHERE s.id = NEW.source_id;
        IF source.status = 'ready' THEN
            PERFORM agent.knowledge_attempt_begin(NEW.source_id, source.organization_id, NEW.embedding_model,
                                                  'model_switch');
        END IF;
    ELSIF TG_OP = 'UPDATE' AND OLD.status = 'pending' AND NEW.status IN ('ready', 'failed') THEN
        PERFORM agent.knowledge_attempt_end(NEW.source_id, NEW.embedding_model, NEW.status, NEW.failure_reason);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER knowledge_model_attempts AFTER INSERT OR UPDATE OF status ON agent.knowledge_source_models
    FOR EACH ROW EXECUTE FUNCTION agent.knowledge_model_attempt_trigger();
