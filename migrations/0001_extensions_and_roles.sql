-- Extensions, schemas and the roles that row-level security is written for.
--
-- ac_tenant:      the role the service switches to (SET LOCAL ROLE) for tenant reads; RLS applies to it
--                 and app.organization_id names the tenant of the transaction.
-- authenticated:  the user-key role of a Supabase-style deployment; created here when missing so the
--                 policies written for it exist on any PostgreSQL.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE SCHEMA IF NOT EXISTS agent;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ac_tenant') THEN
        CREATE ROLE ac_tenant NOLOGIN NOBYPASSRLS;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'authenticated') THEN
        CREATE ROLE authenticated NOLOGIN NOBYPASSRLS;
    END IF;
    -- The connecting role must be able to SET ROLE ac_tenant (a no-op grant for a superuser).
    EXECUTE format('GRANT ac_tenant TO %I', current_user);
END
$$;

GRANT USAGE ON SCHEMA public, agent TO ac_tenant, authenticated;

-- The tenant of the current transaction, or NULL when none was set (which matches no tenant row).
CREATE OR REPLACE FUNCTION public.current_organization_id() RETURNS uuid
LANGUAGE sql STABLE
AS $$ SELECT nullif(current_setting('app.organization_id', true), '')::uuid $$;
