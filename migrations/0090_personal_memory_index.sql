-- An index for the `personal_memory` read (issue 24: it seq-scanned all memory rows, 10-16 ms at 30,000 in
-- the bench). memory/queries.sql `fetch_personal_memories` reads one person's live user-scope preference.*
-- rows of one organization, newest first, `(created_at DESC, id DESC)`, LIMIT n, with the definition
-- either named or dropped (a Front Door turn). No earlier index serves it: the two recent-first indexes of
-- 0020 lead with the organization (and the definition) and hold every live row of the tenant, so the read
-- filtered the whole tenant and sorted what was left, and the planner preferred a sequential scan of the
-- table once one organization held most of the rows.
--
-- This index holds exactly the rows the read can return, before the view's two run-time conditions (the
-- expiry against now() and "no later revision", which no index predicate can state): live revisions of
-- user scope whose key names a preference.* attribute. The predicate repeats the read's own clauses word
-- for word, so the planner proves it from the query (custom and generic plans alike); the keys give the
-- person's rows in the read's order, so the scan stops at the limit with no sort. The definition stays a
-- filter: the read may drop it, and one person's preferences are few. The read itself is unchanged.

CREATE INDEX memories_personal_preferences_idx
    ON agent.memories (organization_id, user_id, created_at DESC, id DESC)
    WHERE forgotten_at IS NULL AND scope = 'user' AND split_part(subject_key, ':', 3) LIKE 'preference.%';
