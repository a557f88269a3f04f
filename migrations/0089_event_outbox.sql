-- The event outbox (issue 25; docs/decisions.md, "Issue 25: the event outbox").
--
-- A state change that needs an Inngest event (a source registered, a retry asked for, a switch requested)
-- writes its event here in the transaction that makes the change, so the two happen together or not at
-- all. The service delivers the rows: to Inngest (the row's id is the event's id, so a resend after a
-- crash between the send and `sent_at` is deduplicated by Inngest), or, in dev mode with no Inngest
-- server, to the same core functions in-process. A row is a delivery record, not a queue of work: the work
-- and its retries are Inngest's (or the in-process runner's); the row only says whether its event has left.
--
-- `dedupe_key` makes a repeated request for the same thing one row while it waits (a retry asked twice is
-- `retry:<source>:<attempts>`); once sent, the same key may be queued again. `next_attempt_at` is both the
-- backoff after a failed attempt and the lease of the worker delivering it (claimed rows move it ahead),
-- so two service processes never deliver one row at once and a row claimed by a killed process is taken
-- again when its lease ends. `organization_id` is the scope the event is about (NULL: the platform), so an
-- organization's erasure deletes its rows. Rows hold ids and names, never document text.

CREATE TABLE agent.event_outbox (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name text NOT NULL CHECK (name <> ''),
    data jsonb NOT NULL,
    organization_id uuid,
    dedupe_key text,
    created_at timestamptz NOT NULL DEFAULT now(),
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error text,
    sent_at timestamptz,
    delivered_by text CHECK (delivered_by IN ('inngest', 'in-process', 'given-up')),
    CHECK ((sent_at IS NULL) = (delivered_by IS NULL))
);

CREATE UNIQUE INDEX event_outbox_waiting_key_idx ON agent.event_outbox (dedupe_key)
    WHERE sent_at IS NULL AND dedupe_key IS NOT NULL;
CREATE INDEX event_outbox_due_idx ON agent.event_outbox (next_attempt_at, created_at) WHERE sent_at IS NULL;
CREATE INDEX event_outbox_sent_idx ON agent.event_outbox (sent_at) WHERE sent_at IS NOT NULL;
CREATE INDEX event_outbox_organization_idx ON agent.event_outbox (organization_id) WHERE organization_id IS NOT NULL;

ALTER TABLE agent.event_outbox ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON agent.event_outbox FROM PUBLIC, authenticated, ac_tenant;
