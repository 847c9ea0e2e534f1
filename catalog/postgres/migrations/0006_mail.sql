-- Email: the outgoing queue (mail package) and the digests' settings and state.

-- One row per email to send. A replica claims due rows (FOR UPDATE SKIP LOCKED) by
-- setting lease_owner and lease_until; sent_at (or failed_at, when it gave up) ends
-- the row's life.
CREATE TABLE mail_queue (
  id          text PRIMARY KEY,
  recipient   text NOT NULL,
  subject     text NOT NULL,
  body        text NOT NULL,
  created_at  timestamptz NOT NULL,
  next_at     timestamptz NOT NULL,
  attempts    integer NOT NULL DEFAULT 0,
  lease_owner text NOT NULL DEFAULT '',
  lease_until timestamptz,
  sent_at     timestamptz,
  failed_at   timestamptz,
  last_error  text NOT NULL DEFAULT ''
);
CREATE INDEX mail_queue_due ON mail_queue(next_at) WHERE sent_at IS NULL AND failed_at IS NULL;

-- A project's digest schedule and the state of its last digest. No row: daily, none
-- sent yet.
CREATE TABLE digests (
  project_id  text PRIMARY KEY REFERENCES projects(id),
  schedule    text NOT NULL,
  updated_at  timestamptz NOT NULL,
  last_period text NOT NULL DEFAULT '',
  last_at     timestamptz,
  last_events bigint NOT NULL DEFAULT 0,
  last_audit  bigint NOT NULL DEFAULT 0
);

-- Members who opted in to a project's digests. An opt-in counts only while the member
-- exists and was made after the membership began (a removed and re-added member opts
-- in again).
CREATE TABLE digest_optins (
  project_id text NOT NULL REFERENCES projects(id),
  email      text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (project_id, email)
);
