-- Up Migration
-- Webhooks (SPEC §12). The outbox `events` (0003) gains `dispatched_at`: the dispatcher in the worker claims
-- rows where it is null, starts one delivery workflow per subscribed endpoint, and sets it in the same
-- database transaction, so a dispatcher that dies midway leaves the rows to the next one.
ALTER TABLE events ADD COLUMN dispatched_at timestamptz;
CREATE INDEX events_undispatched ON events (seq) WHERE dispatched_at IS NULL;

-- An organization's endpoints. The signing secret must be usable for HMAC, so it is stored (sealed with
-- AES-256-GCM when WEBHOOK_SECRET_KEY is configured) and erased when the endpoint is deleted; it is never
-- returned after creation. Deleted endpoints stay as rows so their delivery history keeps its owner.
CREATE TABLE webhook_endpoints (
  id              text PRIMARY KEY CHECK (id ~ '^whk_[A-Za-z0-9_-]{16,}$'),
  organization_id text NOT NULL REFERENCES organizations (id),
  url             text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  events          text[] NOT NULL CHECK (cardinality(events) BETWEEN 1 AND 32),
  secret_sealed   text,
  status          text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
  disabled_reason text CHECK (length(disabled_reason) <= 500),
  disabled_at     timestamptz,
  -- The endpoint receives events whose outbox seq is above this (the newest committed at registration):
  -- ordered by the outbox itself, so clocks and back-dated event times cannot make it miss or gain events.
  events_after_seq bigint NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  deleted_at      timestamptz,
  CHECK ((deleted_at IS NULL) = (secret_sealed IS NOT NULL)),
  CHECK ((status = 'disabled') = (disabled_at IS NOT NULL))
);
CREATE INDEX webhook_endpoints_list ON webhook_endpoints (organization_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;

-- Every delivery attempt, kept for GET /webhook/{id}/deliveries: one row per HTTP attempt (or refusal).
-- A row is written `pending` before the request goes out, so an attempt cut short by a dying worker still
-- shows; the next attempt of the same delivery marks it failed (its duration unknown, hence nullable).
CREATE TABLE webhook_deliveries (
  id                   text PRIMARY KEY CHECK (id ~ '^whd_[A-Za-z0-9_-]{16,}$'),
  endpoint_id          text NOT NULL REFERENCES webhook_endpoints (id),
  organization_id      text NOT NULL REFERENCES organizations (id),
  event_id             text NOT NULL REFERENCES events (id),
  event_type           text NOT NULL,
  attempt              integer NOT NULL CHECK (attempt >= 1),
  outcome              text NOT NULL CHECK (outcome IN ('pending', 'succeeded', 'failed', 'refused')),
  response_status_code integer CHECK (response_status_code BETWEEN 100 AND 599),
  duration_ms          integer CHECK (duration_ms >= 0),
  error                text CHECK (length(error) <= 1000),
  created_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_list ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (event_id, endpoint_id) WHERE outcome = 'pending';

-- Down Migration
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
DROP INDEX events_undispatched;
ALTER TABLE events DROP COLUMN dispatched_at;
