-- Sealtrail catalog, PostgreSQL schema version 1. Times are timestamptz at millisecond
-- precision; hashes are 32-byte bytea; a compact range is its hashes concatenated.

CREATE TABLE projects (
  id         text PRIMARY KEY,
  name       text NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE api_keys (
  id         text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id),
  name       text NOT NULL,
  key_hash   bytea NOT NULL UNIQUE,
  prefix     text NOT NULL,
  scopes     text[] NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX api_keys_project ON api_keys(project_id, id);

CREATE TABLE members (
  project_id text NOT NULL REFERENCES projects(id),
  email      text NOT NULL,
  role       text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (project_id, email)
);

CREATE TABLE signing_keys (
  project_id text NOT NULL REFERENCES projects(id),
  id         text NOT NULL,
  public_key text NOT NULL,
  created_at timestamptz NOT NULL,
  revoked_at timestamptz,
  PRIMARY KEY (project_id, id)
);

CREATE TABLE retention_policies (
  project_id text NOT NULL REFERENCES projects(id),
  stream     text NOT NULL,
  days       integer NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (project_id, stream)
);

CREATE TABLE legal_holds (
  project_id      text NOT NULL REFERENCES projects(id),
  id              text NOT NULL,
  membership_root bytea NOT NULL,
  created_at      timestamptz NOT NULL,
  released_at     timestamptz,
  PRIMARY KEY (project_id, id)
);

CREATE TABLE legal_hold_events (
  project_id text NOT NULL,
  hold_id    text NOT NULL,
  pos        integer NOT NULL,
  event_id   text NOT NULL,
  PRIMARY KEY (project_id, hold_id, pos),
  FOREIGN KEY (project_id, hold_id) REFERENCES legal_holds(project_id, id)
);
CREATE INDEX legal_hold_events_event ON legal_hold_events(project_id, event_id);

CREATE TABLE data_keys (
  project_id   text NOT NULL,
  stream       text NOT NULL,
  epoch        text NOT NULL,
  key_id       text NOT NULL UNIQUE,
  kek_id       text NOT NULL,
  wrapped      bytea,            -- NULL once destroyed
  created_at   timestamptz NOT NULL,
  destroyed_at timestamptz,
  PRIMARY KEY (project_id, stream, epoch)
);

-- One row per project-stream: the row a seal locks (SELECT ... FOR UPDATE) from
-- reading the checkpoint to committing the next one.
CREATE TABLE checkpoints (
  project_id    text NOT NULL,
  stream        text NOT NULL,
  size          bigint NOT NULL CHECK (size >= 0),
  root          bytea,
  compact_range bytea NOT NULL,
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  PRIMARY KEY (project_id, stream)
);

-- How far each project-stream is materialized in object storage, and the row the
-- publish lock takes. Kept apart from checkpoints so that publishing batch N never
-- waits for the seal of batch N+1, which holds the checkpoint row.
CREATE TABLE publications (
  project_id     text NOT NULL,
  stream         text NOT NULL,
  published_size bigint NOT NULL CHECK (published_size >= 0),
  updated_at     timestamptz NOT NULL,
  PRIMARY KEY (project_id, stream)
);

CREATE TABLE batches (
  project_id text NOT NULL,
  stream     text NOT NULL,
  first_seq  bigint NOT NULL,
  count      integer NOT NULL,
  batch_id   text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (project_id, stream, first_seq)
);

-- The event index, range-partitioned by receive time (one partition per UTC month,
-- created ahead of time and on demand; see docs/catalog.md). A unique index of a
-- partitioned table must contain the partition key, so event-id uniqueness lives in
-- event_ids below.
CREATE TABLE events (
  project_id   text NOT NULL,
  stream       text NOT NULL,
  seq          bigint NOT NULL,
  event_id     text NOT NULL,
  received_at  timestamptz NOT NULL,
  action       text NOT NULL,
  status       text NOT NULL,
  actor_type   text NOT NULL,
  actor_id     text NOT NULL,
  target_type  text NOT NULL,
  target_id    text NOT NULL,
  payload_hash bytea NOT NULL,
  leaf_hash    bytea NOT NULL,
  PRIMARY KEY (project_id, stream, seq, received_at)
) PARTITION BY RANGE (received_at);
CREATE INDEX events_time ON events(project_id, stream, received_at);
CREATE INDEX events_action ON events(project_id, stream, action, seq);
CREATE INDEX events_status ON events(project_id, stream, status, seq);
CREATE INDEX events_actor ON events(project_id, stream, actor_id, actor_type, seq);
CREATE INDEX events_target ON events(project_id, stream, target_id, target_type, seq);

-- Event id -> position, narrow and unique: idempotent retries and proofs by id. Hash
-- partitioned by project so no single index grows with the whole service.
CREATE TABLE event_ids (
  project_id  text NOT NULL,
  stream      text NOT NULL,
  event_id    text NOT NULL,
  seq         bigint NOT NULL,
  received_at timestamptz NOT NULL,
  PRIMARY KEY (project_id, stream, event_id)
) PARTITION BY HASH (project_id);
DO $$
BEGIN
  FOR i IN 0..15 LOOP
    EXECUTE format('CREATE TABLE event_ids_h%s PARTITION OF event_ids FOR VALUES WITH (MODULUS 16, REMAINDER %s)', i, i);
  END LOOP;
END
$$;

CREATE TABLE tree_heads (
  project_id   text NOT NULL,
  stream       text NOT NULL,
  tree_size    bigint NOT NULL,
  root_hash    bytea NOT NULL,
  ts           timestamptz NOT NULL,
  signature    bytea NOT NULL,
  anchor_type  text,
  anchor_ref   text,
  anchor_proof bytea,
  anchored_at  timestamptz,
  PRIMARY KEY (project_id, stream, tree_size)
);
