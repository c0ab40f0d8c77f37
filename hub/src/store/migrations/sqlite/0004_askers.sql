-- Who asked, whom for, and who settled (§23): `asker` is the id of the access file's asker that
-- posted the ask ('' without an access file), `to_names` the JSON array of the person ids and
-- group names it is addressed to (NULL: everyone), `settled_by` the JSON {"id","name"} of the
-- person who answered or cancelled it. Keys and request ids are an asker's own: two askers
-- using the same key get two asks. SQLite cannot drop the old column's UNIQUE constraint, so
-- the table is made anew with the same rows; the ticket sequence carries over (tickets are
-- never reused, also past asks deleted after the retention).
CREATE TEMP TABLE asks_0004_sequence AS
    SELECT seq FROM sqlite_sequence WHERE name = 'asks';

CREATE TABLE asks_0004 (
    ticket      INTEGER PRIMARY KEY AUTOINCREMENT,
    questions   TEXT    NOT NULL,
    agent_id    TEXT,
    key         TEXT,
    asked_at    INTEGER NOT NULL,
    timeout_ms  INTEGER,
    expires_at  INTEGER,
    status      TEXT    NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'answered', 'cancelled', 'failed', 'timed_out', 'withdrawn')),
    answer      TEXT,
    message     TEXT,
    settled_at  INTEGER,
    lease_until INTEGER,
    request_id  TEXT,
    asker       TEXT    NOT NULL DEFAULT '',
    to_names    TEXT,
    settled_by  TEXT
);

INSERT INTO asks_0004 (ticket, questions, agent_id, key, asked_at, timeout_ms, expires_at,
                       status, answer, message, settled_at, lease_until, request_id)
    SELECT ticket, questions, agent_id, key, asked_at, timeout_ms, expires_at,
           status, answer, message, settled_at, lease_until, request_id
    FROM asks;

DROP TABLE asks;
ALTER TABLE asks_0004 RENAME TO asks;

INSERT INTO sqlite_sequence (name, seq)
    SELECT 'asks', seq FROM asks_0004_sequence
    WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'asks');
UPDATE sqlite_sequence
    SET seq = MAX(seq, COALESCE((SELECT seq FROM asks_0004_sequence), 0))
    WHERE name = 'asks';
DROP TABLE asks_0004_sequence;

CREATE INDEX asks_pending ON asks (ticket) WHERE status = 'pending';
CREATE INDEX asks_settled ON asks (settled_at) WHERE status <> 'pending';
CREATE INDEX asks_lease ON asks (lease_until) WHERE status = 'pending';
CREATE UNIQUE INDEX asks_asker_key ON asks (asker, key);
CREATE UNIQUE INDEX asks_asker_request_id ON asks (asker, request_id);
