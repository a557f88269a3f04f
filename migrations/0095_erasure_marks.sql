-- Erasure marks: while an organization (or a person) is erased, every write for it is refused, and no write
-- that passed the check can commit (or put an object) after the erasure's final scan (docs/decisions.md,
-- "Data that leaves": the erasure mark).
--
-- The lock: a transaction-level advisory lock per organization (namespace 1701994867, "eras"). Every write
-- path takes it SHARED as the first statement of its transaction, through agent.guard_organization_write,
-- and holds it to the end, its object put included; shared holders never wait for one another. An erasure
-- takes it EXCLUSIVE, in its own short transaction, to insert its mark: that waits until every write in flight
-- has committed or rolled back, and every write that takes the lock after sees the mark (the check runs in a
-- statement of its own after the lock, so its snapshot is taken once the erasure has committed).
--
-- A mark lasts as long as its erasure: the transaction that completes the receipt removes it (a crash leaves it,
-- and the rerun finishes the job under it). An erasure that deletes the organization row (one this deployment
-- created, migration 0085) takes the mark with it (ON DELETE CASCADE), and writes then answer
-- organization_not_found; on the platform the row stays, and writes after the erasure are new data (a new
-- erasure removes them). Marks hold ids only, never text.

CREATE TABLE agent.erasing_organizations (
    organization_id uuid PRIMARY KEY REFERENCES public.organizations (id) ON DELETE CASCADE,
    receipt_id uuid NOT NULL,
    marked_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE agent.erasing_people (
    receipt_id uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    user_id uuid NOT NULL,
    subject text NOT NULL DEFAULT '' CHECK (length(subject) <= 300),  -- 'crm.person:<id>', or ''
    marked_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX erasing_people_organization ON agent.erasing_people (organization_id);

-- agent.guard_organization_write: migration 0112 (one snapshot for its three checks).

-- Take the organization's write lock exclusive (waiting for every write in flight) and mark the organization
-- erasing, when its row exists; a mark already there stays (a rerun). Answers whether it is marked.
CREATE FUNCTION agent.mark_organization_erasing(p_organization_id uuid, p_receipt_id uuid) RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1701994867, hashtext(p_organization_id::text));
    INSERT INTO agent.erasing_organizations (organization_id, receipt_id)
    SELECT o.id, p_receipt_id FROM public.organizations AS o WHERE o.id = p_organization_id
    ON CONFLICT (organization_id) DO NOTHING;
    RETURN EXISTS (SELECT 1 FROM agent.erasing_organizations AS e WHERE e.organization_id = p_organization_id);
END
$$;

-- The same for a person: the lock exclusive, then the mark of this erasure (its receipt) unless it is there.
CREATE FUNCTION agent.mark_person_erasing(p_organization_id uuid, p_user_id uuid, p_subject text, p_receipt_id uuid)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1701994867, hashtext(p_organization_id::text));
    INSERT INTO agent.erasing_people (receipt_id, organization_id, user_id, subject)
    VALUES (p_receipt_id, p_organization_id, p_user_id, coalesce(p_subject, ''))
    ON CONFLICT (receipt_id) DO NOTHING;
END
$$;

-- What the erasure did to the disk after its receipt completed (VACUUM, ANALYZE, CHECKPOINT), or '{}'.
ALTER TABLE agent.removal_receipts ADD COLUMN physical jsonb NOT NULL DEFAULT '{}'::jsonb
    CHECK (jsonb_typeof(physical) = 'object');

ALTER TABLE agent.erasing_organizations ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent.erasing_people ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON agent.erasing_organizations, agent.erasing_people FROM PUBLIC, authenticated, ac_tenant;
REVOKE ALL ON FUNCTION agent.mark_organization_erasing(uuid, uuid) FROM PUBLIC, authenticated, ac_tenant;
REVOKE ALL ON FUNCTION agent.mark_person_erasing(uuid, uuid, text, uuid) FROM PUBLIC, authenticated, ac_tenant;
