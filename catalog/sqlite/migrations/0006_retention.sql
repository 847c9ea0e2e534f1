-- Sealtrail catalog, SQLite schema version 6: retention by crypto-shredding
-- (docs/retention.md).
--
-- held_payloads: the events whose payload was re-encrypted under the hold key before
-- their epoch's data key was destroyed; the copy is the object <project>/<stream>/held/<seq>.
-- retention_minimums: the operator's per-project floor under every retention policy.
-- project_suspensions: the operator's billing suspensions (ingest refused with 429).
-- leases: named leases across replicas (the retention job runs on one at a time).

CREATE TABLE held_payloads (
  project_id TEXT NOT NULL,
  stream     TEXT NOT NULL,
  seq        INTEGER NOT NULL,
  PRIMARY KEY (project_id, stream, seq)
) WITHOUT ROWID;

CREATE TABLE retention_minimums (
  project_id TEXT PRIMARY KEY REFERENCES projects(id),
  days       INTEGER NOT NULL CHECK (days > 0)
) WITHOUT ROWID;

CREATE TABLE project_suspensions (
  project_id TEXT PRIMARY KEY REFERENCES projects(id),
  reason     TEXT NOT NULL,
  since_ms   INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE leases (
  name       TEXT PRIMARY KEY,
  holder     TEXT NOT NULL,
  expires_ms INTEGER NOT NULL
) WITHOUT ROWID;
