-- Secrets a hub keeps in its store (§23): `links` is the HMAC-SHA256 key that signs one-tap
-- answer links, made once by the first hub that needs it, so that links survive a restart and
-- every hub on the store checks the others' links.
CREATE TABLE hub_secrets (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
