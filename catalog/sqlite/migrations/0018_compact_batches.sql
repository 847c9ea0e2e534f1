-- Sealtrail catalog, SQLite schema version 18: compact batch rows (issue 21).
--
-- A batch row named its project-stream by its project id and stream as text (the
-- WITHOUT ROWID key), and its segment by the group payload object's whole key, the
-- same for every batch of a tick: with the batch id, about 145 bytes, seven to a 1 KiB
-- page. A tick of 1,000 streams brings one batch row per stream, and every merge of
-- the recent rows (recent.go) writes each stream's run of them in the middle of
-- batches: the largest tree in the WAL frames of such ticks (0.61 of 2.30 frames per
-- event after 200 ticks, TestManyStreamTicks). A batch row is now keyed by its
-- stream's number and first sequence, as events are (k = logs.id << 40 | first_seq),
-- and names its object by a number: payload_objects holds each object key once (one
-- row per segment file on the filesystem store, one per tick elsewhere). About 60
-- bytes.
CREATE TABLE payload_objects (
  id   INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
INSERT INTO payload_objects(name)
  SELECT payload_object FROM batches WHERE payload_object IS NOT NULL
  UNION SELECT payload_object FROM batches_recent WHERE payload_object IS NOT NULL
  ORDER BY 1;

-- Every project-stream with a batch has a number already (its checkpoint row gave it
-- one); this only makes the copy below independent of that.
INSERT OR IGNORE INTO logs(project_id, stream) SELECT DISTINCT project_id, stream FROM batches;

CREATE TABLE batches_v18 (
  k              INTEGER PRIMARY KEY, -- logs.id << 40 | first_seq
  count          INTEGER NOT NULL,
  batch_id       TEXT NOT NULL,
  created_ms     INTEGER NOT NULL,
  object         INTEGER,             -- payload_objects.id; NULL: the batch's own object
  payload_offset INTEGER,
  payload_length INTEGER
);
INSERT INTO batches_v18(k, count, batch_id, created_ms, object, payload_offset, payload_length)
  SELECT (l.id << 40) | b.first_seq, b.count, b.batch_id, b.created_ms, o.id, b.payload_offset, b.payload_length
  FROM batches b JOIN logs l ON l.project_id = b.project_id AND l.stream = b.stream
  LEFT JOIN payload_objects o ON o.name = b.payload_object
  ORDER BY 1;
DROP TABLE batches;
ALTER TABLE batches_v18 RENAME TO batches;

CREATE TABLE batches_recent_v18 (
  r              INTEGER PRIMARY KEY, -- commit order
  log            INTEGER NOT NULL,    -- logs.id
  first_seq      INTEGER NOT NULL,
  count          INTEGER NOT NULL,
  batch_id       TEXT NOT NULL,
  created_ms     INTEGER NOT NULL,
  object         INTEGER,             -- payload_objects.id, as in batches
  payload_offset INTEGER,
  payload_length INTEGER
);
INSERT INTO batches_recent_v18(r, log, first_seq, count, batch_id, created_ms, object, payload_offset, payload_length)
  SELECT b.r, b.log, b.first_seq, b.count, b.batch_id, b.created_ms, o.id, b.payload_offset, b.payload_length
  FROM batches_recent b LEFT JOIN payload_objects o ON o.name = b.payload_object
  ORDER BY 1;
DROP TABLE batches_recent;
ALTER TABLE batches_recent_v18 RENAME TO batches_recent;
-- Reads by project-stream and first sequence, as batches' key.
CREATE UNIQUE INDEX batches_recent_seq ON batches_recent(log, first_seq);
