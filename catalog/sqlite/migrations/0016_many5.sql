-- Sealtrail catalog, SQLite schema version 16: log-structured checkpoint rows (issue 21).
--
-- A tick of many project-streams rewrote each stream's checkpoints row: a row with
-- its compact range is larger than a WITHOUT ROWID leaf keeps in place (about 230
-- bytes with 1 KiB pages), so every stream of every tick dirtied an overflow page
-- and a share of a leaf page, 1.12 WAL frames per event with 1,000 streams. A seal
-- whose batch goes to events_recent (migration 0015) now appends its stream's new
-- checkpoint here instead, in commit order (r rises), several to a page; the merger
-- folds each stream's newest row into checkpoints and empties the table in the same
-- transaction as it moves the rows of 0015 (recent.go, checkpoints.go,
-- docs/catalog.md). A row here is always newer than its stream's checkpoints row.
CREATE TABLE checkpoints_recent (
  r              INTEGER PRIMARY KEY, -- commit order
  log            INTEGER NOT NULL,    -- logs.id
  size           INTEGER NOT NULL,
  root           BLOB NOT NULL,
  compact_range  BLOB NOT NULL,
  published_size INTEGER NOT NULL,
  updated_ms     INTEGER NOT NULL
);
-- The newest row of a stream, and at most one row per stream and size.
CREATE UNIQUE INDEX checkpoints_recent_log ON checkpoints_recent(log, size);

-- The current checkpoint of every project-stream: its checkpoints row, or its newest
-- row in checkpoints_recent if it has one. Every read of a checkpoint reads this.
CREATE VIEW checkpoints_now AS
SELECT c.project_id AS project_id, c.stream AS stream,
  coalesce(x.size, c.size) AS size,
  iif(x.r IS NULL, c.root, x.root) AS root,
  coalesce(x.compact_range, c.compact_range) AS compact_range,
  max(c.published_size, coalesce(x.published_size, 0)) AS published_size,
  c.created_ms AS created_ms,
  coalesce(x.updated_ms, c.updated_ms) AS updated_ms
FROM checkpoints c
LEFT JOIN logs l ON l.project_id = c.project_id AND l.stream = c.stream
LEFT JOIN checkpoints_recent x ON x.log = l.id
  AND x.size = (SELECT max(m.size) FROM checkpoints_recent m WHERE m.log = l.id AND m.size > c.size);
