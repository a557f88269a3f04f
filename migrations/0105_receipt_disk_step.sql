-- An erasure's disk step is its own recorded state (issue 44, item 4).
--
-- An organization erasure reclaimed the space of its deleted rows after its receipt completed, and recorded
-- what that did in `physical` (0095). A process killed between the two left a complete receipt whose disk step
-- never ran, and a rerun answered that receipt without running it; a person's erasure had no disk step at all.
-- `disk_step` says where the step stands: 'none' (a receipt with no disk step: a source delete), 'pending'
-- (set in the transaction that completes an erasure's receipt: a rerun of the erasure runs the step) and
-- 'done' (set with `physical`). It holds no content, as nothing on a receipt does.
--
-- The receipts written before this migration: a complete organization or person erasure with an empty
-- `physical` never ran its step, so it is pending (its next rerun runs it); one with `physical` is done.
ALTER TABLE agent.removal_receipts ADD COLUMN disk_step text NOT NULL DEFAULT 'none'
    CHECK (disk_step IN ('none', 'pending', 'done'));

UPDATE agent.removal_receipts
   SET disk_step = CASE WHEN physical <> '{}'::jsonb THEN 'done' ELSE 'pending' END
 WHERE status = 'complete' AND kind IN ('organization', 'user');

COMMENT ON COLUMN agent.removal_receipts.disk_step IS
    'none (no disk step), pending (the receipt completed, its disk step has not run), or done (physical says what it did)';
