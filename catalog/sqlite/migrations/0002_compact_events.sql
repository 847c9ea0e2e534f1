-- Sealtrail catalog, SQLite schema version 2: a compact event index.
--
-- Every project-stream gets a small number (logs.id), and an event's row is keyed by
-- k = log << 40 | seq, its rowid: rows of one project-stream are one contiguous rowid
-- range, a seal appends at its end, and each secondary index entry carries the small
-- number and the rowid instead of the project id and stream as text.
--
-- The actor and target indexes left this file: their keys are spread across the whole
-- tree, so each seal dirtied about one page of each per event. They live in the term
-- index, a second file filled in the background (terms.go, docs/catalog.md).

CREATE TABLE meta (
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
-- Names this catalog, so that a term index built for another file is never used.
INSERT INTO meta(name, value) VALUES ('catalog_id', lower(hex(randomblob(16))));

CREATE TABLE logs (
  id         INTEGER PRIMARY KEY,
  project_id TEXT NOT NULL,
  stream     TEXT NOT NULL,
  UNIQUE (project_id, stream)
);
INSERT INTO logs(project_id, stream) SELECT project_id, stream FROM checkpoints ORDER BY project_id, stream;

CREATE TABLE events_v2 (
  k            INTEGER PRIMARY KEY, -- logs.id << 40 | seq
  log          INTEGER NOT NULL,    -- logs.id
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
INSERT INTO events_v2(k, log, event_id, received_ms, action, status, actor_type, actor_id,
    target_type, target_id, payload_hash, leaf_hash)
  SELECT (l.id << 40) | e.seq, l.id, e.event_id, e.received_ms, e.action, e.status, e.actor_type, e.actor_id,
    e.target_type, e.target_id, e.payload_hash, e.leaf_hash
  FROM events e JOIN logs l ON l.project_id = e.project_id AND l.stream = e.stream
  ORDER BY 1;
DROP TABLE events;
ALTER TABLE events_v2 RENAME TO events;

-- Each index ends with the rowid k, so equal keys come in sequence order.
CREATE UNIQUE INDEX events_id ON events(log, event_id);
CREATE INDEX events_time ON events(log, received_ms);
CREATE INDEX events_action ON events(log, action);
CREATE INDEX events_status ON events(log, status);
