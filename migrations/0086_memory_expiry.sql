-- Memories that expire (docs/decisions.md, "Issue 22: memories that expire").
--
-- expires_at is per revision: NULL keeps the revision until it is superseded or forgotten. A revision whose
-- expires_at has passed (expires_at <= now()) is not live, even before any sweep: agent.live_memories drops
-- it, so no reader has to remember the rule. agent.memory_heads still returns it, because it is still its
-- chain's head: the writers attach after it (a later remember supersedes it; the sweep's tombstone closes
-- it), and the chain rules of 0020 hold unchanged. The sweep (memory/expiry.py) then appends the tombstone,
-- so the chain itself says the memory is gone.
--
-- A tombstone carries no expiry (it forgets; nothing about it can lapse), and an expiry lies after the
-- revision's creation (an expiry in the past is refused by the service first, with the field's path).
--
-- This migration replaces agent.memories_refuse_rewrite() of 0020 (it supersedes 0020's body): the
-- append-only trigger now also refuses any rewrite of expires_at. It changes nothing about DELETE.

ALTER TABLE agent.memories ADD COLUMN expires_at timestamptz;

ALTER TABLE agent.memories
    ADD CONSTRAINT memories_tombstone_has_no_expiry CHECK (forgotten_at IS NULL OR expires_at IS NULL),
    ADD CONSTRAINT memories_expiry_after_creation CHECK (expires_at IS NULL OR expires_at > created_at);

-- The sweep's read: the revisions with an expiry, soonest first (memory_heads then keeps the heads; a
-- tombstone never has one, so the index holds live revisions only).
CREATE INDEX memories_expiry_idx ON agent.memories (expires_at) WHERE expires_at IS NOT NULL;

-- Append only: a revision is never rewritten, expires_at included. The foreign key that clears
-- proposed_by_run_id when its run is deleted is the one update let through. Supersedes 0020's body.
CREATE OR REPLACE FUNCTION agent.memories_refuse_rewrite() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.id, NEW.organization_id, NEW.definition_id, NEW.scope, NEW.user_id, NEW.scope_owner_id,
        NEW.subject_key, NEW.text, NEW.subject_refs, NEW.supersedes_id, NEW.forgotten_at, NEW.created_at,
        NEW.expires_at)
       IS DISTINCT FROM
       (OLD.id, OLD.organization_id, OLD.definition_id, OLD.scope, OLD.user_id, OLD.scope_owner_id,
        OLD.subject_key, OLD.text, OLD.subject_refs, OLD.supersedes_id, OLD.forgotten_at, OLD.created_at,
        OLD.expires_at)
       OR (NEW.proposed_by_run_id IS DISTINCT FROM OLD.proposed_by_run_id AND NEW.proposed_by_run_id IS NOT NULL)
    THEN
        RAISE EXCEPTION 'agent.memories is append only: append a revision instead of rewriting %', OLD.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'memories_append_only',
                  SCHEMA = 'agent', TABLE = 'memories';
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION agent.memories_refuse_rewrite() FROM PUBLIC;

-- Every chain's current revision, tombstones and expired revisions included (the writers' exact head).
CREATE OR REPLACE VIEW agent.memory_heads WITH (security_invoker = true) AS
SELECT m.id, m.organization_id, m.definition_id, m.scope, m.user_id, m.scope_owner_id, m.subject_key,
       m.text, m.subject_refs, m.proposed_by_run_id, m.supersedes_id, m.forgotten_at, m.created_at,
       m.expires_at
FROM agent.memories AS m
WHERE NOT EXISTS (SELECT 1 FROM agent.memories AS c WHERE c.supersedes_id = m.id);

-- Every chain's current revision when it is neither a tombstone nor expired. It drops scope_owner_id and
-- forgotten_at: the read path declares its own row shape.
CREATE OR REPLACE VIEW agent.live_memories WITH (security_invoker = true) AS
SELECT m.id, m.organization_id, m.definition_id, m.scope, m.user_id, m.subject_key, m.text,
       m.subject_refs, m.proposed_by_run_id, m.supersedes_id, m.created_at, m.expires_at
FROM agent.memories AS m
WHERE m.forgotten_at IS NULL
  AND (m.expires_at IS NULL OR m.expires_at > now())
  AND NOT EXISTS (SELECT 1 FROM agent.memories AS c WHERE c.supersedes_id = m.id);

REVOKE ALL ON agent.memory_heads, agent.live_memories FROM PUBLIC, authenticated, ac_tenant;
