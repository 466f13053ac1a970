-- Up Migration
-- Webhook replays (SPEC §17): one row per POST /webhook/{id}/replay, the progress its Temporal workflow
-- (workflow id = replay id) commits after every batch, so GET /webhook/{id}/replay/{replay_id} reads it and a
-- worker that dies midway resumes after the last batch it committed.
CREATE TABLE webhook_replays (
  id                text PRIMARY KEY CHECK (id ~ '^whr_[A-Za-z0-9_-]{16,}$'),
  organization_id   text NOT NULL REFERENCES organizations (id),
  endpoint_id       text NOT NULL REFERENCES webhook_endpoints (id),
  status            text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'failed')),
  created_at_gte    timestamptz NOT NULL,
  created_at_lt     timestamptz NOT NULL CHECK (created_at_lt > created_at_gte),
  -- The event types replayed; null: every type (an endpoint subscribed to '*', no `types` asked).
  types             text[] CHECK (cardinality(types) BETWEEN 1 AND 64),
  failed_only       boolean NOT NULL,
  events_total      integer NOT NULL CHECK (events_total >= 0),
  events_sent       integer NOT NULL DEFAULT 0 CHECK (events_sent >= 0),
  events_failed     integer NOT NULL DEFAULT 0 CHECK (events_failed >= 0 AND events_failed <= events_sent),
  -- The last event sent, in the replay's order (created_at, id): the next batch starts after it.
  cursor_created_at timestamptz,
  cursor_event_id   text,
  failure_reason    text CHECK (length(failure_reason) <= 500),
  created_at        timestamptz NOT NULL DEFAULT now(),
  completed_at      timestamptz,
  CHECK ((status = 'running') = (completed_at IS NULL)),
  CHECK ((cursor_created_at IS NULL) = (cursor_event_id IS NULL))
);
-- One running replay per endpoint: a second POST while one runs is refused by this index (409).
CREATE UNIQUE INDEX webhook_replays_one_running ON webhook_replays (endpoint_id) WHERE status = 'running';
CREATE INDEX webhook_replays_list ON webhook_replays (endpoint_id, created_at DESC, id DESC);
-- The retention sweep keeps every event a running replay may still send.
CREATE INDEX webhook_replays_running ON webhook_replays (organization_id) WHERE status = 'running';

-- Down Migration
DROP TABLE webhook_replays;
