-- Sealtrail catalog, SQLite schema version 19: checkpoint rows keyed by the
-- project-stream's number (issue 21).
--
-- Every seal rewrites its stream's checkpoint row, so a tick of 1,000 streams dirties
-- every page those rows are on. A row held the project id and stream as text besides
-- the size, root and compact range: with the 30-character ids the service mints and an
-- 8-hash range, about 350 bytes, two to a 1 KiB page (0.50 WAL frames per event of such
-- a tick, TestManyStreamTicks). The row is now found by its number, the rowid (logs.id,
-- which every stream with a checkpoint already has), and drops the text: about 315
-- bytes, three to a page. Reads by project id and stream go through logs' unique index.
INSERT OR IGNORE INTO logs(project_id, stream) SELECT project_id, stream FROM checkpoints ORDER BY project_id, stream;

CREATE TABLE checkpoints_v19 (
  log            INTEGER PRIMARY KEY, -- logs.id
  size           INTEGER NOT NULL,
  root           BLOB,
  compact_range  BLOB NOT NULL,
  published_size INTEGER NOT NULL,
  created_ms     INTEGER NOT NULL,
  updated_ms     INTEGER NOT NULL
);
INSERT INTO checkpoints_v19(log, size, root, compact_range, published_size, created_ms, updated_ms)
  SELECT l.id, c.size, c.root, c.compact_range, c.published_size, c.created_ms, c.updated_ms
  FROM checkpoints c JOIN logs l ON l.project_id = c.project_id AND l.stream = c.stream
  ORDER BY l.id;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_v19 RENAME TO checkpoints;
-- The streams recovery must publish. Its key never changes, so a seal writes this
-- index only when its stream falls behind or catches up.
CREATE INDEX checkpoints_unpublished ON checkpoints(log) WHERE published_size < size;
