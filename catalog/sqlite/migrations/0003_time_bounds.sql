-- Sealtrail catalog, SQLite schema version 3: time filters by sequence bounds.
--
-- A seal gives all its events one receive time, never earlier than the previous
-- batch's, so in a project-stream receive times rise with the sequence. A time range
-- is then one range of sequences, found by a binary search over the rowids (times.go),
-- and the index on (log, received_ms) is not needed: it cost a fifth of each seal's
-- insert time, and its plan sorted every row of the range before returning a page.
--
-- logs.times_ordered says whether that holds for the project-stream; a seal that
-- breaks it (a receive time earlier than its predecessor's) clears it for good, and
-- time filters on that project-stream then check every row of the key range.

ALTER TABLE logs ADD COLUMN times_ordered INTEGER NOT NULL DEFAULT 1;

UPDATE logs SET times_ordered = 0 WHERE EXISTS (
  SELECT 1 FROM (
    SELECT received_ms < lag(received_ms) OVER (ORDER BY k) AS down
    FROM events WHERE k > (logs.id << 40) AND k < ((logs.id + 1) << 40)
  ) WHERE down);

DROP INDEX events_time;
