-- The company dossier behind Settings, the outreach tables, and the agent definitions and runs.

CREATE TABLE public.org_company_profiles (
    organization_id uuid PRIMARY KEY REFERENCES public.organizations (id) ON DELETE CASCADE,
    company_name text NOT NULL,
    website text,
    description text,
    industry text,
    headquarters text,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE public.org_services (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    name text NOT NULL,
    description text,
    position int NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX org_services_org_idx ON public.org_services (organization_id, position, id);

CREATE TABLE public.org_ideal_customer_profiles (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    name text NOT NULL,
    description text,
    criteria text,
    position int NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX org_icps_org_idx ON public.org_ideal_customer_profiles (organization_id, position, id);

CREATE TABLE public.org_offers (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    name text NOT NULL,
    description text,
    price_text text,
    position int NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX org_offers_org_idx ON public.org_offers (organization_id, position, id);

CREATE TABLE public.org_documents (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    title text NOT NULL,
    summary text,
    active boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX org_documents_active_idx ON public.org_documents (organization_id, created_at DESC, id DESC) WHERE active;

CREATE TABLE public.outreach_sequences (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    name text NOT NULL,
    step_count int NOT NULL DEFAULT 1 CHECK (step_count >= 1),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE public.outreach_enrollments (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    sequence_id uuid NOT NULL REFERENCES public.outreach_sequences (id) ON DELETE CASCADE,
    person_id uuid NOT NULL REFERENCES public.crm_people (id) ON DELETE CASCADE,
    state text NOT NULL CHECK (state IN ('active', 'paused', 'replied', 'completed', 'stopped')),
    current_step int NOT NULL DEFAULT 1,
    next_action text,
    next_step_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outreach_enrollments_person_idx ON public.outreach_enrollments (organization_id, person_id, updated_at DESC);

CREATE TABLE public.outreach_messages (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    enrollment_id uuid REFERENCES public.outreach_enrollments (id) ON DELETE SET NULL,
    person_id uuid NOT NULL REFERENCES public.crm_people (id) ON DELETE CASCADE,
    direction text NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    channel text NOT NULL DEFAULT 'email',
    subject text,
    body text NOT NULL,
    sent_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outreach_messages_thread_idx ON public.outreach_messages (organization_id, person_id, sent_at DESC, id DESC);

-- Agent definitions: platform templates have no organization.
CREATE TABLE agent.definitions (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid REFERENCES public.organizations (id) ON DELETE CASCADE,
    definition_kind text NOT NULL CHECK (definition_kind IN ('agent', 'workflow', 'skill')),
    name text NOT NULL,
    status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'published', 'archived')),
    safe_summary text,
    context_policy jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX definitions_visible_idx ON agent.definitions (organization_id, status, definition_kind, name);

CREATE TABLE agent.runs (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    parent_run_id uuid REFERENCES agent.runs (id) ON DELETE SET NULL,
    definition_id uuid REFERENCES agent.definitions (id) ON DELETE SET NULL,
    user_id uuid REFERENCES public.users (id) ON DELETE SET NULL,
    trigger_id uuid,
    status text NOT NULL CHECK (status IN ('queued', 'running', 'waiting', 'succeeded', 'failed', 'cancelled')),
    input jsonb NOT NULL DEFAULT '{}'::jsonb,
    principal jsonb,
    snapshot jsonb,
    span_tree jsonb,
    result jsonb,
    waiting_reason text,
    failure_reason text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX runs_org_recent_idx ON agent.runs (organization_id, created_at DESC, id DESC);
CREATE INDEX runs_org_user_idx ON agent.runs (organization_id, user_id, created_at DESC);
CREATE INDEX runs_org_trigger_idx ON agent.runs (organization_id, trigger_id, created_at DESC);
CREATE INDEX runs_result_refs_idx ON agent.runs USING gin ((result -> 'refs') jsonb_path_ops);
