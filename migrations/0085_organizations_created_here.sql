-- The organizations this deployment created itself (`ac-context org create`, POST /v1/organizations), so an
-- organization erasure knows whether the organization row is the layer's to delete (docs/decisions.md,
-- issue 22). On the platform, public.organizations belongs to the application and an erasure leaves the
-- row; the layer deletes only what it holds. Organizations created before this migration are not listed:
-- nothing records who made them, and leaving a row is the safe side (the operator deletes it by hand).

CREATE TABLE agent.created_organizations (
    organization_id uuid PRIMARY KEY REFERENCES public.organizations (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE agent.created_organizations ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON agent.created_organizations FROM PUBLIC, authenticated, ac_tenant;
