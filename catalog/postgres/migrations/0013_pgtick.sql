-- Sealtrail catalog, PostgreSQL schema version 13: a tick of the group commit in one
-- round trip before its COMMIT (issue 21, branch pgtick; docs/catalog.md).
-- A tick starts from the checkpoints this replica's last seals committed, without
-- reading them under a lock first, and its checkpoint UPDATE, conditional on those
-- sizes, goes in one pipeline with BEGIN and the tick's rows. This function lets that
-- UPDATE fail the transaction when it did not move every checkpoint (one moved or was
-- locked by another replica since), so the rows queued behind it are never written:
-- SQLSTATE ST409, on which the driver rolls back and seals the tick again from the
-- checkpoints read under the lock.
CREATE FUNCTION sealtrail_expect_rows(got bigint, want bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  IF got <> want THEN
    RAISE EXCEPTION 'sealtrail: % of % checkpoints moved or locked elsewhere', want - got, want
      USING ERRCODE = 'ST409';
  END IF;
  RETURN got;
END
$$;
