-- What deleting an organization row takes with it: the rows of every table whose foreign key to
-- public.organizations cascades, counted per table before the row is deleted, so an organization erasure's
-- receipt names every table it emptied (state/erasure.py; tests/integration/test_receipt_tables.py). The
-- tables come from the catalog, never from input; the erasure's own marks (agent.erasing_organizations,
-- agent.erasing_people) are bookkeeping the erasure clears, not data, and are left out.

CREATE FUNCTION agent.organization_cascade_counts(p_organization_id uuid) RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fk record;
    n bigint;
    counts jsonb := '{}'::jsonb;
BEGIN
    FOR fk IN
        SELECT format('%I.%I', ns.nspname, cl.relname) AS tbl, att.attname AS col
          FROM pg_constraint con
          JOIN pg_class cl ON cl.oid = con.conrelid
          JOIN pg_namespace ns ON ns.oid = cl.relnamespace
          JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = con.conkey[1]
         WHERE con.contype = 'f' AND con.confrelid = 'public.organizations'::regclass AND con.confdeltype = 'c'
           AND array_length(con.conkey, 1) = 1
           AND (ns.nspname, cl.relname) NOT IN (('agent', 'erasing_organizations'), ('agent', 'erasing_people'))
         ORDER BY 1
    LOOP
        EXECUTE format('SELECT count(*) FROM %s WHERE %I = $1', fk.tbl, fk.col) INTO n USING p_organization_id;
        IF n > 0 THEN
            counts := counts || jsonb_build_object(fk.tbl, n);
        END IF;
    END LOOP;
    RETURN counts;
END
$$;

REVOKE ALL ON FUNCTION agent.organization_cascade_counts(uuid) FROM PUBLIC, authenticated, ac_tenant;
