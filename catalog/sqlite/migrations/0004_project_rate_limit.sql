-- Sealtrail catalog, SQLite schema version 4: the operator's per-project override of
-- the ingest rate limit (requests per rate window per API key; 0 is the service
-- default). Set through the control plane, which records each change in the project's
-- project_audit stream.

ALTER TABLE projects ADD COLUMN ingest_rate_limit INTEGER NOT NULL DEFAULT 0
  CHECK (ingest_rate_limit >= 0);
