-- Memory import (issue 46, item 4): an import leaves a receipt, and a re-import of the same file skips.
--
-- * agent.removal_receipts gains the kind `memory_import`: the receipt of one import (counts by outcome and
--   refusal reason, never text), listed with the other receipts. Its target is the importing organization.
-- * agent.memories gains `imported_from`: for a revision an import wrote, the id it had in the file (its id
--   where it was exported); NULL for every revision written here. One organization holds a file's revision
--   at most once (memories_imported_once), so a chain whose first revision it imported before is skipped and
--   the same file imported twice writes nothing the second time. The id goes with its revision: an erasure
--   removes it with the row, so no table outside the memory's own keeps a trace of an erased chain.
--
-- This migration replaces agent.memories_refuse_rewrite() of 0086 (it supersedes 0086's body): the
-- append-only trigger now also refuses any rewrite of imported_from.

ALTER TABLE agent.removal_receipts DROP CONSTRAINT removal_receipts_kind_check;
ALTER TABLE agent.removal_receipts ADD CONSTRAINT removal_receipts_kind_check
    CHECK (kind IN ('source', 'user', 'organization', 'memory_import'));

ALTER TABLE agent.memories ADD COLUMN imported_from uuid;
COMMENT ON COLUMN agent.memories.imported_from IS
    'For a revision a memory import wrote: its id in the exported file; NULL for a revision written here.';
CREATE UNIQUE INDEX memories_imported_once ON agent.memories (organization_id, imported_from)
    WHERE imported_from IS NOT NULL;

-- Append only: a revision is never rewritten, expires_at and imported_from included. The foreign key that
-- clears proposed_by_run_id when its run is deleted is the one update let through. Supersedes 0086's body.
CREATE OR REPLACE FUNCTION agent.memories_refuse_rewrite() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.id, NEW.organization_id, NEW.definition_id, NEW.scope, NEW.user_id, NEW.scope_owner_id,
        NEW.subject_key, NEW.text, NEW.subject_refs, NEW.supersedes_id, NEW.forgotten_at, NEW.created_at,
        NEW.expires_at, NEW.imported_from)
       IS DISTINCT FROM
       (OLD.id, OLD.organization_id, OLD.definition_id, OLD.scope, OLD.user_id, OLD.scope_owner_id,
        OLD.subject_key, OLD.text, OLD.subject_refs, OLD.supersedes_id, OLD.forgotten_at, OLD.created_at,
        OLD.expires_at, OLD.imported_from)
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
