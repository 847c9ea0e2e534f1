-- Sealtrail catalog, SQLite schema version 1. Times are Unix milliseconds (0 = unset);
-- hashes are 32-byte blobs; a compact range is its hashes concatenated.

CREATE TABLE projects (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL,
  created_ms INTEGER NOT NULL
);

CREATE TABLE api_keys (
  id         TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id),
  name       TEXT NOT NULL,
  key_hash   BLOB NOT NULL UNIQUE,
  prefix     TEXT NOT NULL,
  scopes     TEXT NOT NULL, -- space-separated
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL DEFAULT 0,
  revoked_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX api_keys_project ON api_keys(project_id, id);

CREATE TABLE members (
  project_id TEXT NOT NULL REFERENCES projects(id),
  email      TEXT NOT NULL,
  role       TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (project_id, email)
) WITHOUT ROWID;

CREATE TABLE signing_keys (
  project_id TEXT NOT NULL REFERENCES projects(id),
  id         TEXT NOT NULL,
  public_key TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  revoked_ms INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, id)
) WITHOUT ROWID;

CREATE TABLE retention_policies (
  project_id TEXT NOT NULL REFERENCES projects(id),
  stream     TEXT NOT NULL,
  days       INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (project_id, stream)
) WITHOUT ROWID;

CREATE TABLE legal_holds (
  project_id      TEXT NOT NULL REFERENCES projects(id),
  id              TEXT NOT NULL,
  membership_root BLOB NOT NULL,
  created_ms      INTEGER NOT NULL,
  released_ms     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, id)
) WITHOUT ROWID;

CREATE TABLE legal_hold_events (
  project_id TEXT NOT NULL,
  hold_id    TEXT NOT NULL,
  pos        INTEGER NOT NULL,
  event_id   TEXT NOT NULL,
  PRIMARY KEY (project_id, hold_id, pos),
  FOREIGN KEY (project_id, hold_id) REFERENCES legal_holds(project_id, id)
) WITHOUT ROWID;
CREATE INDEX legal_hold_events_event ON legal_hold_events(project_id, event_id);

CREATE TABLE data_keys (
  project_id   TEXT NOT NULL,
  stream       TEXT NOT NULL,
  epoch        TEXT NOT NULL,
  key_id       TEXT NOT NULL UNIQUE,
  kek_id       TEXT NOT NULL,
  wrapped      BLOB,            -- NULL once destroyed
  created_ms   INTEGER NOT NULL,
  destroyed_ms INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, stream, epoch)
);

CREATE TABLE checkpoints (
  project_id     TEXT NOT NULL,
  stream         TEXT NOT NULL,
  size           INTEGER NOT NULL,
  root           BLOB,
  compact_range  BLOB NOT NULL,
  published_size INTEGER NOT NULL,
  created_ms     INTEGER NOT NULL,
  updated_ms     INTEGER NOT NULL,
  PRIMARY KEY (project_id, stream)
) WITHOUT ROWID;
CREATE INDEX checkpoints_unpublished ON checkpoints(project_id, stream) WHERE published_size < size;

CREATE TABLE batches (
  project_id TEXT NOT NULL,
  stream     TEXT NOT NULL,
  first_seq  INTEGER NOT NULL,
  count      INTEGER NOT NULL,
  batch_id   TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (project_id, stream, first_seq)
) WITHOUT ROWID;

CREATE TABLE events (
  project_id   TEXT NOT NULL,
  stream       TEXT NOT NULL,
  seq          INTEGER NOT NULL,
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
CREATE UNIQUE INDEX events_seq ON events(project_id, stream, seq);
CREATE UNIQUE INDEX events_id ON events(project_id, stream, event_id);
CREATE INDEX events_time ON events(project_id, stream, received_ms);
CREATE INDEX events_action ON events(project_id, stream, action, seq);
CREATE INDEX events_status ON events(project_id, stream, status, seq);
CREATE INDEX events_actor ON events(project_id, stream, actor_id, actor_type, seq);
CREATE INDEX events_target ON events(project_id, stream, target_id, target_type, seq);

CREATE TABLE tree_heads (
  project_id   TEXT NOT NULL,
  stream       TEXT NOT NULL,
  tree_size    INTEGER NOT NULL,
  root_hash    BLOB NOT NULL,
  ts_ms        INTEGER NOT NULL,
  signature    BLOB NOT NULL,
  anchor_type  TEXT,
  anchor_ref   TEXT,
  anchor_proof BLOB,
  anchored_ms  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, stream, tree_size)
) WITHOUT ROWID;
