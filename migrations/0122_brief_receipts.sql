-- Brief receipts (issue 47, item 3 and item 4): one row per brief this layer built or reused, and one row per
-- ref it cited, so a console can answer "which briefs cited this source / this memory" and "what did this
-- agent run's segments build". A receipt holds ids, names and counts only: never the brief's text, its query,
-- an item's title or body (tests/integration/functions/test_brief_receipts.py seeds distinctive text and
-- searches both tables for it).
--
-- * agent.brief_receipts: the organization, when, the face that asked (http, cli, mcp, console, segment) and
--   the kind (front_door, build, rebuild, memo_hit), the policy's name, the agent run and segment where there
--   is one, the brief's tokens, its citable ref count, and per source {tokens, dropped, failed}.
--   dedupe_key makes a segment's recording idempotent: a replayed record step writes nothing twice.
-- * agent.brief_citations: (receipt, ref kind, ref id), with the receipt's organization and time copied so
--   "which briefs cited ref X in organization O, newest first" is one index range (brief_citations_ref).
--
-- What leaves (docs/operations.md, Brief receipts): an organization erasure deletes its receipts and
-- citations explicitly (functions/organization_erasure.py counts them), a person's erasure the receipts of
-- the agent runs they started (memory/erasure.py); deleting a knowledge source or a memory revision
-- deletes the citations of it through the statement triggers below, whichever path deletes the row, so what
-- is deleted is gone everywhere. Receipts older than AC_CONTEXT_BRIEF_RECEIPT_DAYS are pruned hourly.
-- Reads go through row-level security like every other agent table: an organization sees its own receipts,
-- even of a platform source that many organizations' briefs cited.

CREATE TABLE agent.brief_receipts (
    id uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    built_at timestamptz NOT NULL,
    face text NOT NULL CHECK (face IN ('http', 'cli', 'mcp', 'console', 'segment')),
    kind text NOT NULL CHECK (kind IN ('front_door', 'build', 'rebuild', 'memo_hit')),
    policy text NOT NULL CHECK (length(policy) BETWEEN 1 AND 200),
    run_id uuid,
    segment integer CHECK (segment >= 0),
    tokens integer NOT NULL CHECK (tokens >= 0),
    cited integer NOT NULL CHECK (cited >= 0),
    sources jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(sources) = 'object'),
    dedupe_key text CHECK (length(dedupe_key) <= 200),
    CONSTRAINT brief_receipts_segment_has_run CHECK ((kind = 'front_door') = (run_id IS NULL)),
    CONSTRAINT brief_receipts_once UNIQUE (organization_id, dedupe_key)
);
COMMENT ON TABLE agent.brief_receipts IS
    'One brief built or reused: who, when, which policy and run, tokens and per-source counts; never text.';

CREATE INDEX brief_receipts_recent ON agent.brief_receipts (organization_id, built_at DESC, id DESC);
CREATE INDEX brief_receipts_segments ON agent.brief_receipts (organization_id, built_at DESC, id DESC)
    WHERE run_id IS NOT NULL;
CREATE INDEX brief_receipts_runs ON agent.brief_receipts (organization_id, run_id, built_at DESC, id DESC)
    WHERE run_id IS NOT NULL;
CREATE INDEX brief_receipts_age ON agent.brief_receipts (built_at);

CREATE TABLE agent.brief_citations (
    receipt_id uuid NOT NULL REFERENCES agent.brief_receipts (id) ON DELETE CASCADE,
    organization_id uuid NOT NULL,
    ref_kind text NOT NULL CHECK (length(ref_kind) BETWEEN 1 AND 100),
    ref_id text NOT NULL CHECK (length(ref_id) BETWEEN 1 AND 200),
    built_at timestamptz NOT NULL,
    PRIMARY KEY (receipt_id, ref_kind, ref_id)
);
COMMENT ON TABLE agent.brief_citations IS 'A ref (kind and id only) a brief receipt cited.';

CREATE INDEX brief_citations_ref ON agent.brief_citations (organization_id, ref_kind, ref_id, built_at DESC, receipt_id DESC);
CREATE INDEX brief_citations_any_org ON agent.brief_citations (ref_kind, ref_id);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['agent.brief_receipts', 'agent.brief_citations'] LOOP
        EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('GRANT SELECT ON %s TO ac_tenant, authenticated', t);
        EXECUTE format('CREATE POLICY tenant_read ON %s FOR SELECT TO ac_tenant, authenticated '
                       'USING (organization_id = (SELECT public.current_organization_id()))', t);
    END LOOP;
END
$$;

-- Deleting a knowledge source or a memory revision deletes every citation of it, in every organization.
CREATE FUNCTION agent.forget_cited_sources() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM agent.brief_citations AS c USING gone AS g
     WHERE c.ref_kind = 'knowledge_source' AND c.ref_id = g.id::text;
    RETURN NULL;
END
$$;

CREATE FUNCTION agent.forget_cited_memories() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM agent.brief_citations AS c USING gone AS g
     WHERE c.ref_kind = 'agent.memory' AND c.ref_id = g.id::text;
    RETURN NULL;
END
$$;

CREATE TRIGGER knowledge_sources_forget_citations AFTER DELETE ON agent.knowledge_sources
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION agent.forget_cited_sources();
CREATE TRIGGER memories_forget_citations AFTER DELETE ON agent.memories
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION agent.forget_cited_memories();
REVOKE ALL ON FUNCTION agent.forget_cited_sources(), agent.forget_cited_memories() FROM PUBLIC;
