-- Up Migration
-- The API edge's shared state: every api process of a deployment counts against the same rows.

-- One row per admitted request; only the last 60 seconds are kept.
CREATE TABLE rate_limit_hits (
  organization_id text NOT NULL REFERENCES organizations (id),
  kind            text NOT NULL CHECK (kind IN ('read', 'write')),
  admitted_at     timestamptz NOT NULL
);
CREATE INDEX rate_limit_hits_window ON rate_limit_hits (organization_id, kind, admitted_at);

-- Exact sliding window (SPEC §4): admitted iff fewer than p_limit requests of this kind were admitted in
-- the 60 seconds before p_now. The advisory lock serializes admissions per (organization, kind) across
-- processes; a refused request inserts nothing, so it uses no quota.
CREATE FUNCTION rate_limit_admit(p_org text, p_kind text, p_now timestamptz, p_limit integer,
                                 OUT admitted boolean, OUT used integer, OUT oldest timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('rate_limit:' || p_org || ':' || p_kind, 0));
  DELETE FROM rate_limit_hits
   WHERE organization_id = p_org AND kind = p_kind AND admitted_at <= p_now - interval '60 seconds';
  SELECT count(*)::integer, min(admitted_at) INTO used, oldest
    FROM rate_limit_hits
   WHERE organization_id = p_org AND kind = p_kind AND admitted_at > p_now - interval '60 seconds';
  IF used < p_limit THEN
    INSERT INTO rate_limit_hits (organization_id, kind, admitted_at) VALUES (p_org, p_kind, p_now);
    used := used + 1;
    admitted := true;
    oldest := coalesce(oldest, p_now);
  ELSE
    admitted := false;
  END IF;
END $$;

-- Failed authentications per client address; only the last 60 seconds matter.
CREATE TABLE auth_failures (
  ip        inet NOT NULL,
  failed_at timestamptz NOT NULL
);
CREATE INDEX auth_failures_window ON auth_failures (ip, failed_at);

-- Stored responses of executed POSTs (SPEC §5), kept 24 hours.
-- scope: 'header' for X-Idempotency-Key, '<endpoint>#<field>' for a unique body field,
-- '<endpoint>#body' for the exact-body fallback.
CREATE TABLE idempotency_keys (
  organization_id text NOT NULL REFERENCES organizations (id),
  scope           text NOT NULL,
  key             text NOT NULL,
  endpoint        text NOT NULL,
  request_hash    text NOT NULL,
  status_code     integer NOT NULL CHECK (status_code BETWEEN 200 AND 599),
  -- The response text exactly as first sent, so a replay is byte-identical.
  response_body   text NOT NULL,
  created_at      timestamptz NOT NULL,
  PRIMARY KEY (organization_id, scope, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (created_at);

-- Down Migration
DROP TABLE idempotency_keys;
DROP TABLE auth_failures;
DROP FUNCTION rate_limit_admit;
DROP TABLE rate_limit_hits;
