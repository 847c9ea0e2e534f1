-- Sealtrail catalog, PostgreSQL schema version 7: the dashboard's emailed one-time
-- sign-in links and its sessions, both stored as SHA-256 hashes of their secrets only.

CREATE TABLE dashboard_links (
  hash       bytea PRIMARY KEY,
  email      text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at    timestamptz
);
CREATE INDEX dashboard_links_expiry ON dashboard_links(expires_at);

CREATE TABLE dashboard_sessions (
  hash       bytea PRIMARY KEY,
  kind       text NOT NULL CHECK (kind IN ('member', 'operator')),
  email      text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions(expires_at);
CREATE INDEX members_email ON members(lower(email));
