-- Documents with an owner and a review date (issue 22, item 6; docs/decisions.md, "Issue 22: documents
-- with an owner and a review date").
--
-- `owner` names who answers for the document (free text: a person, a team, an address), trimmed, never
-- blank, at most 200 characters; `review_by` is the date by which it must be reviewed. NULL means none for
-- both. A source is overdue when `review_by < (now() AT TIME ZONE 'UTC')::date`: the day after its review
-- date begins in UTC, whatever the session's TimeZone. Every reader computes it with that one expression
-- (the sources list, the search statement, the /metrics count).
--
-- The partial index holds only the sources that carry a review date and are not being deleted (0081): the
-- overdue listing of one scope reads its range (organization, then review_by below today), and the
-- /metrics count reads the whole index without touching the table (an index-only scan grouped by
-- organization), so the scrape costs the number of dated sources, not the size of the table.

ALTER TABLE agent.knowledge_sources
    ADD COLUMN owner text,
    ADD COLUMN review_by date,
    ADD CONSTRAINT knowledge_sources_owner_check
        CHECK (owner IS NULL OR (owner = btrim(owner) AND owner <> '' AND length(owner) <= 200));

CREATE INDEX knowledge_sources_review_idx ON agent.knowledge_sources (organization_id, review_by)
    WHERE review_by IS NOT NULL AND status <> 'deleting';
