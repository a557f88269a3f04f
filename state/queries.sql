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
