-- Row-level security on every organization-scoped table: the second tenancy check behind the explicit
-- filters. Policies apply to ac_tenant (the service's tenant reads) and authenticated (user-key callers);
-- app.organization_id names the tenant of the transaction. The owner and superusers bypass RLS, so the
-- service's own writes are unaffected.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY[
        'public.users', 'public.crm_companies', 'public.crm_people', 'public.crm_deals',
        'public.crm_activities', 'public.crm_lists', 'public.crm_list_members', 'public.prospects',
        'public.prospect_people', 'public.conversations', 'public.conversation_messages',
        'public.org_company_profiles', 'public.org_services', 'public.org_ideal_customer_profiles',
        'public.org_offers', 'public.org_documents', 'public.outreach_sequences',
        'public.outreach_enrollments', 'public.outreach_messages', 'agent.runs'
    ] LOOP
        EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('GRANT SELECT ON %s TO ac_tenant, authenticated', t);
        EXECUTE format(
            'CREATE POLICY tenant_read ON %s FOR SELECT TO ac_tenant, authenticated '
            'USING (organization_id = public.current_organization_id())', t);
    END LOOP;
END
$$;

ALTER TABLE public.organizations ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON public.organizations TO ac_tenant, authenticated;
CREATE POLICY tenant_read ON public.organizations FOR SELECT TO ac_tenant, authenticated
    USING (id = public.current_organization_id());

-- Definitions: the organization's own and the platform templates (organization_id IS NULL).
ALTER TABLE agent.definitions ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON agent.definitions TO ac_tenant, authenticated;
CREATE POLICY tenant_read ON agent.definitions FOR SELECT TO ac_tenant, authenticated
    USING (organization_id IS NULL OR organization_id = public.current_organization_id());

-- The global Intelligence plane is readable, but the scoped client reaches it only as an embed of a
-- tenant's bridge row; it never names these tables directly.
GRANT SELECT ON public.intel_companies, public.intel_people TO ac_tenant, authenticated;
