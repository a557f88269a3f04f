-- The erasure guard reads the organization, its mark and the people's marks in ONE statement, so in one
-- snapshot (docs/decisions.md, "Data that leaves": the erasure mark). 0095's guard read them in three
-- statements: a write could see the organization's row, then the erasure's last transaction deleted the row
-- and (ON DELETE CASCADE) its mark and committed, then the write looked for the mark in a later snapshot,
-- found none and went on to an insert the foreign key refused (503 instead of 404 or 409; seen once in
-- tests/integration/functions/test_api_erasure_race.py, pinned by
-- tests/integration/state/test_erasure_marks.py). In one snapshot the row and its mark are seen together or
-- not at all.
--
-- Take the organization's write lock shared for the rest of the transaction, then refuse when the
-- organization does not exist (constraint organization_not_found: an erasure that deleted the row took its
-- mark with it, and a write must not put an object for it either), when it is being erased (constraint
-- organization_erasing) or when the write names a person being erased: the user p_user_id, or one of the
-- subjects p_subjects ('<kind>:<id>') (constraint person_erasing). The check is a statement of its own after
-- the lock, so its snapshot is taken once a mark committed while the lock waited.
CREATE OR REPLACE FUNCTION agent.guard_organization_write(p_organization_id uuid, p_user_id uuid, p_subjects text[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_refusal text;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1701994867, hashtext(p_organization_id::text));
    SELECT CASE
               WHEN NOT EXISTS (SELECT 1 FROM public.organizations AS o WHERE o.id = p_organization_id)
                   THEN 'organization_not_found'
               WHEN EXISTS (SELECT 1 FROM agent.erasing_organizations AS e WHERE e.organization_id = p_organization_id)
                   THEN 'organization_erasing'
               WHEN EXISTS (SELECT 1 FROM agent.erasing_people AS e
                             WHERE e.organization_id = p_organization_id
                               AND (e.user_id = p_user_id OR (e.subject <> '' AND e.subject = ANY (p_subjects))))
                   THEN 'person_erasing'
           END
      INTO v_refusal;
    IF v_refusal = 'organization_not_found' THEN
        RAISE EXCEPTION 'no organization has id %', p_organization_id
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'organization_not_found';
    ELSIF v_refusal = 'organization_erasing' THEN
        RAISE EXCEPTION 'organization % is being erased: its writes are refused', p_organization_id
            USING ERRCODE = 'object_not_in_prerequisite_state', CONSTRAINT = 'organization_erasing';
    ELSIF v_refusal = 'person_erasing' THEN
        RAISE EXCEPTION 'a person this write names is being erased in organization %', p_organization_id
            USING ERRCODE = 'object_not_in_prerequisite_state', CONSTRAINT = 'person_erasing';
    END IF;
END
$$;

REVOKE ALL ON FUNCTION agent.guard_organization_write(uuid, uuid, text[]) FROM PUBLIC, authenticated, ac_tenant;
