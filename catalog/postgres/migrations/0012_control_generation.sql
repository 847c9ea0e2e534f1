-- Sealtrail catalog, PostgreSQL schema version 12: a control-plane generation (issue 21).
-- n rises with every row change to projects, API keys, signing keys or
-- suspensions, from any replica: the ingest path's caches of those rows stay valid
-- while n is unchanged, so a replica reads one row a second instead of one row per
-- project and key (control/cache.go, docs/api-decisions.md). The counter's row lock orders
-- concurrent control-plane writes; they are rare, and the ingest path never writes
-- these tables.
CREATE TABLE control_generation (
  id SMALLINT PRIMARY KEY CHECK (id = 1),
  n  BIGINT NOT NULL
);
INSERT INTO control_generation(id, n) VALUES (1, 0);

CREATE FUNCTION bump_control_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE control_generation SET n = n + 1 WHERE id = 1;
  RETURN NULL;
END
$$;

CREATE TRIGGER projects_generation AFTER INSERT OR UPDATE OR DELETE ON projects
  FOR EACH ROW EXECUTE FUNCTION bump_control_generation();
CREATE TRIGGER projects_truncate_generation AFTER TRUNCATE ON projects
  FOR EACH STATEMENT EXECUTE FUNCTION bump_control_generation();
CREATE TRIGGER api_keys_generation AFTER INSERT OR UPDATE OR DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION bump_control_generation();
CREATE TRIGGER api_keys_truncate_generation AFTER TRUNCATE ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION bump_control_generation();
CREATE TRIGGER signing_keys_generation AFTER INSERT OR UPDATE OR DELETE ON signing_keys
  FOR EACH ROW EXECUTE FUNCTION bump_control_generation();
CREATE TRIGGER signing_keys_truncate_generation AFTER TRUNCATE ON signing_keys
  FOR EACH STATEMENT EXECUTE FUNCTION bump_control_generation();
CREATE TRIGGER project_suspensions_generation AFTER INSERT OR UPDATE OR DELETE ON project_suspensions
  FOR EACH ROW EXECUTE FUNCTION bump_control_generation();
CREATE TRIGGER project_suspensions_truncate_generation AFTER TRUNCATE ON project_suspensions
  FOR EACH STATEMENT EXECUTE FUNCTION bump_control_generation();
