-- Erasure of memory: the one audited database path that removes revisions from agent.memories.
--
-- agent.memories stays append only (memories_append_only, migration 0020, refuses every rewrite). Removing a
-- revision is erasure, and erasure is one function, agent.erase_memory_chains. It removes WHOLE chains (every
-- revision of a chain identity: text, subject_refs and tombstones with it), in bounded batches, and answers
-- what it removed, so the caller adds the counts to its removal receipt in the same transaction
-- (state/receipts.py) and loops until a batch takes fewer chains than its limit. A chain is removed whole or not at all, so
-- every chain left behind keeps one root and one line of revisions (agent.memory_chain_problems, 0084).
--
-- memories_erase_only, a BEFORE DELETE trigger, refuses every other removal of a revision:
--   * a direct DELETE of agent.memories, by any role (the service role included): refused;
--   * the self-reference's cascade (memories_supersedes_same_chain ON DELETE CASCADE) is only reached from a
--     delete the trigger already let through, so deleting one revision can never silently take its
--     descendants (and make an older revision current again);
--   * a cascade from the owner of a chain (public.organizations, public.users, agent.definitions, all
--     ON DELETE CASCADE): let through. PostgreSQL runs a cascade as the owner of agent.memories (the guard
--     checks that role), the owner row is already gone when the cascade runs, and the chain
--     identity holds the owner's key, so such a cascade removes every revision of every chain it touches and
--     leaves no chain half removed. It leaves no receipt: the platform that deletes its own rows calls the
--     erasure first when it needs one (docs/operations.md, "Erasing a person").
--
-- The flag the function raises is the setting agent.memory_erasure = 'on', set by the function's own SET
-- clause (so PostgreSQL restores it when the function returns or fails, and it never outlives the call).
-- A setting can be forged by anyone with SET, so the trigger also requires that the deleting role is the
-- function's owner (inside a SECURITY DEFINER function current_user is the owner): ac_tenant and
-- authenticated cannot forge it, even holding a DELETE grant and a policy, which they do not (0020 revokes
-- everything). The owner (the service role that runs the migrations) can forge it, as it can drop the
-- trigger: the guard keeps the application's own code on the audited path, it is no lock against the owner.
--
-- SECURITY DEFINER, so the one privilege a caller needs is EXECUTE on this function (a deployment whose
-- service connects as a role other than the owner grants that, and no DELETE on agent.memories); the
-- search_path is pinned and every name is schema-qualified. EXECUTE is revoked from PUBLIC, authenticated
-- and ac_tenant.

