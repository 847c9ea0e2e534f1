-- Sealtrail catalog, SQLite schema version 9: the dashboard's emailed one-time sign-in
-- links and its sessions, both stored as SHA-256 hashes of their secrets only.

CREATE TABLE dashboard_links (
  hash       BLOB PRIMARY KEY,
  email      TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  used_ms    INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX dashboard_links_expiry ON dashboard_links(expires_ms);

CREATE TABLE dashboard_sessions (
  hash       BLOB PRIMARY KEY,
  kind       TEXT NOT NULL CHECK (kind IN ('member', 'operator')),
  email      TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions(expires_ms);
CREATE INDEX members_email ON members(email COLLATE NOCASE);
