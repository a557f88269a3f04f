-- Console sessions: the server's record of every console sign-in, so that signing out ends the session
-- everywhere and not only in the browser that clicked (docs/operations.md, Console sessions).
--
-- The cookie `ac_console` is signed and carries a random session id and the session's CSRF token; the row
-- holds only the SHA-256 of that id (a copy of this table opens nothing), the id of the key the session acts
-- as (NULL for the operator token) and its expiry. A request's session is valid while its row exists, is not
-- revoked and has not expired, and its key still exists unrevoked: sign-out sets revoked_at, so a copy of the
-- cookie taken before sign-out is refused after it, and revoking or deleting a key ends its sessions through
-- the same read. key_id has no foreign key on purpose: an organization erasure deletes the organization's
-- keys and counts each table it empties on its receipt (state/erasure.py), and a cascade here would empty a
-- table the receipt does not name; a session of a deleted key is refused and goes with the expired rows.
-- Rows past their expiry are deleted by the next sign-in (state/console_sessions.py), through the index on
-- expires_at: a sign-in costs that DELETE, and the table never outgrows the sign-ins since the last one plus
-- the sessions still live.
--
-- The table is closed to the tenant and user-key roles, as agent.api_keys is (migration 0070).

CREATE TABLE agent.console_sessions (
    id_sha256 bytea PRIMARY KEY CHECK (length(id_sha256) = 32),
    key_id text CHECK (key_id ~ '^[0-9a-f]{16}$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz,
    CONSTRAINT console_sessions_expire_after_creation CHECK (expires_at > created_at)
);

CREATE INDEX console_sessions_expires_at ON agent.console_sessions (expires_at);

ALTER TABLE agent.console_sessions ENABLE ROW LEVEL SECURITY;
REVOKE ALL ON agent.console_sessions FROM PUBLIC, authenticated, ac_tenant;
