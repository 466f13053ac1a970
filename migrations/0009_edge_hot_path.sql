-- Up Migration
-- The edge's checks for one request in ONE round trip (SPEC §4): failed-authentication limit → key →
-- allowlist → rate limit. Doing them in one function call halves the database round trips of every
-- request, and lets a request refused by the allowlist still report its rate-limit state without using quota.

-- How many admitted requests of (organization, kind) are in rate_limit_hits. Counting the rows on every
-- request costs O(limit); the counter makes admission O(log n) however high an organization's limit is.
-- Invariant: used = (SELECT count(*) FROM rate_limit_hits WHERE organization_id = .. AND kind = ..), kept
-- because rate_limit_take is the only writer of both tables and holds this row's lock while it writes.
CREATE TABLE rate_limit_counters (
  organization_id text NOT NULL REFERENCES organizations (id),
  kind            text NOT NULL CHECK (kind IN ('read', 'write')),
  used            integer NOT NULL CHECK (used >= 0),
  PRIMARY KEY (organization_id, kind)
);
INSERT INTO rate_limit_counters (organization_id, kind, used)
  SELECT organization_id, kind, count(*) FROM rate_limit_hits GROUP BY organization_id, kind;

DROP FUNCTION rate_limit_admit;

-- Exact sliding window: with p_consume, admits iff fewer than p_limit requests of this kind were admitted
-- in the p_window before p_now, and records the admission. Without p_consume it only reports the state.
-- A refused request inserts nothing, so it uses no quota.
CREATE FUNCTION rate_limit_take(p_org text, p_kind text, p_now timestamptz, p_window interval, p_limit integer,
                                p_consume boolean, OUT admitted boolean, OUT used integer, OUT oldest timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
  v_used integer;
  v_expired integer;
BEGIN
  -- The counter row's lock serializes admissions per (organization, kind) across every api process.
  SELECT c.used INTO v_used FROM rate_limit_counters c
   WHERE c.organization_id = p_org AND c.kind = p_kind FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO rate_limit_counters (organization_id, kind, used) VALUES (p_org, p_kind, 0) ON CONFLICT DO NOTHING;
    SELECT c.used INTO v_used FROM rate_limit_counters c
     WHERE c.organization_id = p_org AND c.kind = p_kind FOR UPDATE;
  END IF;
  -- Only the rows that left the window since the last call: amortized O(1) per request.
  WITH gone AS (
    DELETE FROM rate_limit_hits h
     WHERE h.organization_id = p_org AND h.kind = p_kind AND h.admitted_at <= p_now - p_window
    RETURNING 1
  )
  SELECT count(*)::integer INTO v_expired FROM gone;
  v_used := v_used - v_expired;
  admitted := p_consume AND v_used < p_limit;
  IF admitted THEN
    INSERT INTO rate_limit_hits (organization_id, kind, admitted_at) VALUES (p_org, p_kind, p_now);
    v_used := v_used + 1;
  END IF;
  IF admitted OR v_expired > 0 THEN
    UPDATE rate_limit_counters c SET used = v_used WHERE c.organization_id = p_org AND c.kind = p_kind;
  END IF;
  used := v_used;
  SELECT h.admitted_at INTO oldest FROM rate_limit_hits h
   WHERE h.organization_id = p_org AND h.kind = p_kind ORDER BY h.admitted_at LIMIT 1;
END $$;

-- outcome: 'too_many_auth_failures' (oldest = the oldest counted failure), 'unauthenticated' (the failure
-- is recorded), 'ip_not_allowed' (rate state reported, nothing used), 'rate_limited' or 'admitted'.
-- p_address is null when the client's address cannot be known; a configured allowlist then refuses writes.
CREATE FUNCTION edge_admit(p_key_hash bytea, p_address inet, p_failure_bucket inet, p_now timestamptz,
                           p_window interval, p_environment text, p_write boolean, p_failures_max integer,
                           OUT outcome text, OUT key_id text, OUT key_hash bytea, OUT key_environment text,
                           OUT organization jsonb, OUT rate_limit integer, OUT used integer, OUT oldest timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
  v_failures integer;
  v_org_id text;
  v_limit_write integer;
  v_limit_read integer;
  v_allowed boolean := true;
  v_admitted boolean;
BEGIN
  -- What this transaction writes (rate-limit hits, failed logins) is bookkeeping, not money: it need not wait
  -- for its WAL flush. Waiting would hold the (organization, kind) counter lock through an fsync and cap one
  -- organization's throughput at one admission per flush. A Postgres crash may forget the last moment's hits.
  PERFORM set_config('synchronous_commit', 'off', true);
  SELECT count(*)::integer, min(f.failed_at) INTO v_failures, oldest FROM auth_failures f
   WHERE f.ip = p_failure_bucket AND f.failed_at > p_now - p_window;
  IF v_failures >= p_failures_max THEN
    outcome := 'too_many_auth_failures';
    RETURN;
  END IF;
  oldest := NULL;

  SELECT k.id, k.key_hash, k.environment, to_jsonb(o), o.id, o.rate_limit_write, o.rate_limit_read
    INTO key_id, key_hash, key_environment, organization, v_org_id, v_limit_write, v_limit_read
    FROM api_keys k JOIN organizations o ON o.id = k.organization_id
   WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL;
  IF NOT FOUND OR key_environment <> p_environment THEN
    DELETE FROM auth_failures f WHERE f.ip = p_failure_bucket AND f.failed_at <= p_now - p_window;
    INSERT INTO auth_failures (ip, failed_at) VALUES (p_failure_bucket, p_now);
    outcome := 'unauthenticated';
    key_id := NULL; key_hash := NULL; organization := NULL;
    RETURN;
  END IF;

  IF p_write AND EXISTS (SELECT 1 FROM ip_allowlist a WHERE a.organization_id = v_org_id) THEN
    v_allowed := p_address IS NOT NULL
      AND EXISTS (SELECT 1 FROM ip_allowlist a WHERE a.organization_id = v_org_id AND p_address <<= a.cidr);
  END IF;

  rate_limit := CASE WHEN p_write THEN v_limit_write ELSE v_limit_read END;
  SELECT t.admitted, t.used, t.oldest INTO v_admitted, used, oldest
    FROM rate_limit_take(v_org_id, CASE WHEN p_write THEN 'write' ELSE 'read' END, p_now, p_window, rate_limit, v_allowed) t;
  outcome := CASE WHEN NOT v_allowed THEN 'ip_not_allowed' WHEN v_admitted THEN 'admitted' ELSE 'rate_limited' END;
END $$;

-- Down Migration
DROP FUNCTION edge_admit;
DROP FUNCTION rate_limit_take;
DROP TABLE rate_limit_counters;
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