-- Whether a revision (its scope, scope owner and subject key) falls in an erasure scope (see below). One
-- predicate for the erasure and for the question whether anything is left to erase (memory/queries.sql,
-- erasable_memory_exists); a plain SQL function, so the planner inlines it and the indexes still serve.
CREATE FUNCTION agent.memory_erasure_matches(
    m_scope text, m_scope_owner_id uuid, m_subject_key text, p_scope text, p_user_id uuid, p_subject text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE p_scope
               WHEN 'user' THEN m_scope = 'user' AND m_scope_owner_id = p_user_id
               WHEN 'subject' THEN m_scope = 'organization' AND starts_with(m_subject_key, p_subject || ':')
               WHEN 'organization' THEN true
               ELSE false
           END
$$;

-- Remove whole memory chains of one organization, at most p_limit chains per call, and answer how many chains
-- and revisions were removed. p_scope:
--   'user'          every user-scope chain of the user p_user_id (p_subject NULL);
--   'subject'       every organization-scope chain whose subject is p_subject, '<kind>:<id>', i.e. whose key
--                   starts with '<kind>:<id>:' (p_user_id NULL);
--   'organization'  every chain of the organization (p_user_id and p_subject NULL).
-- Every revision of a picked chain is locked before it is deleted, so a writer appending to the chain meanwhile
-- either committed first (and its revision is removed and counted) or fails on the vanished parent: the counts
-- are exactly the rows removed.
CREATE FUNCTION agent.erase_memory_chains(
    p_scope text, p_organization_id uuid, p_user_id uuid, p_subject text, p_limit integer)
RETURNS TABLE (chains bigint, revisions bigint)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET agent.memory_erasure = 'on'
AS $$
DECLARE
    v_kind text;
    v_id text;
    v_picked uuid[];
    v_locked bigint := -1;
    v_seen bigint;
    v_revisions bigint;
BEGIN
    IF p_organization_id IS NULL OR p_limit IS NULL OR p_limit < 1 OR p_limit > 100000 THEN
        RAISE EXCEPTION 'erase_memory_chains needs an organization and a limit of 1 to 100000'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_scope = 'user' THEN
        IF p_user_id IS NULL OR p_subject IS NOT NULL THEN
            RAISE EXCEPTION 'scope user takes a user id and no subject' USING ERRCODE = 'invalid_parameter_value';
        END IF;
    ELSIF p_scope = 'subject' THEN
        v_kind := split_part(p_subject, ':', 1);
        v_id := split_part(p_subject, ':', 2);
        IF p_user_id IS NOT NULL OR p_subject IS NULL OR p_subject <> v_kind || ':' || v_id
           OR NOT agent.is_memory_key_part(to_jsonb(v_kind)) OR NOT agent.is_memory_key_part(to_jsonb(v_id)) THEN
            RAISE EXCEPTION 'scope subject takes a subject <kind>:<id> and no user id'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    ELSIF p_scope = 'organization' THEN
        IF p_user_id IS NOT NULL OR p_subject IS NOT NULL THEN
            RAISE EXCEPTION 'scope organization takes no user id and no subject'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    ELSE
        RAISE EXCEPTION 'unknown erasure scope %', p_scope USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The chains of this batch, named by their roots (one root per chain identity).
    SELECT coalesce(array_agg(r.id ORDER BY r.id), '{}') INTO v_picked
      FROM (SELECT m.id
              FROM agent.memories AS m
             WHERE m.organization_id = p_organization_id
               AND m.supersedes_id IS NULL
               AND agent.memory_erasure_matches(m.scope, m.scope_owner_id, m.subject_key, p_scope, p_user_id,
                                                p_subject)
             ORDER BY m.id
             LIMIT p_limit) AS r;
    IF cardinality(v_picked) = 0 THEN
        RETURN QUERY SELECT 0::bigint, 0::bigint;
        RETURN;
    END IF;

    -- Lock every revision of the picked chains until the set stops growing: a revision committed by a writer
    -- we waited for is seen (and locked) by the next round, and no writer can attach to a locked head.
    LOOP
        SELECT count(*) INTO v_seen
          FROM (SELECT 1
                  FROM agent.memories AS m
                  JOIN agent.memories AS r
                    ON r.id = ANY (v_picked)
                   AND (m.organization_id, m.definition_id, m.scope, m.scope_owner_id, m.subject_key)
                     = (r.organization_id, r.definition_id, r.scope, r.scope_owner_id, r.subject_key)
                   FOR UPDATE OF m) AS l;
        EXIT WHEN v_seen = v_locked;
        v_locked := v_seen;
    END LOOP;

    DELETE FROM agent.memories AS m
     USING agent.memories AS r
     WHERE r.id = ANY (v_picked)
       AND (m.organization_id, m.definition_id, m.scope, m.scope_owner_id, m.subject_key)
         = (r.organization_id, r.definition_id, r.scope, r.scope_owner_id, r.subject_key);
    GET DIAGNOSTICS v_revisions = ROW_COUNT;
    RETURN QUERY SELECT cardinality(v_picked)::bigint, v_revisions;
END
$$;

-- The guard: a revision leaves agent.memories only through agent.erase_memory_chains, or with its owner.
CREATE FUNCTION agent.memories_refuse_delete() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF current_setting('agent.memory_erasure', true) = 'on'
       AND current_user = (SELECT pg_get_userbyid(p.proowner) FROM pg_proc AS p
                            WHERE p.oid = 'agent.erase_memory_chains(text, uuid, uuid, text, integer)'::regprocedure)
    THEN
        RETURN OLD;
    END IF;
    -- A foreign-key cascade from the chain's owner: PostgreSQL runs it as the owner of agent.memories, the owner
    -- row is already gone, and the chain goes whole. (Checked as that role: another role's row security could
    -- hide an owner row that exists.)
    IF current_user = (SELECT pg_get_userbyid(c.relowner) FROM pg_class AS c WHERE c.oid = TG_RELID)
       AND (NOT EXISTS (SELECT 1 FROM public.organizations AS o WHERE o.id = OLD.organization_id)
       OR NOT EXISTS (SELECT 1 FROM agent.definitions AS d WHERE d.id = OLD.definition_id)
       OR (OLD.user_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM public.users AS u WHERE u.id = OLD.user_id)))
    THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'agent.memories is append only: a revision is removed only by erasure (agent.erase_memory_chains), not by DELETE of %', OLD.id
        USING ERRCODE = 'check_violation', CONSTRAINT = 'memories_erase_only',
              SCHEMA = 'agent', TABLE = 'memories';
END
$$;

CREATE TRIGGER memories_erase_only BEFORE DELETE ON agent.memories
    FOR EACH ROW EXECUTE FUNCTION agent.memories_refuse_delete();

REVOKE ALL ON FUNCTION agent.erase_memory_chains(text, uuid, uuid, text, integer) FROM PUBLIC, authenticated, ac_tenant;
REVOKE ALL ON FUNCTION agent.memory_erasure_matches(text, uuid, text, text, uuid, text)
    FROM PUBLIC, authenticated, ac_tenant;
REVOKE ALL ON FUNCTION agent.memories_refuse_delete() FROM PUBLIC, authenticated, ac_tenant;
