-- Row-level security on the knowledge tables, for the service's tenant reads (ac_tenant) and user-key
-- callers (authenticated): platform rows (organization_id IS NULL) are visible to every tenant, an
-- organization's rows only to the tenant app.organization_id names. A chunk and a readiness row have no
-- organization of their own: they are visible exactly when their source is. The service role owns the
-- tables and bypasses RLS; its reads filter the organization explicitly. Writes stay with the service.

GRANT SELECT ON agent.embedding_models TO ac_tenant, authenticated;

ALTER TABLE agent.knowledge_sources ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON agent.knowledge_sources TO ac_tenant, authenticated;
CREATE POLICY tenant_read ON agent.knowledge_sources FOR SELECT TO ac_tenant, authenticated
    USING (organization_id IS NULL OR organization_id = public.current_organization_id());

ALTER TABLE agent.knowledge_chunks ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON agent.knowledge_chunks TO ac_tenant, authenticated;
CREATE POLICY tenant_read ON agent.knowledge_chunks FOR SELECT TO ac_tenant, authenticated
    USING (source_id IN (
        SELECT s.id FROM agent.knowledge_sources s
         WHERE s.organization_id IS NULL OR s.organization_id = public.current_organization_id()));

ALTER TABLE agent.knowledge_source_models ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON agent.knowledge_source_models TO ac_tenant, authenticated;
CREATE POLICY tenant_read ON agent.knowledge_source_models FOR SELECT TO ac_tenant, authenticated
    USING (source_id IN (
        SELECT s.id FROM agent.knowledge_sources s
         WHERE s.organization_id IS NULL OR s.organization_id = public.current_organization_id()));

ALTER TABLE public.knowledge_settings ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON public.knowledge_settings TO ac_tenant, authenticated;
CREATE POLICY tenant_read ON public.knowledge_settings FOR SELECT TO ac_tenant, authenticated
    USING (organization_id IS NULL OR organization_id = public.current_organization_id());

-- The grants on 0011's knowledge_search stood here; 0041 dropped that function, and issue 23 removed its
-- text from 0011 and these grants with it (see migrations/edited.toml). The live function's grants are
-- 0071's.
