-- Deleting a source that is being re-synced (docs/decisions.md, "Deleting a knowledge source").
--
-- A re-sync registers a new version of a URI (`replaces` = the live row); the transaction that makes it
-- ready deletes the row it replaces (knowledge/queries.sql `swap_replaced_sources`). From then on the old
-- id named no row, so a delete by the id the caller knew answered 404 while the new version stayed
-- searchable. The swap now carries the replaced row's id, and the ids that row itself had replaced, into
-- `earlier_versions` of the new version: a delete by any id of the URI's version chain finds the live row
-- (knowledge/queries.sql `lock_source_for_delete`), locks every version and deletes them all.
--
-- A source receipt lists the versions its delete removed (`versions`), so a later delete by any of those
-- ids answers `source_deleted` with that receipt rather than 404.

ALTER TABLE agent.knowledge_sources ADD COLUMN earlier_versions uuid[] NOT NULL DEFAULT '{}';
COMMENT ON COLUMN agent.knowledge_sources.earlier_versions IS
    'Ids of the versions of this URI that this row replaced (oldest first); a delete by any of them deletes this row.';
CREATE INDEX knowledge_sources_earlier_versions ON agent.knowledge_sources USING gin (earlier_versions);

ALTER TABLE agent.removal_receipts ADD COLUMN versions uuid[] NOT NULL DEFAULT '{}';
COMMENT ON COLUMN agent.removal_receipts.versions IS
    'For a source receipt: every version (source row id) the delete removed.';
CREATE INDEX removal_receipts_versions ON agent.removal_receipts USING gin (versions);
