-- Named queries of the sources over application state (application, conversation, dossier,
-- definition_summary, run_history, outreach, outreach_thread). Every statement filters the organization
-- explicitly with $1, and runs on a tenant connection, so row-level security checks it again.

-- name: dossier_documents
-- The active organization documents, newest first, with the total count of active documents on each row.
-- $1 organization id, $2 the most document rows to return.
SELECT id, title, summary, created_at, count(*) OVER () AS total
FROM public.org_documents
WHERE organization_id = $1 AND active
ORDER BY created_at DESC, id DESC
LIMIT $2;

-- name: dossier_document_count
-- The total count of active organization documents (used when no document row is asked for).
-- $1 organization id.
SELECT count(*) AS total
FROM public.org_documents
WHERE organization_id = $1 AND active;

-- name: conversation_with_messages
-- A conversation's summary and its newest messages in one read, newest first (a conversation with no message
-- gives one row whose message columns are NULL; an unknown or another organization's conversation, none).
-- Both tables are filtered by the organization explicitly (row-level security checks it again).
-- $1 organization id, $2 conversation id, $3 message limit.
SELECT c.summary, c.summary_updated_at, m.id AS message_id, m.role, m.content, m.created_at
FROM public.conversations AS c
LEFT JOIN LATERAL (
    SELECT cm.id, cm.role, cm.content, cm.created_at
    FROM public.conversation_messages AS cm
    WHERE cm.organization_id = $1 AND cm.conversation_id = c.id
    ORDER BY cm.created_at DESC, cm.id DESC
    LIMIT $3
) AS m ON true
WHERE c.organization_id = $1 AND c.id = $2
ORDER BY m.created_at DESC NULLS LAST, m.id DESC;

-- name: visible_definitions
-- The published Agents, Workflows and Skills the organization sees: its own, then the platform templates.
-- Reads only the safe summary, never the context policy. $1 organization id, $2 row limit.
SELECT id, organization_id, definition_kind, name, safe_summary, updated_at
FROM agent.definitions
WHERE status = 'published' AND (organization_id = $1 OR organization_id IS NULL)
ORDER BY (organization_id IS NULL), definition_kind, name, id
LIMIT $2;

-- name: run_history
-- Earlier runs of the organization inside the lookback window that belong to the same user or trigger,
-- or whose result refs contain a request entity by kind and id, excluding the current run; root and child
-- runs. The entity branch probes the GIN index with the id alone (a kind such as crm.company is in most
-- runs, so its posting list would be read whole) and then checks kind and id together. It has no
-- ORDER BY ... LIMIT of its own on purpose: with one, the planner walks the recency index and tests every
-- run's refs, so a rare entity costs a scan of the whole window.
-- Reads id, status, result, created_at and, for the body, parent_run_id, waiting_reason, failure_reason;
-- never input, principal, snapshot or span_tree.
-- $1 organization id, $2 lookback hours, $3 current run id or NULL, $4 user id or NULL,
-- $5 trigger id or NULL, $6 text[] entity kinds, $7 text[] entity ids (same length), $8 row limit.
WITH candidates AS (
    (SELECT r.id, r.created_at
       FROM agent.runs AS r
      WHERE r.organization_id = $1 AND $4::uuid IS NOT NULL AND r.user_id = $4::uuid
        AND r.created_at >= now() - make_interval(hours => $2::int)
        AND ($3::uuid IS NULL OR r.id <> $3::uuid)
      ORDER BY r.created_at DESC, r.id DESC
      LIMIT $8)
    UNION
    (SELECT r.id, r.created_at
       FROM agent.runs AS r
      WHERE r.organization_id = $1 AND $5::uuid IS NOT NULL AND r.trigger_id = $5::uuid
        AND r.created_at >= now() - make_interval(hours => $2::int)
        AND ($3::uuid IS NULL OR r.id <> $3::uuid)
      ORDER BY r.created_at DESC, r.id DESC
      LIMIT $8)
    UNION
    (SELECT r.id, r.created_at
       FROM unnest($6::text[], $7::text[]) AS probe (kind, id)
       JOIN agent.runs AS r
         ON (r.result -> 'refs') @> jsonb_build_array(jsonb_build_object('id', probe.id))
      WHERE (r.result -> 'refs') @> jsonb_build_array(jsonb_build_object('kind', probe.kind, 'id', probe.id))
        AND r.organization_id = $1
        AND r.created_at >= now() - make_interval(hours => $2::int)
        AND ($3::uuid IS NULL OR r.id <> $3::uuid))
)
SELECT r.id, r.status, r.result, r.created_at, r.parent_run_id, r.waiting_reason, r.failure_reason
FROM (SELECT DISTINCT id FROM candidates) AS c
JOIN agent.runs AS r ON r.id = c.id AND r.organization_id = $1
ORDER BY r.created_at DESC, r.id DESC
LIMIT $8;

-- name: outreach_enrollments
-- The enrollments of one CRM person, with the sequence each belongs to, most recently updated first.
-- $1 organization id, $2 crm person id, $3 row limit.
SELECT e.id, e.state, e.current_step, e.next_action, e.next_step_at, e.updated_at,
       s.id AS sequence_id, s.name AS sequence_name, s.step_count
FROM public.outreach_enrollments AS e
JOIN public.outreach_sequences AS s ON s.id = e.sequence_id AND s.organization_id = $1
WHERE e.organization_id = $1 AND e.person_id = $2
ORDER BY e.updated_at DESC, e.id DESC
LIMIT $3;
