-- API keys of /v1/: each is operator-scoped or bound to one organization (docs/operations.md, API keys).
--
-- A key is `ack_<id>_<secret>`: `id` is public (16 hex characters, the primary key, so a request costs one
-- index lookup) and `secret` is 32 random bytes; only the SHA-256 of the secret is stored, compared in
-- constant time by the service. A fast hash is enough for a 256-bit random secret: there is nothing to
-- guess, so a slow password hash would only add latency to every request (docs/decisions.md, issue 21).
-- Revocation sets revoked_at; a revoked key is refused on its next request. An organization key dies with
-- its organization (ON DELETE CASCADE).
--
-- The table is closed to the tenant and user-key roles: the service role alone reads and writes it. RLS
-- with no policy is the second lock should a grant ever appear (as agent.memories, migration 0020).

CREATE TABLE agent.api_keys (
    id text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
    scope text NOT NULL CHECK (scope IN ('operator', 'organization')),
    organization_id uuid REFERENCES public.organizations (id) ON DELETE CASCADE,
    name text NOT NULL DEFAULT '' CHECK (length(name) <= 200),
    secret_sha256 bytea NOT NULL CHECK (length(secret_sha256) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz,
    CONSTRAINT api_keys_scope_matches_organization CHECK ((scope = 'organization') = (organization_id IS NOT NULL))
);

CREATE INDEX api_keys_organization ON agent.api_keys (organization_id) WHERE organization_id IS NOT NULL;

ALTER TABLE agent.api_keys ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON agent.api_keys FROM PUBLIC, authenticated, ac_tenant;

-- The rate limit of organization creation over HTTP counts the organizations created in the last minute.
CREATE INDEX IF NOT EXISTS organizations_created_at ON public.organizations (created_at);
