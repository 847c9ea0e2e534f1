-- Sealtrail catalog, PostgreSQL schema version 4: retention by crypto-shredding
-- (docs/retention.md).
--
-- held_payloads: the events whose payload was re-encrypted under the hold key before
-- their epoch's data key was destroyed; the copy is the object <project>/<stream>/held/<seq>.
-- retention_minimums: the operator's per-project floor under every retention policy.
-- project_suspensions: the operator's billing suspensions (ingest refused with 429).
-- leases: named leases across replicas (the retention job runs on one at a time).

CREATE TABLE held_payloads (
  project_id text NOT NULL,
  stream     text NOT NULL,
  seq        bigint NOT NULL,
  PRIMARY KEY (project_id, stream, seq)
);

CREATE TABLE retention_minimums (
  project_id text PRIMARY KEY REFERENCES projects(id),
  days       integer NOT NULL CHECK (days > 0)
);

CREATE TABLE project_suspensions (
  project_id text PRIMARY KEY REFERENCES projects(id),
  reason     text NOT NULL,
  since      timestamptz NOT NULL
);

CREATE TABLE leases (
  name       text PRIMARY KEY,
  holder     text NOT NULL,
  expires_at timestamptz NOT NULL
);
