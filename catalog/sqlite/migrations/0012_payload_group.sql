-- Sealtrail catalog, SQLite schema version 12: one payload object per commit tick
-- (issue 21). A batch row may name its segment of the tick's group payload object:
-- the object's key and the segment's byte range. Rows without them (payload_object
-- NULL) keep naming their own object payload/<first_seq>-<batch_id>.
ALTER TABLE batches ADD COLUMN payload_object TEXT;
ALTER TABLE batches ADD COLUMN payload_offset INTEGER;
ALTER TABLE batches ADD COLUMN payload_length INTEGER;
