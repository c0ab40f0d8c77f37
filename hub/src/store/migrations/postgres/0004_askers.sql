-- Who asked, whom for, and who settled (§23): `asker` is the id of the access file's asker that
-- posted the ask ('' without an access file), `to_names` the JSON array of the person ids and
-- group names it is addressed to (NULL: everyone), `settled_by` the JSON {"id","name"} of the
-- person who answered or cancelled it. Keys and request ids are an asker's own: two askers
-- using the same key get two asks.
ALTER TABLE asks ADD COLUMN asker TEXT NOT NULL DEFAULT '';
ALTER TABLE asks ADD COLUMN to_names TEXT;
ALTER TABLE asks ADD COLUMN settled_by TEXT;

ALTER TABLE asks DROP CONSTRAINT asks_key_key;
DROP INDEX asks_request_id;
CREATE UNIQUE INDEX asks_asker_key ON asks (asker, key);
CREATE UNIQUE INDEX asks_asker_request_id ON asks (asker, request_id);
