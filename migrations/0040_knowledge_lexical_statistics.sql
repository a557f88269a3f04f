-- BM25 statistics and postings for the lexical half of knowledge_search, kept by the database itself.
--
-- A (source, model) pair is *searchable* when its source is ready and its readiness row is ready. The
-- postings hold one row per (chunk, lexeme) of every searchable pair's chunks, and the statistics are a
-- running sum over the postings: per scope (organization, or NULL = platform, and embedding model) the
-- number of chunks and their total length, and per (scope, lexeme) its document frequency. Triggers on the
-- state tables keep both right, whoever writes: a pair joins when its source and its row are both ready, and
-- leaves when either stops being ready or is deleted; a chunk inserted into, deleted from or rewritten in a
-- searchable pair joins or leaves with it (a re-sync that swaps chunks). Chunks written while a source is
-- pending cost one join per statement and count nothing. Every statistic moves by exactly the postings a
-- statement inserted or deleted (RETURNING), so an add or a remove run twice changes nothing.
--
-- Length is the number of English lexeme occurrences (stop words removed), the unit BM25 is usually
-- computed in; a chunk with no lexeme at all (e.g. '///') has no postings and is not counted.

-- One row per (organization or platform, model) that ever held a searchable pair: the scope id the postings
-- carry, the chunk count and the total length.
CREATE TABLE agent.knowledge_lexical_scopes (
    id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    organization_id uuid,  -- NULL = platform; no foreign key, so its counts outlive nothing they count
    embedding_model text NOT NULL,
    chunks bigint NOT NULL DEFAULT 0 CHECK (chunks >= 0),
    total_length bigint NOT NULL DEFAULT 0 CHECK (total_length >= 0),
    CONSTRAINT knowledge_lexical_scopes_key UNIQUE NULLS NOT DISTINCT (organization_id, embedding_model)
);

-- The searchable pairs, with the scope their postings are counted in. No foreign key: a pair must stay
-- listed until its leaving has been counted, even while its source row is being deleted.
CREATE TABLE agent.knowledge_searchable (
    source_id uuid NOT NULL,
    embedding_model text NOT NULL,
    scope_id integer NOT NULL,
    PRIMARY KEY (source_id, embedding_model)
);
CREATE INDEX knowledge_searchable_scope_idx ON agent.knowledge_searchable (scope_id, source_id);

-- Document frequency per (scope, lexeme). A lexeme whose last chunk left keeps its row at 0.
CREATE TABLE agent.knowledge_lexemes (
    scope_id integer NOT NULL,
    lexeme text NOT NULL,
    df integer NOT NULL,
    PRIMARY KEY (scope_id, lexeme)
);

-- The postings: term frequency and chunk length per (chunk, lexeme), and an impact (the BM25 term weight
-- at the reference length 64) that orders each lexeme's list, so a common lexeme is read best first and
-- only as deep as the search asks. Scores use the scope's live average length, not the impact.
CREATE TABLE agent.knowledge_postings (
    chunk_id bigint NOT NULL,
    lexeme text NOT NULL,
    scope_id integer NOT NULL,
    tf integer NOT NULL CHECK (tf > 0),
    chunk_length integer NOT NULL CHECK (chunk_length > 0),
    impact real NOT NULL,
    PRIMARY KEY (chunk_id, lexeme)
);
CREATE INDEX knowledge_postings_list_idx
    ON agent.knowledge_postings (scope_id, lexeme, impact DESC, chunk_id) INCLUDE (tf, chunk_length);

-- The scope id of (organization, model), created on first use.
CREATE FUNCTION agent.knowledge_lexical_scope(p_organization_id uuid, p_model text) RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_id integer;
BEGIN
    SELECT id INTO v_id FROM agent.knowledge_lexical_scopes
     WHERE organization_id IS NOT DISTINCT FROM p_organization_id AND embedding_model = p_model;
    IF NOT FOUND THEN
        INSERT INTO agent.knowledge_lexical_scopes (organization_id, embedding_model)
        VALUES (p_organization_id, p_model)
        ON CONFLICT ON CONSTRAINT knowledge_lexical_scopes_key DO NOTHING;
        SELECT id INTO v_id FROM agent.knowledge_lexical_scopes
         WHERE organization_id IS NOT DISTINCT FROM p_organization_id AND embedding_model = p_model;
    END IF;
    RETURN v_id;
END
$$;

