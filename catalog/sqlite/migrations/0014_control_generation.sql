-- Sealtrail catalog, SQLite schema version 14: a control-plane generation (issue 21).
-- n rises with every change to projects, API keys, signing keys and suspensions, made
-- through this catalog by any process: the ingest path's caches of those rows stay valid
-- while n is unchanged, so a replica reads one row a second instead of one row per
-- project and key (control/cache.go, docs/api-decisions.md).
CREATE TABLE control_generation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  n  INTEGER NOT NULL
);
INSERT INTO control_generation(id, n) VALUES (1, 0);

CREATE TRIGGER projects_ins_generation AFTER INSERT ON projects
  BEGIN UPDATE control_generation SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER projects_upd_generation AFTER UPDATE ON projects
  BEGIN UPDATE control_generation SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER projects_del_generation AFTER DELETE ON projects
  BEGIN UPDATE control_generation SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER api_keys_ins_generation AFTER INSERT ON api_keys
  BEGIN UPDATE control_generation SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER api_keys_upd_generation AFTER UPDATE ON api_keys
  BEGIN UPDATE control_generation SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER api_keys_del_generation AFTER DELETE ON api_keys
  BEGIN UPDATE control_generation SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER signing_keys_ins_generation AFTER INSERT ON signing_keys
  BEGIN UPDATE control_generation SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER signing_keys_upd_generation AFTER UPDATE ON signing_keys
  BEGIN UPDATE control_generation SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER signing_keys_del_generation AFTER DELETE ON signing_keys
  BEGIN UPDATE control_generation SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER project_suspensions_ins_generation AFTER INSERT ON project_suspensions
  BEGIN UPDATE control_generation SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER project_suspensions_upd_generation AFTER UPDATE ON project_suspensions
  BEGIN UPDATE control_generation SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER project_suspensions_del_generation AFTER DELETE ON project_suspensions
  BEGIN UPDATE control_generation SET n = n + 1 WHERE id = 1; END;
