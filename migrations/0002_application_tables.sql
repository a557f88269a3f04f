-- The application rows this layer reads. The platform owns these tables; this schema is compatible
-- with it so the project runs and tests stand alone. deleted_at exists exactly where the spec says a
-- soft delete exists (CRM companies, people, deals, lists) and nowhere else.

CREATE TABLE public.organizations (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE public.users (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    email text NOT NULL,
    display_name text,
    job_title text,
    timezone text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX users_organization_idx ON public.users (organization_id, id);

CREATE TABLE public.crm_companies (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    name text NOT NULL,
    domain text,
    website text,
    description text,
    industry text,
    country text,
    linkedin_url text,
    employee_count_band text,
    lifecycle_stage text,
    owner_user_id uuid REFERENCES public.users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz
);
CREATE INDEX crm_companies_org_idx ON public.crm_companies (organization_id, id) WHERE deleted_at IS NULL;

CREATE TABLE public.crm_people (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    company_id uuid REFERENCES public.crm_companies (id) ON DELETE SET NULL,
    full_name text NOT NULL,
    email text,
    phone text,
    current_title text,
    linkedin_url text,
    country text,
    owner_user_id uuid REFERENCES public.users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz
);
CREATE INDEX crm_people_org_idx ON public.crm_people (organization_id, id) WHERE deleted_at IS NULL;

CREATE TABLE public.crm_deals (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    name text NOT NULL,
    stage text,
    status text,
    amount numeric(14, 2),
    currency text,
    expected_close_date date,
    owner_user_id uuid REFERENCES public.users (id) ON DELETE SET NULL,
    company_id uuid REFERENCES public.crm_companies (id) ON DELETE SET NULL,
    primary_person_id uuid REFERENCES public.crm_people (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz
);
CREATE INDEX crm_deals_org_idx ON public.crm_deals (organization_id, id) WHERE deleted_at IS NULL;

-- No soft-delete column: the spec says crm_activities has none.
CREATE TABLE public.crm_activities (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    activity_type text NOT NULL,
    subject text,
    status text,
    occurred_at timestamptz,
    due_at timestamptz,
    owner_user_id uuid REFERENCES public.users (id) ON DELETE SET NULL,
    company_id uuid REFERENCES public.crm_companies (id) ON DELETE SET NULL,
    person_id uuid REFERENCES public.crm_people (id) ON DELETE SET NULL,
    deal_id uuid REFERENCES public.crm_deals (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX crm_activities_org_idx ON public.crm_activities (organization_id, id);

CREATE TABLE public.crm_lists (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    name text NOT NULL,
    description text,
    entity_kind text NOT NULL DEFAULT 'crm.company',
    owner_user_id uuid REFERENCES public.users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz
);
CREATE INDEX crm_lists_org_idx ON public.crm_lists (organization_id, id) WHERE deleted_at IS NULL;

CREATE TABLE public.crm_list_members (
    list_id uuid NOT NULL REFERENCES public.crm_lists (id) ON DELETE CASCADE,
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    entity_id uuid NOT NULL,
    added_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (list_id, entity_id)
);
CREATE INDEX crm_list_members_org_idx ON public.crm_list_members (organization_id, list_id);

-- The global Intelligence plane: no organization_id, no deleted_at. Reached only through a bridge row.
CREATE TABLE public.intel_companies (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name text NOT NULL,
    domain text NOT NULL UNIQUE,
    website text,
    description text,
    industry text,
    country text,
    linkedin_url text,
    employee_count_band text,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE public.intel_people (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    full_name text NOT NULL,
    current_title text,
    current_company_text text,
    email text,
    linkedin_url text,
    country text,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- No soft-delete column. Bridge foreign keys cascade, so a deleted shared row deletes its bridges.
CREATE TABLE public.prospects (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    prospect_kind text NOT NULL CHECK (prospect_kind IN ('company', 'person')),
    intel_company_id uuid REFERENCES public.intel_companies (id) ON DELETE CASCADE,
    intel_person_id uuid REFERENCES public.intel_people (id) ON DELETE CASCADE,
    review_state text NOT NULL DEFAULT 'new',
    opportunity_score numeric(5, 2),
    opportunity_reason text,
    recommended_action text,
    people_state text,
    people_state_reason text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX prospects_org_idx ON public.prospects (organization_id, id);
CREATE INDEX prospects_org_intel_company_idx ON public.prospects (organization_id, intel_company_id);

CREATE TABLE public.prospect_people (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    prospect_id uuid NOT NULL REFERENCES public.prospects (id) ON DELETE CASCADE,
    intel_person_id uuid REFERENCES public.intel_people (id) ON DELETE CASCADE,
    full_name text NOT NULL,
    current_title text,
    email text,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT uq_prospect_people_prospect_person UNIQUE (prospect_id, intel_person_id)
);
CREATE UNIQUE INDEX uq_prospect_people_prospect_named_person
    ON public.prospect_people (prospect_id, lower(regexp_replace(btrim(full_name), '\s+', ' ', 'g')))
    WHERE intel_person_id IS NULL;
CREATE INDEX prospect_people_org_intel_person_idx ON public.prospect_people (organization_id, intel_person_id);

CREATE TABLE public.conversations (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    user_id uuid REFERENCES public.users (id) ON DELETE SET NULL,
    title text,
    summary text,
    summary_updated_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversations_org_idx ON public.conversations (organization_id, id);

CREATE TABLE public.conversation_messages (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id uuid NOT NULL REFERENCES public.organizations (id) ON DELETE CASCADE,
    conversation_id uuid NOT NULL REFERENCES public.conversations (id) ON DELETE CASCADE,
    role text NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversation_messages_recent_idx
    ON public.conversation_messages (organization_id, conversation_id, created_at DESC, id DESC);
