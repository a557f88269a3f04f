-- The index a page of sources reads (knowledge/queries.sql `page_sources`, `count_sources_filtered`): one
-- scope's sources newest first, so the first page and a deep page each read only their rows (keyset after
-- (created_at, id)), and the count is an index scan of the scope. The platform's sources (organization_id
-- NULL) share the index through the all-zero UUID, which no organization has (gen_random_uuid never makes
-- it: its version bits are set).

CREATE INDEX knowledge_sources_page_idx
    ON agent.knowledge_sources (
        (coalesce(organization_id, '00000000-0000-0000-0000-000000000000'::uuid)), created_at DESC, id DESC);
