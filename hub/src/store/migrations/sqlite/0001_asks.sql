-- The asks a hub keeps: one row per ask, from POST /api/v1/asks until retention deletes it.
-- Times are milliseconds since the Unix epoch (UTC).
CREATE TABLE asks (
    ticket     INTEGER PRIMARY KEY AUTOINCREMENT,
    questions  TEXT    NOT NULL,
    agent_id   TEXT,
    key        TEXT    UNIQUE,
    asked_at   INTEGER NOT NULL,
    timeout_ms INTEGER,
    expires_at INTEGER,
    status     TEXT    NOT NULL DEFAULT 'pending'
               CHECK (status IN ('pending', 'answered', 'cancelled', 'failed', 'timed_out', 'withdrawn')),
    answer     TEXT,
    message    TEXT,
    settled_at INTEGER
);

CREATE INDEX asks_pending ON asks (ticket) WHERE status = 'pending';
CREATE INDEX asks_settled ON asks (settled_at) WHERE status <> 'pending';
