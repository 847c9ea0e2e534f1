-- Sealtrail catalog, SQLite schema version 15: log-structured tick rows (issue 21).
--
-- A tick seals about one event in each of many project-streams, and each stream's
-- events row, its index entries and its batch row landed on a leaf page of its own in
-- every B-tree (events and its three indexes, batches): a tick of 1,000 streams dirtied
-- thousands of 1 KiB pages, each logged to the WAL and written back by the checkpoint.
-- A small batch's rows now go to these two tables instead, in commit order (the rowid
-- r rises), so a tick's rows fill a few consecutive pages; a merger moves them into
-- events and batches in one transaction every few seconds, key order, so each
-- stream's pages are touched once per merge (recent.go, docs/catalog.md). Every read
-- takes both tables. A large batch, whose rows fill pages anyway, goes to events and
-- batches directly.
CREATE TABLE events_recent (
  r            INTEGER PRIMARY KEY, -- commit order
  k            INTEGER NOT NULL,    -- logs.id << 40 | seq, as events.k
  log          INTEGER NOT NULL,
  event_id     TEXT NOT NULL,
  received_ms  INTEGER NOT NULL,
  action       TEXT NOT NULL,
  status       TEXT NOT NULL,
  actor_type   TEXT NOT NULL,
  actor_id     TEXT NOT NULL,
  target_type  TEXT NOT NULL,
  target_id    TEXT NOT NULL,
  payload_hash BLOB NOT NULL,
  leaf_hash    BLOB NOT NULL
);
-- Reads by key; entries are small, so a tick dirties a few pages of it.
CREATE UNIQUE INDEX events_recent_k ON events_recent(k);

CREATE TABLE batches_recent (
  r              INTEGER PRIMARY KEY, -- commit order
  log            INTEGER NOT NULL,    -- logs.id
  first_seq      INTEGER NOT NULL,
  count          INTEGER NOT NULL,
  batch_id       TEXT NOT NULL,
  created_ms     INTEGER NOT NULL,
  payload_object TEXT,
  payload_offset INTEGER,
  payload_length INTEGER
);
-- Reads by project-stream and first sequence, as batches' primary key.
CREATE UNIQUE INDEX batches_recent_seq ON batches_recent(log, first_seq);
