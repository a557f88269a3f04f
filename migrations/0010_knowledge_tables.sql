-- Knowledge: the embedding models, the sources, their chunks, readiness per (source, model), the live
-- model per organization (knowledge_settings) and the model switchovers.
--
-- A chunk carries no organization: it inherits tenancy from its source. The embedding column is an
-- untyped vector, and every model gets a partial HNSW index on a cast to its own dimension, so two models
-- of different dimensions coexist during a switchover and no index ever holds vectors of two models.

-- Every model a chunk may be pinned to, with its dimension and the name of its partial HNSW index. The
-- index name is derived here, never taken from a caller.
CREATE TABLE agent.embedding_models (
    model_id text PRIMARY KEY
        CHECK (model_id ~ '^[a-z0-9][a-z0-9._-]*/[a-z0-9][a-z0-9._-]*$' AND length(model_id) <= 100),
    dimensions integer NOT NULL CHECK (dimensions BETWEEN 1 AND 2000),
    index_name text NOT NULL UNIQUE GENERATED ALWAYS AS (
        'knowledge_chunks_hnsw_' || left(regexp_replace(model_id, '[^a-z0-9]+', '_', 'g'), 30)
        || '_' || left(md5(model_id), 8)
    ) STORED,
    created_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO agent.embedding_models (model_id, dimensions) VALUES
    ('local/wordllama-l2-supercat-256', 256),
    ('openai/text-embedding-3-small', 1536);

CREATE TABLE agent.knowledge_sources (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid REFERENCES public.organizations (id) ON DELETE CASCADE,  -- NULL = platform
    kind text NOT NULL CHECK (kind IN ('upload', 'uri')),
    title text NOT NULL CHECK (btrim(title) <> '' AND length(title) <= 500),
    uri text CHECK (uri IS NULL OR btrim(uri) <> ''),
    object_key text NOT NULL,
    content_sha256 text NOT NULL CHECK (content_sha256 ~ '^[0-9a-f]{64}$'),
    media_type text,
    filename text,
    byte_size bigint NOT NULL CHECK (byte_size >= 0),
    -- One idempotency boundary for both kinds: a URI-backed source is its URI, an object-backed source its
    -- content. NULLS NOT DISTINCT makes the platform (NULL organization) one scope like any organization.
    identity text NOT NULL GENERATED ALWAYS AS (coalesce(uri, 'sha256:' || content_sha256)) STORED,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'ready', 'failed')),
    failure_reason text,
    attempts integer NOT NULL DEFAULT 1 CHECK (attempts >= 1),
    pending_since timestamptz DEFAULT now(),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT knowledge_sources_identity_key UNIQUE NULLS NOT DISTINCT (organization_id, identity),
    CONSTRAINT knowledge_sources_kind_matches_uri CHECK ((kind = 'uri') = (uri IS NOT NULL)),
    CONSTRAINT knowledge_sources_failed_has_reason CHECK ((status = 'failed') = (failure_reason IS NOT NULL)),
    CONSTRAINT knowledge_sources_pending_has_since CHECK ((status = 'pending') = (pending_since IS NOT NULL))
);
CREATE INDEX knowledge_sources_scope_idx ON agent.knowledge_sources (organization_id, status, created_at DESC);
CREATE INDEX knowledge_sources_pending_idx ON agent.knowledge_sources (pending_since) WHERE status = 'pending';

-- Readiness per (source, model): a switchover can tell when every source is ready under the new model.
CREATE TABLE agent.knowledge_source_models (
    source_id uuid NOT NULL REFERENCES agent.knowledge_sources (id) ON DELETE CASCADE,
    embedding_model text NOT NULL REFERENCES agent.embedding_models (model_id),
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'ready', 'failed')),
    chunk_count integer CHECK (chunk_count >= 0),           -- NULL until the chunk rows are written
    embedded_count integer NOT NULL DEFAULT 0 CHECK (embedded_count >= 0),
    failure_reason text,
    pending_since timestamptz DEFAULT now(),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_id, embedding_model),
    CONSTRAINT knowledge_source_models_failed_has_reason CHECK ((status = 'failed') = (failure_reason IS NOT NULL)),
    CONSTRAINT knowledge_source_models_ready_is_complete CHECK (
        status <> 'ready' OR (chunk_count IS NOT NULL AND embedded_count = chunk_count)
    )
);
CREATE INDEX knowledge_source_models_model_idx ON agent.knowledge_source_models (embedding_model, status);

