-- Switchovers that end clean (issue 21): no write under a model can outlive the statement that stops
-- wanting it. A cancelled switch deleted the new model's chunks while a re-embed was between its check and
-- its write, and the write landed after the delete: chunks no model needs, for ever.
--
-- Every transaction that writes chunk or readiness rows under a model takes that model's lock SHARED
-- (`agent.knowledge_model_lock_shared`), then checks in a later statement that the model is still wanted
-- for the source (`agent.knowledge_model_wanted`, over `agent.knowledge_wanted_models`); writers do not
-- wait for one another. The transaction that deletes a model's unwanted chunks (a cancel, or the cleanup
-- after a flip) takes it EXCLUSIVE (`agent.knowledge_model_lock_exclusive`): it waits until every write in
-- flight under that model has committed, so its DELETE sees them; a writer that starts after it waits, and
-- its check then sees the model unwanted and writes nothing. The lock is a transaction-level advisory lock
-- (no row is written to take it), keyed by the model id's hash under a class of its own; two models whose
-- hashes collide only wait for each other.

CREATE FUNCTION agent.knowledge_model_lock_shared(p_model text) RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog
AS $$
    SELECT pg_advisory_xact_lock_shared(1802399079, hashtext(p_model))
$$;

CREATE FUNCTION agent.knowledge_model_lock_exclusive(p_model text) RETURNS void
LANGUAGE sql VOLATILE
SET search_path = pg_catalog
AS $$
    SELECT pg_advisory_xact_lock(1802399079, hashtext(p_model))
$$;

-- Whether a source is wanted under a model: its scope's live model, a platform source under every live
-- model, or the target of a running switch that covers it (the view of migrations/0010).
CREATE FUNCTION agent.knowledge_model_wanted(p_source_id uuid, p_model text) RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, public
AS $$
    SELECT EXISTS (
        SELECT 1 FROM agent.knowledge_wanted_models w
         WHERE w.source_id = p_source_id AND w.embedding_model = p_model)
$$;