-- Add the postings of these chunks (ids) to the scopes their pairs are listed under, and count them.
-- Chunks whose pair is not searchable, or that already have postings, add nothing.
CREATE FUNCTION agent.knowledge_lexical_add_chunks(p_chunk_ids bigint[]) RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, public
AS $$
    WITH added AS (
        INSERT INTO agent.knowledge_postings AS p (chunk_id, lexeme, scope_id, tf, chunk_length, impact)
        SELECT c.id, u.lexeme, sp.scope_id, cardinality(u.positions), len.n,
               cardinality(u.positions) * 2.2
                 / (cardinality(u.positions) + 1.2 * (0.25 + 0.75 * len.n / 64.0))
          FROM agent.knowledge_chunks c
          JOIN agent.knowledge_searchable sp ON sp.source_id = c.source_id AND sp.embedding_model = c.embedding_model
         CROSS JOIN LATERAL (SELECT sum(cardinality(x.positions))::integer AS n FROM unnest(c.fts) AS x) AS len
         CROSS JOIN LATERAL unnest(c.fts) AS u
         WHERE c.id = ANY (p_chunk_ids)
           AND NOT EXISTS (SELECT 1 FROM agent.knowledge_postings q WHERE q.chunk_id = c.id)
         ORDER BY 3, 2  -- in list-index order: a bulk insert walks the index once instead of at random
        RETURNING p.scope_id, p.lexeme, p.chunk_id, p.chunk_length
    ), lexemes AS (
        INSERT INTO agent.knowledge_lexemes AS l (scope_id, lexeme, df)
        SELECT scope_id, lexeme, count(*) FROM added GROUP BY scope_id, lexeme ORDER BY scope_id, lexeme
        ON CONFLICT (scope_id, lexeme) DO UPDATE SET df = l.df + EXCLUDED.df
        RETURNING 1
    ), chunks AS (
        SELECT DISTINCT scope_id, chunk_id, chunk_length FROM added
    )
    UPDATE agent.knowledge_lexical_scopes s
       SET chunks = s.chunks + t.n, total_length = s.total_length + t.len
      FROM (SELECT scope_id, count(*) AS n, sum(chunk_length) AS len FROM chunks GROUP BY scope_id) AS t
     WHERE s.id = t.scope_id
$$;

-- Remove the postings of these chunks and uncount them.
CREATE FUNCTION agent.knowledge_lexical_remove_chunks(p_chunk_ids bigint[]) RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, public
AS $$
    WITH removed AS (
        DELETE FROM agent.knowledge_postings p
         WHERE p.chunk_id = ANY (p_chunk_ids)
        RETURNING p.scope_id, p.lexeme, p.chunk_id, p.chunk_length
    ), lexemes AS (
        -- An upsert of negative counts in lexeme order: concurrent writers lock the rows in one order.
        INSERT INTO agent.knowledge_lexemes AS l (scope_id, lexeme, df)
        SELECT scope_id, lexeme, -count(*) FROM removed GROUP BY scope_id, lexeme ORDER BY scope_id, lexeme
        ON CONFLICT (scope_id, lexeme) DO UPDATE SET df = l.df + EXCLUDED.df
        RETURNING 1
    ), chunks AS (
        SELECT DISTINCT scope_id, chunk_id, chunk_length FROM removed
    )
    UPDATE agent.knowledge_lexical_scopes s
       SET chunks = s.chunks - t.n, total_length = s.total_length - t.len
      FROM (SELECT scope_id, count(*) AS n, sum(chunk_length) AS len FROM chunks GROUP BY scope_id) AS t
     WHERE s.id = t.scope_id
$$;

-- Bring the listed sources' pairs in line with their states: a pair whose source and readiness row are
-- both ready is listed under its source's scope and its chunks counted; any other listed pair of these
-- sources (or one listed under another scope: a source moved to another organization) leaves.
CREATE FUNCTION agent.knowledge_lexical_sync(p_source_ids uuid[]) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_leaving bigint[];
    v_joining bigint[];
BEGIN
    IF p_source_ids IS NULL OR cardinality(p_source_ids) = 0 THEN
        RETURN;
    END IF;
    -- Pairs that stop being searchable (or whose rows are gone): uncount their chunks, then unlist them.
    WITH leaving AS (
        DELETE FROM agent.knowledge_searchable sp
         WHERE sp.source_id = ANY (p_source_ids)
           AND NOT EXISTS (
                SELECT 1 FROM agent.knowledge_sources s
                  JOIN agent.knowledge_source_models r ON r.source_id = s.id
                  JOIN agent.knowledge_lexical_scopes sc ON sc.id = sp.scope_id
                 WHERE s.id = sp.source_id AND r.embedding_model = sp.embedding_model
                   AND s.status = 'ready' AND r.status = 'ready'
                   AND sc.organization_id IS NOT DISTINCT FROM s.organization_id)
        RETURNING sp.source_id, sp.embedding_model
    )
    SELECT array_agg(c.id) INTO v_leaving
      FROM leaving l JOIN agent.knowledge_chunks c
        ON c.source_id = l.source_id AND c.embedding_model = l.embedding_model;
    IF v_leaving IS NOT NULL THEN
        PERFORM agent.knowledge_lexical_remove_chunks(v_leaving);
    END IF;
    -- Pairs that become searchable: list them under their scope, then count their chunks.
    WITH joining AS (
        INSERT INTO agent.knowledge_searchable (source_id, embedding_model, scope_id)
        SELECT s.id, r.embedding_model, agent.knowledge_lexical_scope(s.organization_id, r.embedding_model)
          FROM agent.knowledge_sources s
          JOIN agent.knowledge_source_models r ON r.source_id = s.id
         WHERE s.id = ANY (p_source_ids) AND s.status = 'ready' AND r.status = 'ready'
         ORDER BY s.id, r.embedding_model
        ON CONFLICT (source_id, embedding_model) DO NOTHING
        RETURNING source_id, embedding_model
    )
    SELECT array_agg(c.id) INTO v_joining
      FROM joining j JOIN agent.knowledge_chunks c
        ON c.source_id = j.source_id AND c.embedding_model = j.embedding_model;
    IF v_joining IS NOT NULL THEN
        PERFORM agent.knowledge_lexical_add_chunks(v_joining);
    END IF;
