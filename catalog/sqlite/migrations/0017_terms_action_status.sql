-- Sealtrail catalog, SQLite schema version 17: actions and statuses move to the term
-- index (issue 21).
--
-- Each project-stream's entries for one action or status are a run of their own in
-- the middle of events_action and events_status, so every seal of a small batch, and
-- every merge of many streams' recent rows (recent.go), dirtied a leaf page, and as
-- the catalog grew its siblings and parents, of both indexes per stream and value: a
-- third of the WAL frames of a tick of 1,000 streams once each stream held some
-- hundreds of events. The term index (terms.go) now holds them as postings, one row
-- per chunk of a stream's events and value, written in the background; a query by
-- action or status walks them as it walks an actor's. The term file's format changes
-- with this version, so it is rebuilt from the catalog at the first open.
DROP INDEX IF EXISTS events_action;
DROP INDEX IF EXISTS events_status;
