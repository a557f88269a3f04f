-- Memory read by relevance, bounded (issue 43, item 5): the read no longer loops over every memory in scope.
--
-- 0101's read materialised the subject's whole live scope, read every posting of each query lexeme (a word
-- every memory holds meant every memory) and computed the distance of every vector in the tenant's
-- embeddings table joined to that scope; and, as one prepared statement, after five calls on a connection
-- PostgreSQL cached a generic plan that scanned the scope whatever the parameters (38 ms against 12 ms).
-- This migration gives the read the shape knowledge_search has:
--
-- * agent.memory_postings gains the revision's BM25 length and an impact (the posting's BM25 term weight at
--   k1 1.2, b 0.75 and a reference length of 12 lexemes: within one lexeme, the order of its contribution),
--   and an index in impact order per (organization, scope owner, lexeme): the lexical half reads a common
--   lexeme (one in more than a fifth of the owners' revisions, and more than the depth) only to the depth
--   best postings, then completes the score of its best partial candidates with the postings of the
--   lexemes it cut (primary-key probes), as knowledge_search does; every other lexeme is read whole (a
--   question's names and rare words decide the rank, so they are never cut).
-- * agent.memory_embeddings gains the revision's organization and scope owner, and an index per (model,
--   organization, owner): the dense half reads the owners' vectors of the query's model alone (exact, no
--   HNSW: one person's rows), never another tenant's.
-- * BM25's statistics (the count and average length, each lexeme's document frequency) are the owners'
--   revisions with text, read from indexes (an index-only count), not the live scope; a superseded,
--   forgotten or expired revision, or one of another definition, counts too. Only the statistics: the
--   candidates each half keeps are checked live and in scope, revision by revision, before the cut.
-- * A candidate is live and in scope by the live view's rule (no tombstone, not expired, no child) and the
--   source's (the organization; the definition unless NULL; `personal`: the person's user-scope preferences,
--   else organization scope and the person's own user chain), checked by one primary-key probe each.
-- * The read (memory/queries.sql, fetch_relevant_memories) reaches every row through these indexes by
--   equality on its parameters, and its two scopes' fill branches carry literal predicates, so the generic
--   plan PostgreSQL caches after five calls on a connection is the custom plan's shape: it never loops over
--   every memory in scope. (A function planned on every call, plan_cache_mode = force_custom_plan, cost 6 ms
--   more a call than the plain statement: measured, docs/decisions.md "Memory".)
--
-- The indexes stay what 0101 made them: rows of a revision, removed with it by cascade (erasure leaves none).

ALTER TABLE agent.memory_postings ADD COLUMN lexical_length integer, ADD COLUMN impact real;
UPDATE agent.memory_postings AS p
   SET lexical_length = m.lexical_length,
       impact = p.tf * 2.2 / (p.tf + 1.2 * (0.25 + 0.75 * m.lexical_length / 12.0))
  FROM agent.memories AS m
 WHERE m.id = p.memory_id;
ALTER TABLE agent.memory_postings ALTER COLUMN lexical_length SET NOT NULL, ALTER COLUMN impact SET NOT NULL;
CREATE INDEX memory_postings_impact_idx
    ON agent.memory_postings (organization_id, scope_owner_id, lexeme, impact DESC, memory_id) INCLUDE (tf, lexical_length);

CREATE OR REPLACE FUNCTION agent.memory_postings_on_insert() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    INSERT INTO agent.memory_postings (organization_id, scope_owner_id, lexeme, memory_id, tf, lexical_length, impact)
    SELECT n.organization_id, n.scope_owner_id, t.lexeme, n.id, t.tf, n.lexical_length,
           t.tf * 2.2 / (t.tf + 1.2 * (0.25 + 0.75 * n.lexical_length / 12.0))
      FROM new_rows AS n
     CROSS JOIN LATERAL agent.memory_terms(n.text) AS t
     WHERE n.text IS NOT NULL
     ORDER BY 1, 2, 3;
    RETURN NULL;
END
$$;

ALTER TABLE agent.memory_embeddings ADD COLUMN organization_id uuid, ADD COLUMN scope_owner_id uuid;
UPDATE agent.memory_embeddings AS e
   SET organization_id = m.organization_id, scope_owner_id = m.scope_owner_id
  FROM agent.memories AS m
 WHERE m.id = e.memory_id;
ALTER TABLE agent.memory_embeddings
    ALTER COLUMN organization_id SET NOT NULL, ALTER COLUMN scope_owner_id SET NOT NULL;
CREATE INDEX memory_embeddings_owner_idx ON agent.memory_embeddings (embedding_model, organization_id, scope_owner_id);

-- BM25's count and average length per owner, from the index alone.
CREATE INDEX memories_owner_length_idx ON agent.memories (organization_id, scope_owner_id) INCLUDE (lexical_length)
    WHERE text IS NOT NULL;
