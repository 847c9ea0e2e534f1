-- Email: the outgoing queue (mail package) and the digests' settings and state.

-- One row per email to send. A replica claims due rows by setting lease_owner and
-- lease_until_ms; sent_ms (or failed_ms, when it gave up) ends the row's life.
CREATE TABLE mail_queue (
  id             TEXT PRIMARY KEY,
  recipient      TEXT NOT NULL,
  subject        TEXT NOT NULL,
  body           TEXT NOT NULL,
  created_ms     INTEGER NOT NULL,
  next_ms        INTEGER NOT NULL,
  attempts       INTEGER NOT NULL DEFAULT 0,
  lease_owner    TEXT NOT NULL DEFAULT '',
  lease_until_ms INTEGER NOT NULL DEFAULT 0,
  sent_ms        INTEGER NOT NULL DEFAULT 0,
  failed_ms      INTEGER NOT NULL DEFAULT 0,
  last_error     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX mail_queue_due ON mail_queue(next_ms) WHERE sent_ms = 0 AND failed_ms = 0;

-- A project's digest schedule and the state of its last digest. No row: daily, none
-- sent yet.
CREATE TABLE digests (
  project_id    TEXT PRIMARY KEY REFERENCES projects(id),
  schedule      TEXT NOT NULL,
  updated_ms    INTEGER NOT NULL,
  last_period   TEXT NOT NULL DEFAULT '',
  last_ms       INTEGER NOT NULL DEFAULT 0,
  last_events   INTEGER NOT NULL DEFAULT 0,
  last_audit    INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Members who opted in to a project's digests. An opt-in counts only while the member
-- exists and was made after the membership began (a removed and re-added member opts
-- in again).
CREATE TABLE digest_optins (
  project_id TEXT NOT NULL REFERENCES projects(id),
  email      TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (project_id, email)
) WITHOUT ROWID;
