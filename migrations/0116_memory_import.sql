-- Memory import (issue 46, item 4): an import leaves a receipt, and a re-import of the same file skips.
--
-- * agent.removal_receipts gains the kind `memory_import`: the receipt of one import (counts by outcome and
--   refusal reason, never text), listed with the other receipts. Its target is the importing organization.
-- * agent.memory_imports records, for every revision an import wrote, the id the revision had in the file
--   (its id where it was exported). A chain whose root the organization already imported is skipped, so the
--   same file imported twice writes nothing the second time. The row goes with its revision (an erasure of
--   the chain takes it by the cascade) and holds no text.

ALTER TABLE agent.removal_receipts DROP CONSTRAINT removal_receipts_kind_check;
ALTER TABLE agent.removal_receipts ADD CONSTRAINT removal_receipts_kind_check
    CHECK (kind IN ('source', 'user', 'organization', 'memory_import'));

CREATE TABLE agent.memory_imports (
    organization_id uuid NOT NULL,
    source_id uuid NOT NULL,
    memory_id uuid NOT NULL REFERENCES agent.memories (id) ON DELETE CASCADE,
    receipt_id uuid NOT NULL,
    PRIMARY KEY (organization_id, source_id)
);
COMMENT ON TABLE agent.memory_imports IS
    'For each imported revision: its id in the exported file (source_id) and the revision written (memory_id).';
-- The cascade's probe: an erased revision's record by its id.
CREATE INDEX memory_imports_memory_idx ON agent.memory_imports (memory_id);

ALTER TABLE agent.memory_imports ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON agent.memory_imports FROM PUBLIC, authenticated, ac_tenant;
