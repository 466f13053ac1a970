-- Up Migration
-- edge_admit answered every request of a release before the key cache and rate-limit leases (0013); it stayed
-- for that release's processes during a rolling upgrade. No process calls it now, nor rate_limit_take, which
-- only it called.
DROP FUNCTION edge_admit;
DROP FUNCTION rate_limit_take;

-- Down Migration
CREATE FUNCTION rate_limit_take(p_org text, p_kind text, p_now timestamptz, p_window interval, p_limit integer,
                                p_consume boolean, OUT admitted boolean, OUT used integer, OUT oldest timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('rate_limit:' || p_org || ':' || p_kind, 0));
  SELECT c.used, c.oldest INTO used, oldest FROM rate_limit_count(p_org, p_kind, p_now, p_window) c;
  admitted := p_consume AND used < p_limit;
  IF admitted THEN
    INSERT INTO rate_limit_leases (organization_id, kind, slots, first_at, last_at, settled)
    VALUES (p_org, p_kind, 1, p_now, p_now, true);
    used := used + 1;
    oldest := coalesce(oldest, p_now);
  END IF;
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
