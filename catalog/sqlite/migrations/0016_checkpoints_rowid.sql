-- Sealtrail catalog, SQLite schema version 16: checkpoint rows in a rowid table
-- (issue 21).
--
-- A checkpoint row holds the stream's compact range, a 32-byte hash per set bit of its
-- size: with the ids, root and counters, 250-700 bytes. In a WITHOUT ROWID table, whose
-- rows are B-tree index entries, SQLite keeps at most 230 bytes of a row on its leaf
-- page at the catalog's 1 KiB page size and spills the rest to an overflow page of its
-- own. So every seal rewrote that stream's overflow page besides the leaf page: a tick
-- of 1,000 streams of one event each logged 1.12 pages per event to the WAL for its
-- checkpoints alone (BenchmarkManyStreamTicks), about half the tick's frames. A rowid
-- table keeps rows of up to 989 bytes on the leaf page, several to a page; the
-- (project_id, stream) key becomes a UNIQUE index, which an UPDATE of the other
-- columns leaves untouched.
CREATE TABLE checkpoints_v16 (
  project_id     TEXT NOT NULL,
  stream         TEXT NOT NULL,
  size           INTEGER NOT NULL,
  root           BLOB,
  compact_range  BLOB NOT NULL,
  published_size INTEGER NOT NULL,
  created_ms     INTEGER NOT NULL,
  updated_ms     INTEGER NOT NULL,
  UNIQUE (project_id, stream)
);
INSERT INTO checkpoints_v16(project_id, stream, size, root, compact_range, published_size, created_ms, updated_ms)
  SELECT project_id, stream, size, root, compact_range, published_size, created_ms, updated_ms
  FROM checkpoints ORDER BY project_id, stream;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_v16 RENAME TO checkpoints;
CREATE INDEX checkpoints_unpublished ON checkpoints(project_id, stream) WHERE published_size < size;
