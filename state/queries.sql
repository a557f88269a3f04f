-- The runtime statements of the state package. Each block: `-- name: <query_name>`, what it does and its
-- parameters, then the statement.

-- name: create_organization
-- Create an organization (for a standalone deployment; the platform owns this table). $1 name.
INSERT INTO public.organizations (name) VALUES ($1)
RETURNING id, name, created_at;

-- name: list_organizations
-- The organizations, oldest first. $1 the most rows to answer.
SELECT id, name, created_at
  FROM public.organizations
 ORDER BY created_at, id
 LIMIT $1;

-- name: organization_exists
-- Whether an organization has this id. $1 organization id.
SELECT EXISTS (SELECT 1 FROM public.organizations WHERE id = $1);

-- name: get_organization
-- One organization by id, or no row. $1 organization id.
SELECT id, name, created_at
  FROM public.organizations
 WHERE id = $1;

-- name: lock_organization_create
-- Serialize the rate-limited creations of organizations until the transaction ends (run before the count,
-- in its own statement, so the count's snapshot sees every creation that held the lock before). No params.
SELECT pg_advisory_xact_lock(hashtextextended('ac_context.organization_create', 0));

-- name: create_organization_within_rate
-- Create an organization unless $2 or more were created in the last minute. $1 name, $2 the most per
-- minute. Answers the row (id NULL when refused) and the seconds until the oldest creation of the window
-- leaves it.
WITH recent AS (
    SELECT count(*) AS n, min(created_at) AS oldest
      FROM public.organizations
     WHERE created_at > clock_timestamp() - interval '60 seconds'
), created AS (
    INSERT INTO public.organizations (name)
    SELECT $1 FROM recent WHERE recent.n < $2
    RETURNING id, name, created_at
)
SELECT c.id, c.name, c.created_at,
       greatest(1, ceil(extract(epoch FROM (r.oldest + interval '60 seconds' - clock_timestamp()))))::int AS retry_after_s
  FROM recent r LEFT JOIN created c ON true;

-- name: insert_api_key
-- Store a new API key (its secret only as a SHA-256). $1 id, $2 scope, $3 organization_id (NULL for an
-- operator key), $4 name, $5 secret_sha256.
INSERT INTO agent.api_keys (id, scope, organization_id, name, secret_sha256)
VALUES ($1, $2, $3, $4, $5)
RETURNING id, scope, organization_id, name, created_at, revoked_at;

-- name: find_api_key
-- The key with this id, with its secret hash, for one request's authentication (primary key lookup).
-- $1 id.
SELECT id, scope, organization_id, secret_sha256, revoked_at
  FROM agent.api_keys
 WHERE id = $1;

-- name: list_api_keys
-- The keys, oldest first, never their secret hashes. $1 organization_id (NULL lists every key),
-- $2 whether revoked keys are listed too, $3 the most rows.
SELECT id, scope, organization_id, name, created_at, revoked_at
  FROM agent.api_keys
 WHERE ($1::uuid IS NULL OR organization_id = $1)
   AND ($2 OR revoked_at IS NULL)
 ORDER BY created_at, id
 LIMIT $3;

-- name: revoke_api_key
-- Revoke a key (a second revocation keeps the first time). $1 id. No row when no key has this id.
UPDATE agent.api_keys
   SET revoked_at = coalesce(revoked_at, now())
 WHERE id = $1
RETURNING id, scope, organization_id, name, created_at, revoked_at;
