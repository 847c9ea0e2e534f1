-- Sealtrail catalog, PostgreSQL schema version 9: SIEM destinations (issue 20). One row
-- per destination of a project-stream: where and how its events are streamed (config is
-- the siem package's JSON, secrets KEK-sealed), the delivery cursor (the last sequence the
-- receiver acknowledged), the failure count and dead-letter state, and the lease that
-- lets one runner across replicas deliver it.

CREATE TABLE siem_destinations (
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects(id),
  stream      text NOT NULL CHECK (stream IN ('events', 'project_audit')),
  name        text NOT NULL,
  kind        text NOT NULL,
  format      text NOT NULL,
  config      bytea NOT NULL,
  state       text NOT NULL CHECK (state IN ('active', 'paused', 'dead_letter')),
  cursor      bigint NOT NULL DEFAULT 0 CHECK (cursor >= 0),
  attempts    integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  last_error  text NOT NULL DEFAULT '',
  failed_at   timestamptz,
  lease_owner text NOT NULL DEFAULT '',
  lease_until timestamptz,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL
);
CREATE INDEX siem_destinations_project ON siem_destinations(project_id, id);
