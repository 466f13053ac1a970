-- Up Migration
-- SPEC §4 as amended (fourth plan): past the failed-authentication limit an address's invalid keys get 429
-- without more work, and a valid key is never refused for other requests' failures. A client sharing the
-- address (a NAT, a load balancer without TRUST_PROXY) must not lock an operator out. So a blocked address's
-- key is still looked up (one index read); a valid one authenticates, an invalid one is refused and, being
-- past the limit already, recorded no further.
CREATE OR REPLACE FUNCTION edge_authenticate(p_key_hash bytea, p_failure_bucket inet, p_now timestamptz, p_window interval,
                                             p_environment text, p_failures_max integer,
                                             OUT outcome text, OUT key_id text, OUT key_hash bytea, OUT key_environment text,
                                             OUT organization jsonb, OUT allowlist text[], OUT failures timestamptz[])
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  SELECT coalesce(array_agg(f.failed_at ORDER BY f.failed_at), '{}') INTO failures FROM auth_failures f
   WHERE f.ip = p_failure_bucket AND f.failed_at > p_now - p_window;

  SELECT k.id, k.key_hash, k.environment, to_jsonb(o),
         ARRAY(SELECT a.cidr::text FROM ip_allowlist a WHERE a.organization_id = o.id ORDER BY a.cidr)
    INTO key_id, key_hash, key_environment, organization, allowlist
    FROM api_keys k JOIN organizations o ON o.id = k.organization_id
   WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL;
  IF FOUND AND key_environment = p_environment THEN
    outcome := 'authenticated';
    RETURN;
  END IF;
  key_id := NULL; key_hash := NULL; key_environment := NULL; organization := NULL; allowlist := NULL;
  IF cardinality(failures) >= p_failures_max THEN
    outcome := 'too_many_auth_failures';
    RETURN;
  END IF;
  DELETE FROM auth_failures f WHERE f.ip = p_failure_bucket AND f.failed_at <= p_now - p_window;
  INSERT INTO auth_failures (ip, failed_at) VALUES (p_failure_bucket, p_now);
  failures := failures || p_now;
  IF cardinality(failures) >= p_failures_max THEN
    PERFORM pg_notify('ledger_edge', jsonb_build_object('auth_blocked', host(p_failure_bucket))::text);
  END IF;
  outcome := 'unauthenticated';
END $$;

-- Down Migration
CREATE OR REPLACE FUNCTION edge_authenticate(p_key_hash bytea, p_failure_bucket inet, p_now timestamptz, p_window interval,
                                             p_environment text, p_failures_max integer,
                                             OUT outcome text, OUT key_id text, OUT key_hash bytea, OUT key_environment text,
                                             OUT organization jsonb, OUT allowlist text[], OUT failures timestamptz[])
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  SELECT coalesce(array_agg(f.failed_at ORDER BY f.failed_at), '{}') INTO failures FROM auth_failures f
   WHERE f.ip = p_failure_bucket AND f.failed_at > p_now - p_window;
  IF cardinality(failures) >= p_failures_max THEN
    outcome := 'too_many_auth_failures';
    RETURN;
  END IF;

  SELECT k.id, k.key_hash, k.environment, to_jsonb(o),
         ARRAY(SELECT a.cidr::text FROM ip_allowlist a WHERE a.organization_id = o.id ORDER BY a.cidr)
    INTO key_id, key_hash, key_environment, organization, allowlist
    FROM api_keys k JOIN organizations o ON o.id = k.organization_id
   WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL;
  IF NOT FOUND OR key_environment <> p_environment THEN
    DELETE FROM auth_failures f WHERE f.ip = p_failure_bucket AND f.failed_at <= p_now - p_window;
    INSERT INTO auth_failures (ip, failed_at) VALUES (p_failure_bucket, p_now);
    failures := failures || p_now;
    IF cardinality(failures) >= p_failures_max THEN
      PERFORM pg_notify('ledger_edge', jsonb_build_object('auth_blocked', host(p_failure_bucket))::text);
    END IF;
    outcome := 'unauthenticated';
    key_id := NULL; key_hash := NULL; organization := NULL; allowlist := NULL;
    RETURN;
  END IF;
  outcome := 'authenticated';
END $$;
