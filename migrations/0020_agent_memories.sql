-- Durable memory: agent.memories, its append-only revision chains, and the two views its readers use.
--
-- A chain is every revision of one memory: the rows sharing (organization_id, definition_id, scope,
-- scope_owner_id, subject_key). The database enforces the chain, not the service:
--   memories_one_root_per_chain       one row with no supersedes_id per chain identity
--   memories_one_child_per_revision   one revision has at most one child
--   memories_supersedes_same_chain    the parent carries the same chain identity (a composite self
--                                     reference onto memories_chain_identity), so a child cannot change
--                                     the organization, the definition, the scope, the user or the key
--   memories_not_own_parent           a revision never supersedes itself
--   memories_append_only              no revision is ever rewritten (the one update allowed is the
--                                     foreign key clearing proposed_by_run_id when its run is deleted)
-- A tombstone (forgotten_at set, no text) forgets a memory; a later revision may follow it.
--
-- subject_refs is a JSON array of at most one element; kind and id of each element are strings holding a
-- character that is not blank and no ':' (jsonb itself refuses the null byte). "Blank" is one list,
-- memory/_blank.py BLANK_CHARACTERS, written below as agent.memory_blank_characters(); a test compares
-- the two. label is free text and may hold a colon.
--
-- Everything here is closed to authenticated and ac_tenant: the service role writes through
-- MemoryService and reads with explicit organization filters.

CREATE FUNCTION agent.memory_blank_characters() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT E'\u0009\u000a\u000b\u000c\u000d\u001c\u001d\u001e\u001f\u0020\u0085\u00a0\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u200b\u200c\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff'::text $$;

