-- Cross-process invalidation of the Company dossier cache: any write to the organization part of the
-- dossier (company profile, services, ideal customer profiles, offers, documents) sends the organization
-- id on the channel ac_dossier_changed. Every worker process LISTENs on a dedicated connection and evicts
-- that organization's cached dossier, not only the process that wrote. NOTIFY is delivered at commit, and
-- identical payloads of one transaction are folded into one.

CREATE FUNCTION public.notify_dossier_changed() RETURNS trigger
    LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM pg_notify('ac_dossier_changed', NEW.organization_id::text);
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.organization_id IS DISTINCT FROM NEW.organization_id) THEN
        PERFORM pg_notify('ac_dossier_changed', OLD.organization_id::text);
    END IF;
    RETURN NULL;
END;
$$;

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY[
        'org_company_profiles', 'org_services', 'org_ideal_customer_profiles', 'org_offers', 'org_documents'
    ] LOOP
        EXECUTE format(
            'CREATE TRIGGER dossier_changed AFTER INSERT OR UPDATE OR DELETE ON public.%I '
            'FOR EACH ROW EXECUTE FUNCTION public.notify_dossier_changed()', t);
    END LOOP;
END
$$;
