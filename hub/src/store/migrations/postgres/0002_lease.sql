-- The lease of an ask without a key (§20), kept in the store so that every hub on the
-- database keeps it and sees it lapse: lease_until is when the ask is withdrawn unless its
-- asker polls again, in milliseconds since the Unix epoch by the database's clock (one clock
-- for every hub); NULL for an ask with a key (it never lapses). A hub sets it when it stores
-- the ask, keeps it ahead while a long poll is open, sets it to the end of each poll plus
-- --lease, and renews every pending one when it starts (so the asks already pending when this
-- migration runs get theirs then).
ALTER TABLE asks ADD COLUMN lease_until BIGINT;

CREATE INDEX asks_lease ON asks (lease_until) WHERE status = 'pending';
