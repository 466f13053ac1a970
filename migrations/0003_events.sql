-- Up Migration
-- The outbox (SPEC §12): every event is written in the same database transaction as the change it
-- describes, so no event is lost when a process dies. Webhook delivery reads from here.
CREATE TABLE events (
  id              text PRIMARY KEY CHECK (id ~ '^evt_[A-Za-z0-9_-]{16,}$'),
  seq             bigserial UNIQUE,
  organization_id text NOT NULL REFERENCES organizations (id),
  type            text NOT NULL CHECK (type ~ '^[a-z_]+\.[a-z_]+$'),
  data            jsonb NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_by_org ON events (organization_id, seq);

-- Down Migration
DROP TABLE events;