END
$$;

-- Triggers. Statement-level with transition tables, so a bulk writer pays one join per statement.

CREATE FUNCTION agent.knowledge_lexical_on_readiness() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_sources uuid[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg(DISTINCT n.source_id) INTO v_sources FROM new_rows n WHERE n.status = 'ready';
    ELSIF TG_OP = 'UPDATE' THEN
        SELECT array_agg(DISTINCT n.source_id) INTO v_sources
          FROM new_rows n JOIN old_rows o ON o.source_id = n.source_id AND o.embedding_model = n.embedding_model
         WHERE o.status IS DISTINCT FROM n.status;
    ELSE
        SELECT array_agg(DISTINCT o.source_id) INTO v_sources
          FROM old_rows o
         WHERE EXISTS (SELECT 1 FROM agent.knowledge_searchable sp
                        WHERE sp.source_id = o.source_id AND sp.embedding_model = o.embedding_model);
    END IF;
    PERFORM agent.knowledge_lexical_sync(v_sources);
    RETURN NULL;
END
$$;

CREATE TRIGGER knowledge_lexical_readiness_insert AFTER INSERT ON agent.knowledge_source_models
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_readiness();
CREATE TRIGGER knowledge_lexical_readiness_update AFTER UPDATE ON agent.knowledge_source_models
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_readiness();
CREATE TRIGGER knowledge_lexical_readiness_delete AFTER DELETE ON agent.knowledge_source_models
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_readiness();

CREATE FUNCTION agent.knowledge_lexical_on_source() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_sources uuid[];
BEGIN
    IF TG_OP = 'UPDATE' THEN
        SELECT array_agg(n.id) INTO v_sources
          FROM new_rows n JOIN old_rows o ON o.id = n.id
         WHERE o.status IS DISTINCT FROM n.status OR o.organization_id IS DISTINCT FROM n.organization_id;
    ELSE
        SELECT array_agg(o.id) INTO v_sources
          FROM old_rows o WHERE EXISTS (SELECT 1 FROM agent.knowledge_searchable sp WHERE sp.source_id = o.id);
    END IF;
    PERFORM agent.knowledge_lexical_sync(v_sources);
    RETURN NULL;
END
$$;

CREATE TRIGGER knowledge_lexical_source_update AFTER UPDATE ON agent.knowledge_sources
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_source();
CREATE TRIGGER knowledge_lexical_source_delete AFTER DELETE ON agent.knowledge_sources
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_source();

-- A chunk written into, removed from or rewritten in a pair that is already searchable (a re-sync that
-- swaps a ready source's chunks in one transaction) joins or leaves the statistics with it. A deleted
-- chunk's postings go whatever its pair's listing says, so the order in which cascades fire never matters.
CREATE FUNCTION agent.knowledge_lexical_on_chunks() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_ids bigint[];
BEGIN
    IF TG_OP = 'DELETE' THEN
        SELECT array_agg(o.id) INTO v_ids FROM old_rows o;
        PERFORM agent.knowledge_lexical_remove_chunks(v_ids);
    ELSE
        SELECT array_agg(n.id) INTO v_ids FROM new_rows n
         WHERE EXISTS (SELECT 1 FROM agent.knowledge_searchable sp
                        WHERE sp.source_id = n.source_id AND sp.embedding_model = n.embedding_model);
        IF v_ids IS NOT NULL THEN
            PERFORM agent.knowledge_lexical_add_chunks(v_ids);
        END IF;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER knowledge_lexical_chunks_insert AFTER INSERT ON agent.knowledge_chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_chunks();
CREATE TRIGGER knowledge_lexical_chunks_delete AFTER DELETE ON agent.knowledge_chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_chunks();

-- A rewritten chunk text (only statements that set the text column fire this; storing vectors does not).
CREATE FUNCTION agent.knowledge_lexical_on_chunk_text() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
BEGIN
    PERFORM agent.knowledge_lexical_remove_chunks(ARRAY[OLD.id]);
    PERFORM agent.knowledge_lexical_add_chunks(ARRAY[NEW.id]);
    RETURN NULL;
END
$$;

CREATE TRIGGER knowledge_lexical_chunk_text AFTER UPDATE OF text ON agent.knowledge_chunks
    FOR EACH ROW WHEN (OLD.text IS DISTINCT FROM NEW.text) EXECUTE FUNCTION agent.knowledge_lexical_on_chunk_text();

-- Count what is searchable today.
SELECT agent.knowledge_lexical_sync(array_agg(id)) FROM agent.knowledge_sources WHERE status = 'ready';