-- True when the text is empty or made of blank characters only (NULL for NULL).
CREATE FUNCTION agent.is_blank(value text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT btrim(value, agent.memory_blank_characters()) = '' $$;

-- One part of a subject key as a JSON value: a string, not blank, with no ':'.
CREATE FUNCTION agent.is_memory_key_part(value jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(
        jsonb_typeof(value) = 'string'
        AND strpos(value #>> '{}', ':') = 0
        AND NOT agent.is_blank(value #>> '{}'),
        false)
$$;

-- One stored subject ref: an object whose kind and id are key parts and whose label, if any, is a string
-- or null. Unknown keys are allowed (parse_stored_refs ignores them too).
CREATE FUNCTION agent.is_memory_subject_ref(element jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN jsonb_typeof(element) IS DISTINCT FROM 'object' THEN false
        ELSE agent.is_memory_key_part(element -> 'kind')
             AND agent.is_memory_key_part(element -> 'id')
             AND coalesce(jsonb_typeof(element -> 'label') IN ('string', 'null'), true)
    END
$$;

-- Every element of a subject_refs array is a well-formed subject ref (false for a non-array).
CREATE FUNCTION agent.memory_subject_refs_well_formed(refs jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN jsonb_typeof(refs) IS DISTINCT FROM 'array' THEN false
        ELSE NOT EXISTS (
            SELECT 1 FROM jsonb_array_elements(refs) AS e(element) WHERE NOT agent.is_memory_subject_ref(e.element))
    END
$$;

CREATE TABLE agent.memories (
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL,
    definition_id uuid NOT NULL,
    scope text NOT NULL,
    user_id uuid,
    scope_owner_id uuid NOT NULL,
    subject_key text NOT NULL,
    text text,
    subject_refs jsonb NOT NULL DEFAULT '[]'::jsonb,
    proposed_by_run_id uuid,
    supersedes_id uuid,
    forgotten_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),

    CONSTRAINT memories_pkey PRIMARY KEY (id),
    CONSTRAINT memories_organization_fkey FOREIGN KEY (organization_id)
        REFERENCES public.organizations (id) ON DELETE CASCADE,
    CONSTRAINT memories_definition_fkey FOREIGN KEY (definition_id)
        REFERENCES agent.definitions (id) ON DELETE CASCADE,
    CONSTRAINT memories_user_fkey FOREIGN KEY (user_id)
        REFERENCES public.users (id) ON DELETE CASCADE,
    CONSTRAINT memories_proposed_by_run_fkey FOREIGN KEY (proposed_by_run_id)
        REFERENCES agent.runs (id) ON DELETE SET NULL,

    -- The scope owner: the organization for organization scope, the user for user scope.
    CONSTRAINT memories_scope_owner_matches CHECK (
        (scope = 'organization' AND user_id IS NULL AND scope_owner_id = organization_id)
        OR (scope = 'user' AND user_id IS NOT NULL AND scope_owner_id = user_id)),

    -- <kind>:<id>:<attribute>, the attribute in the observation. or preference. namespace.
    CONSTRAINT memories_subject_key_shape CHECK (
        octet_length(subject_key) <= 1024
        AND subject_key ~ '^[^:]+:[^:]+:(observation|preference)(\.[a-z0-9_]+)+$'),

    -- The key is made from the one subject ref, or from the scope owner when there is none.
    CONSTRAINT memories_subject_key_matches_subject CHECK (
        CASE
            -- A malformed array or element is memories_subject_ref_elements_well_formed's to name.
            WHEN NOT agent.memory_subject_refs_well_formed(subject_refs) THEN true
            WHEN jsonb_array_length(subject_refs) = 0
                THEN subject_key LIKE scope || ':' || scope_owner_id::text || ':%'
            WHEN jsonb_array_length(subject_refs) = 1
                THEN split_part(subject_key, ':', 1) = (subject_refs -> 0 ->> 'kind')
                     AND split_part(subject_key, ':', 2) = (subject_refs -> 0 ->> 'id')
            ELSE true
        END),

    CONSTRAINT memories_subject_refs_at_most_one CHECK (
        jsonb_typeof(subject_refs) = 'array' AND jsonb_array_length(subject_refs) <= 1),
    CONSTRAINT memories_subject_ref_elements_well_formed CHECK (
        agent.memory_subject_refs_well_formed(subject_refs)),

    -- A tombstone has no text and has forgotten_at; a live revision the reverse.
    CONSTRAINT memories_tombstone_has_no_text CHECK (forgotten_at IS NULL OR text IS NULL),
    CONSTRAINT memories_live_revision_has_text CHECK (
        forgotten_at IS NOT NULL OR (text IS NOT NULL AND NOT agent.is_blank(text))),
    CONSTRAINT memories_text_length CHECK (text IS NULL OR char_length(text) <= 4000),
    -- Only a revision can be forgotten: a chain never starts with a tombstone.
    CONSTRAINT memories_tombstone_supersedes CHECK (forgotten_at IS NULL OR supersedes_id IS NOT NULL),

    -- The chain.
    CONSTRAINT memories_not_own_parent CHECK (supersedes_id IS DISTINCT FROM id),
    CONSTRAINT memories_one_child_per_revision UNIQUE (supersedes_id),
    CONSTRAINT memories_chain_identity UNIQUE (id, organization_id, definition_id, scope, scope_owner_id, subject_key),
    CONSTRAINT memories_supersedes_same_chain
        FOREIGN KEY (supersedes_id, organization_id, definition_id, scope, scope_owner_id, subject_key)
        REFERENCES agent.memories (id, organization_id, definition_id, scope, scope_owner_id, subject_key)
        ON DELETE CASCADE
);

CREATE UNIQUE INDEX memories_one_root_per_chain
    ON agent.memories (organization_id, definition_id, scope, scope_owner_id, subject_key)
    WHERE supersedes_id IS NULL;

-- The writers' head lookup by chain identity.
CREATE INDEX memories_chain_idx ON agent.memories (organization_id, definition_id, scope_owner_id, subject_key);
-- The sources' recency reads, with and without the definition filter.
CREATE INDEX memories_live_recent_idx
    ON agent.memories (organization_id, created_at DESC, id DESC) WHERE forgotten_at IS NULL;
CREATE INDEX memories_live_definition_recent_idx
    ON agent.memories (organization_id, definition_id, created_at DESC, id DESC) WHERE forgotten_at IS NULL;
-- The per-run count limit of memory.remember.
CREATE INDEX memories_run_idx ON agent.memories (proposed_by_run_id) WHERE proposed_by_run_id IS NOT NULL;

-- Append only: a revision is never rewritten. The foreign key that clears proposed_by_run_id when its run
-- is deleted is the one update let through.
CREATE FUNCTION agent.memories_refuse_rewrite() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF (NEW.id, NEW.organization_id, NEW.definition_id, NEW.scope, NEW.user_id, NEW.scope_owner_id,
        NEW.subject_key, NEW.text, NEW.subject_refs, NEW.supersedes_id, NEW.forgotten_at, NEW.created_at)
       IS DISTINCT FROM
       (OLD.id, OLD.organization_id, OLD.definition_id, OLD.scope, OLD.user_id, OLD.scope_owner_id,
        OLD.subject_key, OLD.text, OLD.subject_refs, OLD.supersedes_id, OLD.forgotten_at, OLD.created_at)
       OR (NEW.proposed_by_run_id IS DISTINCT FROM OLD.proposed_by_run_id AND NEW.proposed_by_run_id IS NOT NULL)
    THEN
        RAISE EXCEPTION 'agent.memories is append only: append a revision instead of rewriting %', OLD.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'memories_append_only',
                  SCHEMA = 'agent', TABLE = 'memories';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER memories_append_only BEFORE UPDATE ON agent.memories
    FOR EACH ROW EXECUTE FUNCTION agent.memories_refuse_rewrite();

-- Every chain's current revision, tombstones included: the revision no other revision supersedes.
CREATE VIEW agent.memory_heads WITH (security_invoker = true) AS
SELECT m.id, m.organization_id, m.definition_id, m.scope, m.user_id, m.scope_owner_id, m.subject_key,
       m.text, m.subject_refs, m.proposed_by_run_id, m.supersedes_id, m.forgotten_at, m.created_at
FROM agent.memories AS m
WHERE NOT EXISTS (SELECT 1 FROM agent.memories AS c WHERE c.supersedes_id = m.id);

-- Every chain's current revision when it is not a tombstone. It drops scope_owner_id and forgotten_at:
-- the read path declares its own row shape.
CREATE VIEW agent.live_memories WITH (security_invoker = true) AS
SELECT m.id, m.organization_id, m.definition_id, m.scope, m.user_id, m.subject_key, m.text,
       m.subject_refs, m.proposed_by_run_id, m.supersedes_id, m.created_at
FROM agent.memories AS m
WHERE m.forgotten_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM agent.memories AS c WHERE c.supersedes_id = m.id);

-- Closed: no role but the owner (the service role) reads or writes memory. RLS with no policy is the
-- second lock should a grant ever appear.
ALTER TABLE agent.memories ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON agent.memories, agent.memory_heads, agent.live_memories FROM PUBLIC, authenticated, ac_tenant;
REVOKE ALL ON FUNCTION agent.memories_refuse_rewrite() FROM PUBLIC;
