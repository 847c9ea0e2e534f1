-- Sealtrail catalog, PostgreSQL schema version 3: the service-wide tree_heads log
-- (package anchor, docs/anchoring.md). A recorded head that the anchoring job appended
-- carries its leaf index in that log; the log's committed state and the job's lease
-- are one row, advanced with a compare-and-swap on size.

ALTER TABLE tree_heads ADD COLUMN th_index bigint;
CREATE UNIQUE INDEX tree_heads_th_index ON tree_heads(th_index) WHERE th_index IS NOT NULL;
CREATE INDEX tree_heads_unanchored ON tree_heads(th_index) WHERE th_index IS NOT NULL AND anchor_type IS NULL;

CREATE TABLE tree_heads_log (
  id             integer PRIMARY KEY CHECK (id = 1),
  size           bigint NOT NULL CHECK (size >= 0),
  root           bytea NOT NULL,
  compact_range  bytea NOT NULL,
  published_size bigint NOT NULL CHECK (published_size >= 0 AND published_size <= size),
  lease_holder   text NOT NULL,
  lease_until    timestamptz NOT NULL
);
INSERT INTO tree_heads_log(id, size, root, compact_range, published_size, lease_holder, lease_until)
  VALUES (1, 0, decode(repeat('00', 32), 'hex'), ''::bytea, 0, '', 'epoch');

-- Projects whose tlog-tiles path (checkpoints, tiles, entry bundles; never payloads)
-- anyone may read without an API key, for mirrors (off unless the operator sets it).
CREATE TABLE public_read (
  project_id text PRIMARY KEY REFERENCES projects(id),
  since      timestamptz NOT NULL
);
