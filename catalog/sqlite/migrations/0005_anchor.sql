-- Sealtrail catalog, SQLite schema version 5: the service-wide tree_heads log
-- (package anchor, docs/anchoring.md). A recorded head that the anchoring job appended
-- carries its leaf index in that log; the log's committed state and the job's lease
-- are one row.

ALTER TABLE tree_heads ADD COLUMN th_index INTEGER;
CREATE UNIQUE INDEX tree_heads_th_index ON tree_heads(th_index) WHERE th_index IS NOT NULL;
CREATE INDEX tree_heads_unanchored ON tree_heads(th_index) WHERE th_index IS NOT NULL AND anchor_type IS NULL;

CREATE TABLE tree_heads_log (
  id             INTEGER PRIMARY KEY CHECK (id = 1),
  size           INTEGER NOT NULL CHECK (size >= 0),
  root           BLOB NOT NULL,
  compact_range  BLOB NOT NULL,
  published_size INTEGER NOT NULL CHECK (published_size >= 0 AND published_size <= size),
  lease_holder   TEXT NOT NULL,
  lease_until_ms INTEGER NOT NULL
);
INSERT INTO tree_heads_log(id, size, root, compact_range, published_size, lease_holder, lease_until_ms)
  VALUES (1, 0, zeroblob(32), x'', 0, '', 0);

-- Projects whose tlog-tiles path (checkpoints, tiles, entry bundles; never payloads)
-- anyone may read without an API key, for mirrors (off unless the operator sets it).
CREATE TABLE public_read (
  project_id TEXT PRIMARY KEY REFERENCES projects(id),
  since_ms   INTEGER NOT NULL
) WITHOUT ROWID;
