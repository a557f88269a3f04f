-- Memory read by relevance (issue 37, spec open decision 1): the index rows a relevance-ordered read scores.
--
-- A memory is scored as a knowledge chunk is (knowledge_search, migrations/0093): Okapi BM25 over its text
-- with the same lexemes (agent.knowledge_english, migrations/0063: compounds counted once, as their parts)
-- and the cosine distance of its vector under the live embedding model, fused convexly. Three index rows:
--
-- * agent.memories.lexical_length: the revision's BM25 length (the sum of its lexemes' term frequencies,
--   as knowledge_lexical_add_chunks counts a chunk's), a generated column: no writer can forget it, and the
--   column is filled for every existing revision as this migration rewrites the table.
-- * agent.memory_postings: one row per (revision, lexeme) with its term frequency, keyed by organization,
--   scope owner (the organization for organization scope, the person for user scope) and lexeme, so a read
--   fetches the postings of the query's lexemes for the owners it reads and no other tenant's or person's.
--   A statement trigger writes them for every inserted revision with text (the service's, a bulk insert's,
--   a test's); existing revisions are indexed below.
-- * agent.memory_embeddings: the revision's vector under a model, written by the service at remember time
--   (memory.vectors) with the organization's live model; a revision may hold one per model. SQL cannot
--   embed, so revisions written before this migration (or while the embedder was down) have none: the read
--   ranks such a memory by BM25 alone, and memory.vectors.embed_missing fills them in (the same call after
--   a model switchover embeds the live memories under the new model; docs/decisions.md, "Memory").
--
-- Postings and vectors reference their revision ON DELETE CASCADE: erasure (agent.erase_memory_chains,
-- migration 0083) removes them with the revision, and nothing else deletes a revision. Closed like
-- agent.memories: no role but the owner (the service role) reads or writes them.

-- A text's lexemes with their term frequencies, under knowledge's configuration: the one tokenizer of BM25.
CREATE FUNCTION agent.memory_terms(p_text text) RETURNS TABLE (lexeme text, tf integer)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog
AS $$
    SELECT u.lexeme, cardinality(u.positions)
      FROM unnest(to_tsvector('agent.knowledge_english'::regconfig, coalesce(p_text, ''))) AS u
$$;

-- A text's BM25 length: the sum of its term frequencies (what knowledge_lexical_add_chunks counts a chunk's).
CREATE FUNCTION agent.memory_lexical_length(p_text text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog
AS $$
    SELECT coalesce(sum(t.tf), 0)::integer FROM agent.memory_terms(p_text) AS t
$$;

ALTER TABLE agent.memories
    ADD COLUMN lexical_length integer NOT NULL GENERATED ALWAYS AS (agent.memory_lexical_length(text)) STORED;

CREATE TABLE agent.memory_postings (
    organization_id uuid NOT NULL,
    scope_owner_id uuid NOT NULL,
    lexeme text NOT NULL,
    memory_id uuid NOT NULL REFERENCES agent.memories (id) ON DELETE CASCADE,
    tf integer NOT NULL CHECK (tf > 0),
    PRIMARY KEY (organization_id, scope_owner_id, lexeme, memory_id)
);
-- The cascade's probe: an erased revision's postings by its id.
CREATE INDEX memory_postings_memory_idx ON agent.memory_postings (memory_id);

CREATE TABLE agent.memory_embeddings (
    memory_id uuid NOT NULL REFERENCES agent.memories (id) ON DELETE CASCADE,
    embedding_model text NOT NULL REFERENCES agent.embedding_models (model_id),
    embedding vector NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (memory_id, embedding_model)
);

-- Index every inserted revision with text (a tombstone has none), whoever inserts it.
CREATE FUNCTION agent.memory_postings_on_insert() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    INSERT INTO agent.memory_postings (organization_id, scope_owner_id, lexeme, memory_id, tf)
    SELECT n.organization_id, n.scope_owner_id, t.lexeme, n.id, t.tf
      FROM new_rows AS n
     CROSS JOIN LATERAL agent.memory_terms(n.text) AS t
     WHERE n.text IS NOT NULL
     ORDER BY 1, 2, 3;
    RETURN NULL;
END
$$;

CREATE TRIGGER memory_postings_on_insert AFTER INSERT ON agent.memories
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.memory_postings_on_insert();

-- The revisions written before this migration.
INSERT INTO agent.memory_postings (organization_id, scope_owner_id, lexeme, memory_id, tf)
SELECT m.organization_id, m.scope_owner_id, t.lexeme, m.id, t.tf
  FROM agent.memories AS m
 CROSS JOIN LATERAL agent.memory_terms(m.text) AS t
 WHERE m.text IS NOT NULL;

-- The live view gains the length (appended: CREATE OR REPLACE keeps 0086's columns and their order).
CREATE OR REPLACE VIEW agent.live_memories WITH (security_invoker = true) AS
SELECT m.id, m.organization_id, m.definition_id, m.scope, m.user_id, m.subject_key, m.text,
       m.subject_refs, m.proposed_by_run_id, m.supersedes_id, m.created_at, m.expires_at, m.lexical_length
FROM agent.memories AS m
WHERE m.forgotten_at IS NULL
  AND (m.expires_at IS NULL OR m.expires_at > now())
  AND NOT EXISTS (SELECT 1 FROM agent.memories AS c WHERE c.supersedes_id = m.id);

ALTER TABLE agent.memory_postings ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent.memory_embeddings ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON agent.memory_postings, agent.memory_embeddings, agent.live_memories FROM PUBLIC, authenticated, ac_tenant;
REVOKE ALL ON FUNCTION agent.memory_postings_on_insert() FROM PUBLIC;
