-- Sealtrail catalog, SQLite schema version 11: SIEM destinations (issue 20). One row per
-- destination of a project-stream: where and how its events are streamed (config is the
-- siem package's JSON, secrets KEK-sealed), the delivery cursor (the last sequence the
-- receiver acknowledged), the failure count and dead-letter state, and the lease that
-- lets one runner across replicas deliver it.

CREATE TABLE siem_destinations (
  id             TEXT PRIMARY KEY,
  project_id     TEXT NOT NULL REFERENCES projects(id),
  stream         TEXT NOT NULL CHECK (stream IN ('events', 'project_audit')),
  name           TEXT NOT NULL,
  kind           TEXT NOT NULL,
  format         TEXT NOT NULL,
  config         BLOB NOT NULL,
  state          TEXT NOT NULL CHECK (state IN ('active', 'paused', 'dead_letter')),
  cursor         INTEGER NOT NULL DEFAULT 0 CHECK (cursor >= 0),
  attempts       INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  last_error     TEXT NOT NULL DEFAULT '',
  failed_ms      INTEGER NOT NULL DEFAULT 0,
  lease_owner    TEXT NOT NULL DEFAULT '',
  lease_until_ms INTEGER NOT NULL DEFAULT 0,
  created_ms     INTEGER NOT NULL,
  updated_ms     INTEGER NOT NULL
);
CREATE INDEX siem_destinations_project ON siem_destinations(project_id, id);
