-- Sorting the operator's lists by their columns (issue 47, item 1): every column a list sorts by is read
-- through an index, in both directions, with the cursor's keyset (no OFFSET).
--
-- * memories by subject: memories_live_subject_idx (the live list's rows are not forgotten, as in
--   memories_live_recent_idx, which serves the sort by when written).
-- * sources by title: knowledge_sources_title_idx, on the scope expression of knowledge_sources_page_idx
--   (0102, which serves the sort by when created); organizations by when created: their created_at index.
-- * organizations by name: organizations_name_idx.
-- * the memories list's subject filter: memories_live_subject_refs_idx (below).
CREATE INDEX memories_live_subject_idx ON agent.memories (organization_id, subject_key, id) WHERE forgotten_at IS NULL;
CREATE INDEX knowledge_sources_title_idx ON agent.knowledge_sources (
    (coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid)), title, id);
CREATE INDEX organizations_name_idx ON public.organizations (name, id);

-- The memories list's subject filter (`subject_refs @> [{"kind": ..., "id": ...}]`): without it a subject no
-- memory is about reads every live memory of the organization twice (the total and the page).
CREATE INDEX memories_live_subject_refs_idx ON agent.memories USING gin (subject_refs jsonb_path_ops)
    WHERE forgotten_at IS NULL;
