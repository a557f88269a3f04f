-- Who holds an outbox row, and when it last said it was alive (docs/decisions.md, "The durable worker":
-- "How does one poisoned outbox row stay out of the others' way?" and "How does an in-process run survive
-- a restart?"). Extends migration 0089.
--
-- `claimed_by` is the holder of the row's lease (`host:pid:start`, the process that claimed it), cleared
-- when the row is marked sent or failed; a claim that finds it set knows the last holder stopped before it
-- finished, and counts that as an attempt, so a document that kills its process is given up after its
-- attempts instead of killing every restart. `heartbeat_at` is when the holder last renewed its lease: an
-- in-process run renews a short lease (`next_attempt_at`) while it is alive, and a restarted process takes
-- over at once the rows whose holder on this machine is dead.

ALTER TABLE agent.event_outbox
    ADD COLUMN claimed_by text,
    ADD COLUMN heartbeat_at timestamptz;
