-- The asks hubs share: one row per ask, from POST /api/v1/asks until retention deletes it.
-- Times are milliseconds since the Unix epoch (UTC). Tickets come from a sequence and are
-- never reused.
CREATE TABLE asks (
    ticket     BIGSERIAL PRIMARY KEY,
    questions  TEXT   NOT NULL,
    agent_id   TEXT,
    key        TEXT   UNIQUE,
    asked_at   BIGINT NOT NULL,
    timeout_ms BIGINT,
    expires_at BIGINT,
    status     TEXT   NOT NULL DEFAULT 'pending'
               CHECK (status IN ('pending', 'answered', 'cancelled', 'failed', 'timed_out', 'withdrawn')),
    answer     TEXT,
    message    TEXT,
    settled_at BIGINT
);

CREATE INDEX asks_pending ON asks (ticket) WHERE status = 'pending';
CREATE INDEX asks_settled ON asks (settled_at) WHERE status <> 'pending';
