-- The runtime statements of the state package. Each block: `-- name: <query_name>`, what it does and its
-- parameters, then the statement.

-- name: create_organization
-- Create an organization (for a standalone deployment; the platform owns this table), marked as created
-- here so an erasure may delete its row. $1 name.
WITH created AS (
    INSERT INTO public.organizations (name) VALUES ($1)
    RETURNING id, name, created_at
), marked AS (
    INSERT INTO agent.created_organizations (organization_id) SELECT id FROM created
)
SELECT id, name, created_at FROM created;

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
-- minute; marks it as created here. Answers the row (id NULL when refused) and the seconds until the oldest creation of the window
-- leaves it.
WITH recent AS (
    SELECT count(*) AS n, min(created_at) AS oldest
      FROM public.organizations
     WHERE created_at > clock_timestamp() - interval '60 seconds'
), created AS (
    INSERT INTO public.organizations (name)
    SELECT $1 FROM recent WHERE recent.n < $2
    RETURNING id, name, created_at
), marked AS (
    INSERT INTO agent.created_organizations (organization_id) SELECT id FROM created
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

-- name: get_api_key
-- One key as it is listed, never its secret hash (the console's key page). $1 id. No row for an unknown id.
SELECT id, scope, organization_id, name, created_at, revoked_at
  FROM agent.api_keys
 WHERE id = $1;

-- name: count_api_keys
-- How many keys `page_api_keys` pages over. $1 organization_id (NULL counts every key),
-- $2 whether revoked keys count too.
SELECT count(*)
  FROM agent.api_keys
 WHERE ($1::uuid IS NULL OR organization_id = $1)
   AND ($2 OR revoked_at IS NULL);

-- name: revoke_api_key
-- Revoke a key (a second revocation keeps the first time). $1 id. No row when no key has this id.
UPDATE agent.api_keys
   SET revoked_at = coalesce(revoked_at, now())
 WHERE id = $1
RETURNING id, scope, organization_id, name, created_at, revoked_at;

-- Console sessions (`state/console_sessions.py`, migration 0106): one row per sign-in, keyed by the SHA-256
-- of the random session id its cookie carries.

-- name: open_console_session
-- Record a new console session and delete the sessions whose expiry has passed (the cleanup rides on
-- sign-in). $1 id_sha256, $2 key_id (NULL for the operator token), $3 lifetime in seconds.
WITH expired AS (
    DELETE FROM agent.console_sessions WHERE expires_at <= now()
)
INSERT INTO agent.console_sessions (id_sha256, key_id, expires_at)
VALUES ($1, $2, now() + make_interval(secs => $3));

-- name: find_console_session
-- A live session (not revoked, not expired) with the key it acts as: key_id NULL for the operator token.
-- $1 id_sha256. No row when the session is unknown, signed out or expired, or its key no longer exists.
SELECT s.key_id, k.scope, k.organization_id, k.revoked_at IS NOT NULL AS key_revoked
  FROM agent.console_sessions s
  LEFT JOIN agent.api_keys k ON k.id = s.key_id
 WHERE s.id_sha256 = $1
   AND s.revoked_at IS NULL
   AND s.expires_at > now()
   AND (s.key_id IS NULL) = (k.id IS NULL);

-- name: revoke_console_session
-- Sign a session out (a second sign-out keeps the first time). $1 id_sha256.
UPDATE agent.console_sessions
   SET revoked_at = coalesce(revoked_at, now())
 WHERE id_sha256 = $1;

-- The demo tenant (`state/demo_tenant.py`): the rows `ac-context demo` writes under fixed ids, each
-- idempotent (ON CONFLICT DO NOTHING unless the block says otherwise).

-- name: demo_insert_organization
-- The demo organization. $1 id.
INSERT INTO organizations (id, name) VALUES ($1, 'Acme Demo') ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_user
-- The demo user. $1 id, $2 organization id.
INSERT INTO users (id, organization_id, email, display_name, job_title)
VALUES ($1, $2, 'demo@acme.example', 'Dana Demo', 'Account Executive')
ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_company
-- One demo CRM company. $1 id, $2 organization id, $3 name, $4 domain, $5 description, $6 lifecycle stage.
INSERT INTO crm_companies (id, organization_id, name, domain, description, lifecycle_stage)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_person
-- One demo CRM person. $1 id, $2 organization id, $3 company id, $4 full name, $5 current title.
INSERT INTO crm_people (id, organization_id, company_id, full_name, current_title)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_deal
-- The demo deal. $1 id, $2 organization id, $3 company id.
INSERT INTO crm_deals (id, organization_id, name, stage, status, amount, currency, company_id)
VALUES ($1, $2, 'Contoso pilot', 'proposal', 'open', 48000, 'EUR', $3)
ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_definition
-- The demo agent's published definition. $1 id, $2 organization id.
INSERT INTO agent.definitions (id, organization_id, definition_kind, name, status, safe_summary)
VALUES ($1, $2, 'agent', 'Account researcher', 'published',
        'Researches an account and drafts a short brief for the account executive.')
ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_conversation
-- The demo conversation. $1 id, $2 organization id, $3 user id.
INSERT INTO conversations (id, organization_id, user_id, title, summary)
VALUES ($1, $2, $3, 'Contoso follow-up', 'Dana is preparing the Contoso pilot proposal.')
ON CONFLICT (id) DO NOTHING;

-- name: demo_count_conversation_messages
-- How many messages a conversation holds. $1 conversation id.
SELECT count(*) FROM conversation_messages WHERE conversation_id = $1;

-- name: demo_insert_first_message
-- The person's question that opens the demo conversation (written only while it holds none).
-- $1 organization id, $2 conversation id.
INSERT INTO conversation_messages (organization_id, conversation_id, role, content, created_at)
VALUES ($1, $2, 'user', 'What stage is the Contoso deal in, and who is our contact?', now());

-- name: demo_count_crm_rows
-- The CRM rows of an organization, by table. $1 organization id.
SELECT (SELECT count(*) FROM crm_companies WHERE organization_id = $1) AS companies,
       (SELECT count(*) FROM crm_people WHERE organization_id = $1) AS people,
       (SELECT count(*) FROM crm_deals WHERE organization_id = $1) AS deals;

-- name: demo_insert_intel_company
-- The shared Intelligence company the demo prospect points at (global plane: no organization). $1 id.
INSERT INTO intel_companies (id, name, domain, industry, country)
VALUES ($1, 'Contoso Robotics GmbH', 'contoso-robotics.example', 'Robotics', 'DE')
ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_company_profile
-- The demo organization's company profile (dossier). $1 organization id.
INSERT INTO org_company_profiles (organization_id, company_name, website, industry, headquarters)
VALUES ($1, 'Acme Demo', 'https://acme.example', 'B2B software', 'Berlin')
ON CONFLICT (organization_id) DO NOTHING;

-- name: demo_insert_service
-- A dossier service. $1 organization id, $2 id.
INSERT INTO org_services (id, organization_id, name, description)
VALUES ($2, $1, 'Warehouse analytics', 'Dashboards for pick rates')
ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_ideal_customer_profile
-- A dossier ideal customer profile. $1 organization id, $2 id.
INSERT INTO org_ideal_customer_profiles (id, organization_id, name, criteria)
VALUES ($2, $1, 'Mid-market logistics', '200-2000 staff, own warehouses')
ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_offer
-- A dossier offer. $1 organization id, $2 id.
INSERT INTO org_offers (id, organization_id, name, price_text)
VALUES ($2, $1, 'Pilot', 'EUR 48k for 3 months')
ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_document
-- A dossier document. $1 organization id, $2 id.
INSERT INTO org_documents (id, organization_id, title, summary)
VALUES ($2, $1, 'Pilot playbook', 'How a three-month pilot runs')
ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_prospect
-- A prospect of the Intelligence company. $1 organization id, $2 id, $3 intel company id.
INSERT INTO prospects (id, organization_id, prospect_kind, intel_company_id, review_state, opportunity_score,
                       recommended_action)
VALUES ($2, $1, 'company', $3, 'qualified', 82, 'book a demo')
ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_sequence
-- An outreach sequence. $1 organization id, $2 id.
INSERT INTO outreach_sequences (id, organization_id, name, step_count)
VALUES ($2, $1, 'Pilot opener', 4)
ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_enrollment
-- A person's enrollment in the sequence. $1 organization id, $2 id, $3 sequence id, $4 person id.
INSERT INTO outreach_enrollments (id, organization_id, sequence_id, person_id, state, current_step, next_action)
VALUES ($2, $1, $3, $4, 'replied', 2, 'answer the pricing question')
ON CONFLICT (id) DO NOTHING;

-- name: demo_insert_outreach_message
-- One message of the outreach thread. $1 id, $2 organization id, $3 enrollment id, $4 person id,
-- $5 direction, $6 body, $7 sent_at.
INSERT INTO outreach_messages (id, organization_id, enrollment_id, person_id, direction, body, sent_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO NOTHING;

-- name: demo_upsert_run
-- An earlier run of the demo agent; a rerun refreshes its created_at so it stays inside the lookback.
-- $1 id, $2 organization id, $3 user id, $4 definition id, $5 status, $6 result, $7 waiting reason,
-- $8 created_at.
INSERT INTO agent.runs (id, organization_id, user_id, definition_id, status, result, waiting_reason, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (id) DO UPDATE SET created_at = EXCLUDED.created_at;

-- name: demo_start_memory_run
-- A new running run of the demo agent for the memory chapter; answers its id. $1 organization id,
-- $2 definition id, $3 user id.
INSERT INTO agent.runs (organization_id, definition_id, user_id, status, input)
VALUES ($1, $2, $3, 'running', '{"demo": "memory"}'::jsonb)
RETURNING id;

-- name: demo_finish_run
-- Mark a demo run succeeded. $1 run id.
UPDATE agent.runs SET status = 'succeeded', updated_at = now() WHERE id = $1;

-- name: demo_memory_chain
-- Every revision of one memory chain of the demo agent, unordered, with whether it is the live head.
-- $1 organization id, $2 definition id, $3 subject key.
SELECT m.id, m.supersedes_id, m.text, m.forgotten_at, h.id IS NOT NULL AS is_head
  FROM agent.memories m
  LEFT JOIN agent.memory_heads h ON h.id = m.id
 WHERE m.organization_id = $1 AND m.definition_id = $2 AND m.subject_key = $3;

-- name: begin_removal_receipt
-- Open a running receipt for a removal, or find the running one of the same request (a rerun after a crash,
-- which counts one more resume). $1 kind, $2 organization id or NULL, $3 target id, $4 subject ('' for none),
-- $5 requested by.
WITH opened AS (
    INSERT INTO agent.removal_receipts (kind, organization_id, target_id, subject, requested_by)
    VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (kind, organization_id, target_id, subject) WHERE status = 'running'
    DO UPDATE SET resumed = agent.removal_receipts.resumed + 1
    RETURNING *
)
SELECT id, kind, organization_id, target_id, subject, requested_by, status, counts, object_keys, versions, resumed,
       physical,
       started_at, finished_at
  FROM opened;

-- name: add_to_removal_receipt
-- Add one batch's counts (JSON object of integers) and object keys to a running receipt. $1 receipt id,
-- $2 counts, $3 object keys.
SELECT agent.removal_receipt_add($1, $2::jsonb, $3::text[]);

-- name: finish_removal_receipt
-- Mark a running receipt complete (a complete one is left as it is). $1 receipt id.
UPDATE agent.removal_receipts
   SET status = 'complete', finished_at = now()
 WHERE id = $1 AND status = 'running'
RETURNING id;

-- name: get_removal_receipt
-- One receipt by id, or no row. $1 receipt id.
SELECT id, kind, organization_id, target_id, subject, requested_by, status, counts, object_keys, versions, resumed,
       physical,
       started_at, finished_at
  FROM agent.removal_receipts
 WHERE id = $1;

-- name: latest_removal_receipt
-- The newest receipt of one request, running or complete, or no row. $1 kind, $2 organization id or NULL,
-- $3 target id, $4 subject.
SELECT id, kind, organization_id, target_id, subject, requested_by, status, counts, object_keys, versions, resumed,
       physical,
       started_at, finished_at
  FROM agent.removal_receipts
 WHERE kind = $1 AND organization_id IS NOT DISTINCT FROM $2 AND target_id = $3 AND subject = $4
 ORDER BY started_at DESC, id DESC
 LIMIT 1;

-- name: count_removal_receipts
-- How many receipts `page_removal_receipts` pages over. $1 organization id or NULL for all.
SELECT count(*) FROM agent.removal_receipts WHERE $1::uuid IS NULL OR organization_id = $1;

-- name: organization_created_here
-- Whether this deployment created the organization (so its row is the layer's to delete). $1 organization id.
SELECT EXISTS (SELECT 1 FROM agent.created_organizations WHERE organization_id = $1);

-- name: erase_organization_api_keys
-- Delete every API key of one organization; answers how many. $1 organization id.
WITH gone AS (DELETE FROM agent.api_keys WHERE organization_id = $1 RETURNING 1)
SELECT count(*) FROM gone;

-- name: evict_organization_dossier
-- Tell every worker process to evict the organization's cached dossier (the channel of migration 0030).
-- $1 organization id.
SELECT pg_notify('ac_dossier_changed', ($1::uuid)::text);

-- name: organization_cascade_counts
-- The rows deleting the organization row would take with it, per table that has any (migrations/0099), as
-- jsonb {"schema.table": n}. Run before `delete_organization_row`, in its transaction. $1 organization id.
SELECT agent.organization_cascade_counts($1);

-- name: delete_organization_row
-- Delete the organization row (only for one this deployment created; the caller checks); answers how
-- many. $1 organization id.
WITH gone AS (DELETE FROM public.organizations WHERE id = $1 RETURNING 1)
SELECT count(*) FROM gone;

-- name: discard_empty_receipt
-- Delete a running receipt that removed nothing (a repeated request that found nothing new answers the
-- earlier receipt instead); answers whether it was discarded. $1 receipt id.
WITH gone AS (
    DELETE FROM agent.removal_receipts
     WHERE id = $1 AND status = 'running' AND counts = '{}'::jsonb AND object_keys = '{}'
    RETURNING 1
)
SELECT count(*) > 0 FROM gone;

-- name: outbox_enqueue
-- Write one event to the outbox (migration 0089); a waiting row with the same dedupe key is kept instead.
-- $1 name, $2 data (jsonb), $3 organization id (NULL: the platform), $4 dedupe key (NULL: none).
-- Returns the id of the row that carries the event.
WITH inserted AS (
    INSERT INTO agent.event_outbox (name, data, organization_id, dedupe_key)
    VALUES ($1, $2::jsonb, $3, $4)
    ON CONFLICT (dedupe_key) WHERE sent_at IS NULL AND dedupe_key IS NOT NULL DO NOTHING
    RETURNING id
)
SELECT id FROM inserted
UNION ALL
SELECT id FROM agent.event_outbox
 WHERE dedupe_key = $4 AND sent_at IS NULL AND NOT EXISTS (SELECT 1 FROM inserted);

-- name: outbox_claim
-- Claim up to $1 waiting rows that are due, oldest first, for $2 seconds (their lease) for holder $5; only
-- the rows in $3 when it is not NULL, else only rows older than $4 seconds (the request that wrote a row
-- sends it first). Rows another worker holds are skipped. A row whose last holder never marked it (a killed
-- process, migration 0096) counts that as a failed attempt, with why. Returns the claimed rows.
UPDATE agent.event_outbox o
   SET next_attempt_at = now() + make_interval(secs => $2),
       attempts = o.attempts + CASE WHEN o.claimed_by IS NULL THEN 0 ELSE 1 END,
       last_error = CASE WHEN o.claimed_by IS NULL THEN o.last_error
                         ELSE 'interrupted: its holder ' || o.claimed_by || ' stopped before it finished' END,
       claimed_by = $5, heartbeat_at = now()
  FROM (SELECT id FROM agent.event_outbox
         WHERE sent_at IS NULL AND next_attempt_at <= now()
           AND CASE WHEN $3::uuid[] IS NULL THEN created_at <= now() - make_interval(secs => $4)
                    ELSE id = ANY ($3) END
         ORDER BY next_attempt_at, created_at, id
         LIMIT $1
           FOR UPDATE SKIP LOCKED) AS due
 WHERE o.id = due.id
RETURNING o.id, o.name, o.data, o.organization_id, o.attempts, o.created_at, o.last_error;

-- name: outbox_renew
-- Renew the lease of row $1 held by $2 for $3 seconds from now, and record the heartbeat. Returns whether
-- the row is still waiting and still that holder's (false: it was sent, erased or taken over).
UPDATE agent.event_outbox
   SET next_attempt_at = now() + make_interval(secs => $3), heartbeat_at = now()
 WHERE id = $1 AND claimed_by = $2 AND sent_at IS NULL
RETURNING true;

-- name: outbox_held
-- The waiting rows whose lease has not ended and whose holder starts with $1 (this machine's `host:`):
-- their id and holder, for a starting process to take over those of a dead holder.
SELECT id, claimed_by
  FROM agent.event_outbox
 WHERE sent_at IS NULL AND next_attempt_at > now() AND starts_with(claimed_by, $1);

-- name: outbox_release
-- End the lease of row $1 now if holder $2 still holds it (it is dead); the next claim counts the
-- interruption as an attempt. Returns whether it did.
UPDATE agent.event_outbox
   SET next_attempt_at = now()
 WHERE id = $1 AND claimed_by = $2 AND sent_at IS NULL
RETURNING true;

-- name: outbox_mark_sent
-- Record that the events of rows $1 left: $2 how (`inngest`, `in-process` or `given-up`), $3 the last error
-- (NULL when delivered). Only waiting rows change.
UPDATE agent.event_outbox
   SET sent_at = now(), delivered_by = $2, last_error = coalesce($3, last_error), claimed_by = NULL
 WHERE id = ANY ($1) AND sent_at IS NULL;

-- name: outbox_mark_failed
-- Record a failed delivery of rows $1: one more attempt, $2 the error, next attempt after $3 seconds.
UPDATE agent.event_outbox
   SET attempts = attempts + 1, last_error = $2, next_attempt_at = now() + make_interval(secs => $3),
       claimed_by = NULL
 WHERE id = ANY ($1) AND sent_at IS NULL;

-- name: outbox_backlog
-- The waiting rows: how many, the age in seconds of the oldest, the newest error among them; the stuck ones
-- (waiting $1 seconds or more with an error): how many, the oldest one's age, their newest error; and
-- whether any event left (to Inngest or run in-process) in the last $1 seconds.
WITH waiting AS (
    SELECT created_at, next_attempt_at, last_error,
           last_error IS NOT NULL AND created_at <= now() - make_interval(secs => $1) AS stuck
      FROM agent.event_outbox
     WHERE sent_at IS NULL
)
SELECT count(*) AS waiting,
       coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest_s,
       (SELECT last_error FROM waiting WHERE last_error IS NOT NULL
         ORDER BY next_attempt_at DESC LIMIT 1) AS last_error,
       count(*) FILTER (WHERE stuck) AS stuck,
       coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE stuck)), 0)::float8 AS oldest_stuck_s,
       (SELECT last_error FROM waiting WHERE stuck ORDER BY next_attempt_at DESC LIMIT 1) AS stuck_error,
       EXISTS (SELECT 1 FROM agent.event_outbox
                WHERE sent_at > now() - make_interval(secs => $1)
                  AND delivered_by IN ('inngest', 'in-process')) AS delivered_recently
  FROM waiting;

-- name: outbox_rows
-- The outbox rows of ids $1, as they stand (what a caller shows after an inline delivery).
SELECT id, name, data, organization_id, attempts, created_at, last_error, sent_at, delivered_by,
       claimed_by, heartbeat_at, next_attempt_at
  FROM agent.event_outbox
 WHERE id = ANY ($1)
 ORDER BY created_at, id;

-- name: outbox_prune_sent
-- Delete the rows sent more than $1 seconds ago (their events left long since). Returns how many.
WITH gone AS (
    DELETE FROM agent.event_outbox WHERE sent_at < now() - make_interval(secs => $1) RETURNING 1
)
SELECT count(*) FROM gone;

-- name: erase_organization_outbox
-- Delete every outbox row about organization $1 (part of its erasure). Returns how many.
WITH gone AS (
    DELETE FROM agent.event_outbox WHERE organization_id = $1 RETURNING 1
)
SELECT count(*) FROM gone;

-- name: guard_organization_write
-- Hold the organization's write lock (shared) until the transaction ends, and refuse a write for an
-- organization or a person being erased (migration 0112; the marks are 0095's). $1 organization id, $2 user id or NULL,
-- $3 subjects ('<kind>:<id>') the write names.
SELECT agent.guard_organization_write($1, $2, $3::text[]);

-- name: mark_organization_erasing
-- Wait for the organization's writes in flight and mark it erasing (migration 0095); whether it is marked.
-- $1 organization id, $2 receipt id.
SELECT agent.mark_organization_erasing($1, $2);

-- name: mark_person_erasing
-- Wait for the organization's writes in flight and mark a person erasing. $1 organization id, $2 user id,
-- $3 subject ('' for none), $4 receipt id.
SELECT agent.mark_person_erasing($1, $2, $3, $4);

-- name: clear_organization_mark
-- End an organization's erasure mark (its receipt completes in this transaction). $1 organization id.
DELETE FROM agent.erasing_organizations WHERE organization_id = $1;

-- name: clear_person_mark
-- End a person's erasure mark (its receipt completed). $1 receipt id.
DELETE FROM agent.erasing_people WHERE receipt_id = $1;

-- name: record_receipt_physical
-- Record what a completed erasure did to the disk afterwards, which ends its disk step (migration 0105).
-- $1 receipt id, $2 JSON object.
UPDATE agent.removal_receipts SET physical = $2::jsonb, disk_step = 'done' WHERE id = $1 AND status = 'complete';

-- name: mark_disk_step_pending
-- Record that an erasure's disk step is still to run; in the transaction that completes its receipt (migration
-- 0105). $1 receipt id.
UPDATE agent.removal_receipts SET disk_step = 'pending' WHERE id = $1;

-- name: receipt_disk_step
-- Where a receipt's disk step stands: 'none', 'pending' or 'done' (migration 0105), or no row. $1 receipt id.
SELECT disk_step FROM agent.removal_receipts WHERE id = $1;

-- name: may_maintain_catalog
-- Whether the role may VACUUM pg_statistic and CHECKPOINT (a superuser; pg_checkpoint's members may CHECKPOINT).
SELECT r.rolsuper AS superuser,
       r.rolsuper OR (to_regrole('pg_checkpoint') IS NOT NULL
                      AND pg_has_role(current_user, 'pg_checkpoint', 'MEMBER')) AS checkpoint
  FROM pg_roles AS r
 WHERE r.rolname = current_user;

-- name: erased_table_size
-- A table's name, quoted for a statement, with its size (heap, indexes, TOAST) and whether the role owns it,
-- or no row for a table that does not exist. $1 'schema.table'.
SELECT format('%I.%I', n.nspname, c.relname) AS quoted, pg_total_relation_size(c.oid) AS bytes,
       pg_has_role(current_user, c.relowner, 'MEMBER') AS owned
  FROM pg_class AS c
  JOIN pg_namespace AS n ON n.oid = c.relnamespace
 WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p', 'm');

-- Paged reads (state/paging.py): each page starts after a keyset position and fetches one row more than
-- it shows (the extra row says a next page exists); the first page starts from a sentinel beyond every row.

-- name: count_organizations_named
-- How many organizations `page_organizations` pages through. $1 text the name contains (any case), or NULL.
SELECT count(*)
  FROM public.organizations
 WHERE $1::text IS NULL OR strpos(lower(name), lower($1)) > 0;

-- name: page_organizations
-- A page of organizations, oldest first, each with the counts of the operator's overview: sources by
-- status (kept by triggers in agent.organization_counts, migration 0117), overdue sources (review date before today in UTC, not deleting), chunks search can serve (ready
-- sources under the organization's live model, from the readiness rows' counts, never a scan of chunks),
-- live memories (the counted open chains less the open heads whose expiry has passed), and when a source
-- last became ready. Each count is one grouped read over the page's
-- organizations (never one read per organization). $1 text the name contains (any case) or NULL,
-- $2 the most rows, $3 created_at and $4 id the page starts after. `page_organizations`
-- (state/organization_overview.py) swaps the keyset line and both ORDER BYs for another sort or the previous
-- page (from code, never from request text).
WITH page AS (
    SELECT o.id, o.name, o.created_at
      FROM public.organizations o
     WHERE ($1::text IS NULL OR strpos(lower(o.name), lower($1)) > 0)
       AND (o.created_at, o.id) > ($3::timestamptz, $4::uuid)
     ORDER BY o.created_at, o.id
     LIMIT $2
), live AS (
    SELECT p.id AS organization_id,
           (SELECT ks.active_embedding_model
              FROM public.knowledge_settings ks
             WHERE ks.organization_id = p.id OR ks.organization_id IS NULL
             ORDER BY ks.organization_id NULLS LAST
             LIMIT 1) AS model
      FROM page p
), overdue AS (
    SELECT s.organization_id, count(*)::int AS n
      FROM agent.knowledge_sources s
     WHERE s.organization_id IN (SELECT id FROM page)
       AND s.review_by < (now() AT TIME ZONE 'UTC')::date AND s.status <> 'deleting'
     GROUP BY s.organization_id
), rd AS (
    SELECT s.organization_id,
           sum(r.chunk_count) FILTER (
               WHERE r.status = 'ready' AND s.status = 'ready' AND r.embedding_model = l.model)::bigint AS chunks,
           max(r.updated_at) FILTER (WHERE r.status = 'ready') AS last_ingested_at
      FROM agent.knowledge_sources s
      JOIN live l ON l.organization_id = s.organization_id
      JOIN agent.knowledge_source_models r ON r.source_id = s.id
     GROUP BY s.organization_id
), expired AS (
    SELECT m.organization_id, count(*)::int AS n
      FROM agent.memories m
     WHERE m.expires_at <= now() AND m.forgotten_at IS NULL
       AND m.organization_id IN (SELECT id FROM page)
       AND NOT EXISTS (SELECT 1 FROM agent.memories c WHERE c.supersedes_id = m.id)
     GROUP BY m.organization_id
)
SELECT p.id, p.name, p.created_at,
       jsonb_strip_nulls(jsonb_build_object(
           'pending', nullif(k.sources_pending, 0), 'ready', nullif(k.sources_ready, 0),
           'failed', nullif(k.sources_failed, 0), 'deleting', nullif(k.sources_deleting, 0))) AS sources_by_status,
       coalesce(od.n, 0) AS overdue_sources,
       coalesce(rd.chunks, 0) AS chunks,
       rd.last_ingested_at,
       (coalesce(k.memories_open, 0) - coalesce(ex.n, 0))::int AS memories
  FROM page p
  LEFT JOIN agent.organization_counts k ON k.organization_id = p.id
  LEFT JOIN overdue od ON od.organization_id = p.id
  LEFT JOIN rd ON rd.organization_id = p.id
  LEFT JOIN expired ex ON ex.organization_id = p.id
 ORDER BY p.created_at, p.id;

-- name: organization_counts
-- One organization's counts strip: its sources by status, the chunks search can serve (its ready sources'
-- readiness rows under its live model, never a scan of chunks), its live memories, its removal receipts and
-- its outbox rows not sent yet, in one statement. $1 organization_id.
WITH live AS (
    SELECT (SELECT ks.active_embedding_model
              FROM public.knowledge_settings ks
             WHERE ks.organization_id = $1 OR ks.organization_id IS NULL
             ORDER BY ks.organization_id NULLS LAST
             LIMIT 1) AS model
)
SELECT coalesce((SELECT jsonb_object_agg(g.status, g.n)
                   FROM (SELECT s.status, count(*)::int AS n
                           FROM agent.knowledge_sources s
                          WHERE s.organization_id = $1
                          GROUP BY s.status) g), '{}'::jsonb) AS sources_by_status,
       coalesce((SELECT sum(r.chunk_count)
                   FROM agent.knowledge_sources s
                   JOIN agent.knowledge_source_models r ON r.source_id = s.id
                   JOIN live l ON r.embedding_model = l.model
                  WHERE s.organization_id = $1 AND s.status = 'ready' AND r.status = 'ready'), 0)::bigint AS chunks,
       (SELECT count(*) FROM agent.live_memories m WHERE m.organization_id = $1)::int AS memories,
       (SELECT count(*) FROM agent.removal_receipts rr WHERE rr.organization_id = $1)::int AS receipts,
       (SELECT count(*) FROM agent.event_outbox e WHERE e.organization_id = $1 AND e.sent_at IS NULL)::int
           AS outbox_pending;

-- name: page_api_keys
-- A page of keys, oldest first, never their secret hashes. $1 organization_id (NULL: every key), $2 whether
-- revoked keys are listed too, $3 created_at and $4 id the page starts after, $5 the most rows.
SELECT id, scope, organization_id, name, created_at, revoked_at
  FROM agent.api_keys
 WHERE ($1::uuid IS NULL OR organization_id = $1)
   AND ($2 OR revoked_at IS NULL)
   AND (created_at, id) > ($3::timestamptz, $4::text)
 ORDER BY created_at, id
 LIMIT $5;

-- name: page_removal_receipts
-- A page of receipts, newest first. $1 organization id or NULL for all, $2 the most rows, $3 started_at and
-- $4 id the page starts after. `page_receipts` (state/receipts.py) swaps the keyset line and the ORDER BY
-- for the oldest-first order or the previous page (from code, never from request text).
SELECT id, kind, organization_id, target_id, subject, requested_by, status, counts, object_keys, versions, resumed,
       physical, started_at, finished_at
  FROM agent.removal_receipts
 WHERE ($1::uuid IS NULL OR organization_id = $1)
   AND (started_at, id) < ($3::timestamptz, $4::uuid)
 ORDER BY started_at DESC, id DESC
 LIMIT $2;

-- Users, agent definitions and runs for a deployment without the platform (state.users, state.agents).

-- name: lock_organization_users
-- Serialize user creation in one organization (the per-organization email check). $1 organization id.
SELECT pg_advisory_xact_lock(1970496882, hashtext($1::uuid::text));

-- name: user_email_taken
-- Whether a user of the organization has this email, compared case-insensitively. $1 organization id, $2 email.
SELECT EXISTS (SELECT 1 FROM public.users WHERE organization_id = $1 AND lower(email) = lower($2));

-- name: insert_user
-- Add a user. $1 organization id, $2 email, $3 display name or NULL.
INSERT INTO public.users (organization_id, email, display_name) VALUES ($1, $2, $3)
RETURNING id, organization_id, email, display_name, created_at;

-- name: list_users
-- The organization's users, oldest first, each with its memory revisions and runs. $1 organization id,
-- $2 the most rows.
SELECT u.id, u.organization_id, u.email, u.display_name, u.created_at,
       (SELECT count(*) FROM agent.memories AS m WHERE m.organization_id = u.organization_id AND m.user_id = u.id)
           AS memories,
       (SELECT count(*) FROM agent.runs AS r WHERE r.organization_id = u.organization_id AND r.user_id = u.id) AS runs
  FROM public.users AS u
 WHERE u.organization_id = $1
 ORDER BY u.created_at, u.id
 LIMIT $2;

-- name: count_users
-- How many users the organization has. $1 organization id.
SELECT count(*) FROM public.users WHERE organization_id = $1;

-- name: lock_user
-- Lock one user of the organization against new references (a memory insert waits) until the transaction
-- ends; no row when none. $1 organization id, $2 user id.
SELECT id FROM public.users WHERE organization_id = $1 AND id = $2 FOR UPDATE;

-- name: user_memory_revisions
-- How many memory revisions (tombstones included) a user's memories hold. $1 organization id, $2 user id.
SELECT count(*) FROM agent.memories WHERE organization_id = $1 AND user_id = $2;

-- name: delete_user
-- Remove a user row (its runs keep their history with no user). $1 organization id, $2 user id.
DELETE FROM public.users WHERE organization_id = $1 AND id = $2;

-- name: lock_organization_definitions
-- Serialize agent creation in one organization (the per-organization name check). $1 organization id.
SELECT pg_advisory_xact_lock(1684366951, hashtext($1::uuid::text));

-- name: definition_name_taken
-- Whether an agent definition of the organization has this name, compared case-insensitively.
-- $1 organization id, $2 name.
SELECT EXISTS (SELECT 1 FROM agent.definitions WHERE organization_id = $1 AND lower(name) = lower($2));

-- name: insert_definition
-- Add an agent definition. $1 organization id, $2 name, $3 status.
INSERT INTO agent.definitions (organization_id, definition_kind, name, status) VALUES ($1, 'agent', $2, $3)
RETURNING id, organization_id, definition_kind, name, status, created_at, 0::bigint AS memories, 0::bigint AS runs;

-- name: list_definitions
-- The organization's own definitions, oldest first, each with its memory revisions and runs.
-- $1 organization id, $2 the most rows.
SELECT d.id, d.organization_id, d.definition_kind, d.name, d.status, d.created_at,
       (SELECT count(*) FROM agent.memories AS m WHERE m.organization_id = d.organization_id
           AND m.definition_id = d.id) AS memories,
       (SELECT count(*) FROM agent.runs AS r WHERE r.organization_id = d.organization_id
           AND r.definition_id = d.id) AS runs
  FROM agent.definitions AS d
 WHERE d.organization_id = $1
 ORDER BY d.created_at, d.id
 LIMIT $2;

-- name: count_definitions
-- How many definitions the organization owns. $1 organization id.
SELECT count(*) FROM agent.definitions WHERE organization_id = $1;

-- name: get_definition
-- One definition the organization may use (its own, or a platform template), with its counts in that
-- organization. $1 organization id, $2 definition id.
SELECT d.id, d.organization_id, d.definition_kind, d.name, d.status, d.created_at,
       (SELECT count(*) FROM agent.memories AS m WHERE m.organization_id = $1 AND m.definition_id = d.id)
           AS memories,
       (SELECT count(*) FROM agent.runs AS r WHERE r.organization_id = $1 AND r.definition_id = d.id) AS runs
  FROM agent.definitions AS d
 WHERE d.id = $2 AND (d.organization_id = $1 OR d.organization_id IS NULL);

-- name: lock_definition
-- Lock one of the organization's own definitions against new references (memory and run inserts wait)
-- until the transaction ends; no row when none. $1 organization id, $2 definition id.
SELECT id FROM agent.definitions WHERE organization_id = $1 AND id = $2 FOR UPDATE;

-- name: definition_references
-- What references a definition: its memory revisions and its runs. Run it after `lock_definition`, as its own
-- statement: it then reads with a snapshot taken after the lock, so it counts what a waited-for insert
-- committed (a count inside the locking statement would read the snapshot from before the wait).
-- $1 definition id.
SELECT (SELECT count(*) FROM agent.memories WHERE definition_id = $1) AS memories,
       (SELECT count(*) FROM agent.runs WHERE definition_id = $1) AS runs;

-- name: delete_definition
-- Remove one of the organization's own definitions. $1 organization id, $2 definition id.
DELETE FROM agent.definitions WHERE organization_id = $1 AND id = $2;

-- name: set_definition_status
-- Change the status of one of the organization's own definitions. $1 organization id, $2 definition id,
-- $3 status.
UPDATE agent.definitions SET status = $3, updated_at = now()
 WHERE organization_id = $1 AND id = $2
RETURNING id, organization_id, definition_kind, name, status, created_at,
          (SELECT count(*) FROM agent.memories AS m WHERE m.definition_id = $2) AS memories,
          (SELECT count(*) FROM agent.runs AS r WHERE r.definition_id = $2) AS runs;

-- name: insert_run
-- Start a run of a live agent definition for a member. $1 organization id, $2 definition id, $3 user id,
-- $4 input (jsonb). Both rows are share-locked and checked in the statement, so a removal or an archive
-- that commits first leaves no row (the caller says which), and one that waits sees the run.
WITH live_agent AS (
    SELECT id FROM agent.definitions
     WHERE organization_id = $1 AND id = $2 AND definition_kind = 'agent' AND status <> 'archived'
       FOR SHARE
), member AS (
    SELECT id FROM public.users WHERE organization_id = $1 AND id = $3 FOR SHARE
)
INSERT INTO agent.runs (organization_id, definition_id, user_id, status, input)
SELECT $1, live_agent.id, member.id, 'running', $4 FROM live_agent, member
RETURNING id, organization_id, definition_id, user_id, status, created_at, updated_at;

-- name: user_in_organization
-- Whether the user is a member of the organization. $1 organization id, $2 user id.
SELECT EXISTS (SELECT 1 FROM public.users WHERE organization_id = $1 AND id = $2);

-- name: list_runs
-- The organization's runs, newest first, optionally of one definition and one user. $1 organization id,
-- $2 definition id or NULL, $3 user id or NULL, $4 the most rows.
SELECT id, organization_id, definition_id, user_id, status, created_at, updated_at
  FROM agent.runs
 WHERE organization_id = $1
   AND ($2::uuid IS NULL OR definition_id = $2)
   AND ($3::uuid IS NULL OR user_id = $3)
 ORDER BY created_at DESC, id DESC
 LIMIT $4;

-- name: get_run
-- One run of the organization. $1 organization id, $2 run id.
SELECT id, organization_id, definition_id, user_id, status, created_at, updated_at
  FROM agent.runs WHERE organization_id = $1 AND id = $2;

-- name: finish_run
-- End a run that has not ended; no row when it has (or is not the organization's). $1 organization id,
-- $2 run id, $3 final status.
UPDATE agent.runs SET status = $3, updated_at = now()
 WHERE organization_id = $1 AND id = $2 AND status IN ('queued', 'running', 'waiting')
RETURNING id, organization_id, definition_id, user_id, status, created_at, updated_at;

-- Brief receipts (migration 0122, state/brief_receipts.py): ids, names and counts of the briefs built here.

-- name: insert_brief_receipts
-- Write a batch of brief receipts and their citations in one statement. A receipt of an organization that
-- no longer exists or is being erased is not written; a receipt whose dedupe key is written already is not
-- written again (a replayed segment); a citation of a knowledge source or memory revision deleted meanwhile
-- is not written. $1 ids, $2 organization ids, $3 times, $4 faces, $5 kinds, $6 policies, $7 run ids,
-- $8 segments, $9 tokens, $10 cited counts, $11 per-source counts (jsonb text), $12 dedupe keys;
-- $13 citation receipt ids, $14 ref kinds, $15 ref ids. Answers the receipts and citations written.
WITH incoming AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::text[], $5::text[], $6::text[],
                         $7::uuid[], $8::integer[], $9::integer[], $10::integer[], $11::text[], $12::text[])
        AS r(id, organization_id, built_at, face, kind, policy, run_id, segment, tokens, cited, sources, dedupe_key)
), kept AS (
    INSERT INTO agent.brief_receipts
        (id, organization_id, built_at, face, kind, policy, run_id, segment, tokens, cited, sources, dedupe_key)
    SELECT i.id, i.organization_id, i.built_at, i.face, i.kind, i.policy, i.run_id, i.segment, i.tokens, i.cited,
           i.sources::jsonb, i.dedupe_key
      FROM incoming AS i
     WHERE EXISTS (SELECT 1 FROM public.organizations AS o WHERE o.id = i.organization_id)
       AND NOT EXISTS (SELECT 1 FROM agent.erasing_organizations AS e WHERE e.organization_id = i.organization_id)
    ON CONFLICT (organization_id, dedupe_key) DO NOTHING
    RETURNING id, organization_id, built_at
), cites AS (
    INSERT INTO agent.brief_citations (receipt_id, organization_id, ref_kind, ref_id, built_at)
    SELECT k.id, k.organization_id, c.ref_kind, c.ref_id, k.built_at
      FROM unnest($13::uuid[], $14::text[], $15::text[]) AS c(receipt_id, ref_kind, ref_id)
      JOIN kept AS k ON k.id = c.receipt_id
     WHERE CASE c.ref_kind
             WHEN 'agent.memory' THEN EXISTS (
                 SELECT 1 FROM agent.memories AS m
                  WHERE c.ref_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                    AND m.id = c.ref_id::uuid)
             WHEN 'knowledge_source' THEN EXISTS (
                 SELECT 1 FROM agent.knowledge_sources AS s
                  WHERE c.ref_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                    AND s.id = c.ref_id::uuid AND s.status <> 'deleting')
             ELSE true
           END
    ON CONFLICT DO NOTHING
    RETURNING 1
)
SELECT (SELECT count(*) FROM kept) AS receipts, (SELECT count(*) FROM cites) AS citations;

-- name: count_citing_receipts
-- How many receipts of one organization cited any of the refs. $1 organization id, $2 ref kind, $3 ref ids.
SELECT count(DISTINCT receipt_id)
  FROM agent.brief_citations
 WHERE organization_id = $1::uuid AND ref_kind = $2::text AND ref_id = ANY($3::text[]);

-- name: page_citing_receipts
-- A page of one organization's receipts that cited any of the refs, newest first, through brief_citations_ref.
-- $1 organization id, $2 ref kind, $3 ref ids, $4 built_at and $5 receipt id the page starts after, $6 rows.
SELECT r.id, r.built_at, r.face, r.kind, r.policy, r.run_id, r.segment, r.tokens, r.cited, r.sources::text AS sources
  FROM agent.brief_receipts AS r
 WHERE r.organization_id = $1::uuid
   AND r.id IN (SELECT c.receipt_id FROM agent.brief_citations AS c
                 WHERE c.organization_id = $1::uuid AND c.ref_kind = $2::text AND c.ref_id = ANY($3::text[])
                   AND (c.built_at, c.receipt_id) < ($4::timestamptz, $5::uuid))
 ORDER BY r.built_at DESC, r.id DESC
 LIMIT $6;

-- name: count_segment_receipts
-- How many segment receipts (builds, rebuilds, memo hits) one organization holds. $1 organization id,
-- $2 agent run id or NULL for every run.
SELECT count(*) FROM agent.brief_receipts
 WHERE organization_id = $1::uuid AND run_id IS NOT NULL AND ($2::uuid IS NULL OR run_id = $2::uuid);

-- name: page_segment_receipts
-- A page of one organization's segment receipts, newest first, through brief_receipts_segments. $1
-- organization id, $2 agent run id or NULL, $3 built_at and $4 id the page starts after, $5 rows.
SELECT id, built_at, face, kind, policy, run_id, segment, tokens, cited, sources::text AS sources
  FROM agent.brief_receipts
 WHERE organization_id = $1::uuid AND run_id IS NOT NULL AND ($2::uuid IS NULL OR run_id = $2::uuid)
   AND (built_at, id) < ($3::timestamptz, $4::uuid)
 ORDER BY built_at DESC, id DESC
 LIMIT $5;

-- name: prune_brief_receipts
-- Delete at most $2 receipts (their citations cascade) built before now minus $1 days; answers how many went.
WITH old AS (
    SELECT id FROM agent.brief_receipts WHERE built_at < now() - make_interval(days => $1::integer) LIMIT $2::integer
), gone AS (
    DELETE FROM agent.brief_receipts AS r USING old WHERE r.id = old.id RETURNING 1
)
SELECT count(*) FROM gone;

-- name: erase_organization_brief_citations
-- Delete every citation of one organization's brief receipts; answers how many. $1 organization id.
WITH gone AS (DELETE FROM agent.brief_citations WHERE organization_id = $1::uuid RETURNING 1)
SELECT count(*) FROM gone;

-- name: erase_organization_brief_receipts
-- Delete every brief receipt of one organization (its citations first); answers how many. $1 organization id.
WITH gone AS (DELETE FROM agent.brief_receipts WHERE organization_id = $1::uuid RETURNING 1)
SELECT count(*) FROM gone;

-- name: erase_person_brief_citations
-- Delete the citations of the brief receipts of the agent runs one person started; answers how many.
-- $1 organization id, $2 user id.
WITH gone AS (
    DELETE FROM agent.brief_citations AS c USING agent.brief_receipts AS r
     WHERE c.receipt_id = r.id AND r.organization_id = $1::uuid
       AND r.run_id IN (SELECT id FROM agent.runs WHERE organization_id = $1::uuid AND user_id = $2::uuid)
    RETURNING 1
)
SELECT count(*) FROM gone;

-- name: erase_person_brief_receipts
-- Delete the brief receipts of the agent runs one person started (their citations first); answers how many.
-- $1 organization id, $2 user id.
WITH gone AS (
    DELETE FROM agent.brief_receipts AS r
     WHERE r.organization_id = $1::uuid
       AND r.run_id IN (SELECT id FROM agent.runs WHERE organization_id = $1::uuid AND user_id = $2::uuid)
    RETURNING 1
)
SELECT count(*) FROM gone;
