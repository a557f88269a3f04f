-- The database's own check of the memory revision chains, over every row: what an operator runs after an
-- erasure (docs/operations.md) and what the erasure tests assert is empty.
--
-- The constraints of migration 0020 hold each row and each pair; this function checks each chain whole, as
-- the readers rely on it: one root, every revision on the one line that starts at the root (one child per
-- revision, every parent in the same chain), exactly one head in agent.memory_heads, and agent.live_memories
-- holding that head exactly when it is not a tombstone. One answer row per problem found; none when every
-- chain is valid. Read-only, SECURITY INVOKER, closed to ac_tenant and authenticated like the table.

CREATE FUNCTION agent.memory_chain_problems(p_organization_id uuid DEFAULT NULL)
RETURNS TABLE (organization_id uuid, definition_id uuid, scope text, scope_owner_id uuid, subject_key text,
               problem text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE scoped AS (
        SELECT m.id, m.organization_id, m.definition_id, m.scope, m.scope_owner_id, m.subject_key,
               m.supersedes_id, m.forgotten_at
          FROM agent.memories AS m
         WHERE p_organization_id IS NULL OR m.organization_id = p_organization_id
    ), chains AS (
        SELECT s.organization_id, s.definition_id, s.scope, s.scope_owner_id, s.subject_key,
               count(*) AS revisions, count(*) FILTER (WHERE s.supersedes_id IS NULL) AS roots
          FROM scoped AS s
         GROUP BY 1, 2, 3, 4, 5
    ), walk AS (
        -- From each root along the children, never leaving the root's chain identity.
        SELECT s.id, s.organization_id, s.definition_id, s.scope, s.scope_owner_id, s.subject_key
          FROM scoped AS s
         WHERE s.supersedes_id IS NULL
        UNION
        SELECT c.id, c.organization_id, c.definition_id, c.scope, c.scope_owner_id, c.subject_key
          FROM walk AS w
          JOIN scoped AS c
            ON c.supersedes_id = w.id
           AND (c.organization_id, c.definition_id, c.scope, c.scope_owner_id, c.subject_key)
             = (w.organization_id, w.definition_id, w.scope, w.scope_owner_id, w.subject_key)
    ), reached AS (
        SELECT w.organization_id, w.definition_id, w.scope, w.scope_owner_id, w.subject_key, count(*) AS reached
          FROM walk AS w
         GROUP BY 1, 2, 3, 4, 5
    ), heads AS (
        SELECT h.organization_id, h.definition_id, h.scope, h.scope_owner_id, h.subject_key, count(*) AS heads,
               count(*) FILTER (WHERE h.forgotten_at IS NULL) AS live_heads
          FROM agent.memory_heads AS h
         WHERE p_organization_id IS NULL OR h.organization_id = p_organization_id
         GROUP BY 1, 2, 3, 4, 5
    ), live AS (
        SELECT l.organization_id, l.definition_id, l.scope, coalesce(l.user_id, l.organization_id) AS scope_owner_id,
               l.subject_key, count(*) AS live
          FROM agent.live_memories AS l
         WHERE p_organization_id IS NULL OR l.organization_id = p_organization_id
         GROUP BY 1, 2, 3, 4, 5
    ), verdicts AS (
        SELECT c.organization_id, c.definition_id, c.scope, c.scope_owner_id, c.subject_key,
               ARRAY[
                   CASE WHEN c.roots <> 1 THEN format('%s roots, not one', c.roots) END,
                   CASE WHEN coalesce(r.reached, 0) <> c.revisions
                        THEN format('%s of %s revisions lie off the line from the root',
                                    c.revisions - coalesce(r.reached, 0), c.revisions) END,
                   CASE WHEN coalesce(h.heads, 0) <> 1 THEN format('%s heads, not one', coalesce(h.heads, 0)) END,
                   CASE WHEN coalesce(l.live, 0) <> coalesce(h.live_heads, 0) OR coalesce(l.live, 0) > 1
                        THEN format('%s live revisions for %s live heads', coalesce(l.live, 0),
                                    coalesce(h.live_heads, 0)) END
               ] AS problems
          FROM chains AS c
          LEFT JOIN reached AS r USING (organization_id, definition_id, scope, scope_owner_id, subject_key)
          LEFT JOIN heads AS h USING (organization_id, definition_id, scope, scope_owner_id, subject_key)
          LEFT JOIN live AS l USING (organization_id, definition_id, scope, scope_owner_id, subject_key)
    )
    SELECT v.organization_id, v.definition_id, v.scope, v.scope_owner_id, v.subject_key, p.problem
      FROM verdicts AS v
     CROSS JOIN LATERAL unnest(v.problems) AS p(problem)
     WHERE p.problem IS NOT NULL
     ORDER BY 1, 2, 3, 4, 5, 6
$$;

REVOKE ALL ON FUNCTION agent.memory_chain_problems(uuid) FROM PUBLIC, authenticated, ac_tenant;
