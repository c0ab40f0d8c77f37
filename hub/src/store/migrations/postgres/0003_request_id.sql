-- The request id of an asker's POST /api/v1/asks (its Idempotency-Key header, docs/hub.md): a
-- POST sent again because its reply never arrived (cut on the way, the hub restarted before
-- answering) gets the ask the first one stored, not a second copy whose answer nobody awaits.
-- NULL when the asker sent none.
ALTER TABLE asks ADD COLUMN request_id TEXT;

CREATE UNIQUE INDEX asks_request_id ON asks (request_id);
