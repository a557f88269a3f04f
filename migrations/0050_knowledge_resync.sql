-- Re-sync of a URI-backed source: a changed document is ingested as a new row that `replaces` the live
-- one, and the two swap in one transaction when the new row becomes ready (the old row is deleted, which
-- sets `replaces` to NULL on the new one). Until then search answers from the old row only, because search
-- reads ready rows only; after it, from the new row only.
--
-- The identity (URI, else content hash) stays unique per scope among the rows that replace nothing; a row
-- can have at most one replacement at a time.

ALTER TABLE agent.knowledge_sources
    ADD COLUMN replaces uuid REFERENCES agent.knowledge_sources (id) ON DELETE SET NULL;

ALTER TABLE agent.knowledge_sources DROP CONSTRAINT knowledge_sources_identity_key;
CREATE UNIQUE INDEX knowledge_sources_identity_key ON agent.knowledge_sources (organization_id, identity)
    NULLS NOT DISTINCT WHERE replaces IS NULL;
CREATE UNIQUE INDEX knowledge_sources_one_replacement ON agent.knowledge_sources (replaces)
    WHERE replaces IS NOT NULL;
ALTER TABLE agent.knowledge_sources
    ADD CONSTRAINT knowledge_sources_replacement_is_a_uri CHECK (replaces IS NULL OR kind = 'uri'),
    ADD CONSTRAINT knowledge_sources_replaces_another CHECK (replaces IS DISTINCT FROM id);
