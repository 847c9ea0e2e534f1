-- Sealtrail catalog, PostgreSQL schema version 5: KEK rotation. Rewrapping moves each
-- live data key to the current key-encryption key and the operator watches the count
-- of live keys per KEK fall to zero: this index answers that count without reading the
-- wrapped keys (docs/keyring.md, "KEK rotation").

CREATE INDEX data_keys_live_kek ON data_keys(kek_id) WHERE destroyed_at IS NULL;