CREATE TABLE agent.knowledge_chunks (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_id uuid NOT NULL REFERENCES agent.knowledge_sources (id) ON DELETE CASCADE,
    embedding_model text NOT NULL REFERENCES agent.embedding_models (model_id),
    ordinal integer NOT NULL CHECK (ordinal >= 0),
    text text NOT NULL CHECK (btrim(text) <> ''),
    tokens integer NOT NULL CHECK (tokens > 0),
    embedding vector,
    -- 'english' measured better than 'simple' on Cranfield (docs/decisions/knowledge-db.md).
    fts tsvector NOT NULL GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT knowledge_chunks_source_model_ordinal_key UNIQUE (source_id, embedding_model, ordinal)
);
CREATE INDEX knowledge_chunks_fts_idx ON agent.knowledge_chunks USING gin (fts);
CREATE INDEX knowledge_chunks_unembedded_idx ON agent.knowledge_chunks (source_id, embedding_model, ordinal)
    WHERE embedding IS NULL;

-- The live embedding model: one row per organization that chose its own, and exactly one platform row.
CREATE TABLE public.knowledge_settings (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid REFERENCES public.organizations (id) ON DELETE CASCADE,  -- NULL = platform default
    active_embedding_model text NOT NULL REFERENCES agent.embedding_models (model_id),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT knowledge_settings_organization_key UNIQUE NULLS NOT DISTINCT (organization_id)
);
INSERT INTO public.knowledge_settings (organization_id, active_embedding_model)
VALUES (NULL, 'local/wordllama-l2-supercat-256');

-- A switchover in progress: its target model is wanted for every source in its scope until it ends.
CREATE TABLE agent.knowledge_switches (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid REFERENCES public.organizations (id) ON DELETE CASCADE,  -- NULL = platform default
    from_model text NOT NULL REFERENCES agent.embedding_models (model_id),
    to_model text NOT NULL REFERENCES agent.embedding_models (model_id),
    status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'flipped', 'cancelled')),
    started_at timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    CHECK (from_model <> to_model),
    CHECK ((status = 'running') = (finished_at IS NULL))
);
CREATE UNIQUE INDEX knowledge_switches_one_running ON agent.knowledge_switches (organization_id)
    NULLS NOT DISTINCT WHERE status = 'running';

-- The models each source must be embedded under: its scope's live model(s) and the target of every
-- running switch that covers it. A platform source serves every organization, so it is wanted under every
-- live model. Chunks of any other model are garbage once a switch has flipped.
CREATE VIEW agent.knowledge_wanted_models AS
SELECT s.id AS source_id, coalesce(own.active_embedding_model, platform.active_embedding_model) AS embedding_model
  FROM agent.knowledge_sources s
  JOIN public.knowledge_settings platform ON platform.organization_id IS NULL
  LEFT JOIN public.knowledge_settings own ON own.organization_id = s.organization_id
 WHERE s.organization_id IS NOT NULL
UNION
SELECT s.id, w.to_model
  FROM agent.knowledge_sources s
  JOIN agent.knowledge_switches w ON w.status = 'running'
 WHERE s.organization_id IS NOT NULL
   AND (w.organization_id = s.organization_id
        OR (w.organization_id IS NULL AND NOT EXISTS (
                SELECT 1 FROM public.knowledge_settings own WHERE own.organization_id = s.organization_id)))
UNION
SELECT s.id, k.active_embedding_model
  FROM agent.knowledge_sources s CROSS JOIN public.knowledge_settings k
 WHERE s.organization_id IS NULL
UNION
SELECT s.id, w.to_model
  FROM agent.knowledge_sources s JOIN agent.knowledge_switches w ON w.status = 'running'
 WHERE s.organization_id IS NULL;

-- The sources a switchover of one scope covers: an organization's switch covers its own sources and the
-- platform sources; the platform default's switch covers the platform sources and the sources of every
-- organization without its own knowledge_settings row. A failed source is outside every scope: nothing
-- searches it, and a retry embeds it under the models wanted at that time.
CREATE FUNCTION agent.knowledge_switch_scope(p_organization_id uuid) RETURNS TABLE (source_id uuid)
LANGUAGE sql STABLE
SET search_path = pg_catalog, public
AS $$
    SELECT s.id
      FROM agent.knowledge_sources s
     WHERE s.status <> 'failed'
       AND (s.organization_id IS NULL
            OR (p_organization_id IS NOT NULL AND s.organization_id = p_organization_id)
            OR (p_organization_id IS NULL AND NOT EXISTS (
                    SELECT 1 FROM public.knowledge_settings own WHERE own.organization_id = s.organization_id)))
$$;

-- Create the partial HNSW index of one registered model, from the model table alone: the identifier is
-- quoted with %I, the model id with %L, and the dimension is an integer column. Returns the index name.
CREATE FUNCTION agent.ensure_embedding_model_index(p_model_id text) RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, public
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
    RETURN m.index_name;
END
$$;

SELECT agent.ensure_embedding_model_index('local/wordllama-l2-supercat-256');
