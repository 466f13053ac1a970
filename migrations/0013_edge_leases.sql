-- Up Migration
-- The edge without a database write per request (SPEC §4; the argument is in docs/edge.md):
-- * api processes cache key lookups and are told of every change to keys, organizations and allowlists on
--   the channel `ledger_edge`;
-- * the rate limit is counted in leases: a process takes a batch of slots from Postgres (one short
--   transaction per batch), admits requests from it in memory, and settles it with what it really used.

-- One lease of rate-limit slots. While a process holds it, `slots` is what was granted and
-- [first_at, last_at] the span in which it may admit them (grant time .. grant time + lease length);
-- settled, `slots` is what it admitted and [first_at, last_at] the span of those admissions. Either way every
-- admission the row stands for happened at or before last_at, so the row is counted while
-- last_at > now - window: see rate_limit_count.
CREATE TABLE rate_limit_leases (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations (id),
  kind            text NOT NULL CHECK (kind IN ('read', 'write')),
  slots           integer NOT NULL CHECK (slots > 0),
  first_at        timestamptz NOT NULL,
  last_at         timestamptz NOT NULL CHECK (last_at >= first_at),
  settled         boolean NOT NULL DEFAULT false
);
CREATE INDEX rate_limit_leases_window ON rate_limit_leases (organization_id, kind, last_at);

-- What the per-hit tables counted carries over, so the limit stays exact across the upgrade.
INSERT INTO rate_limit_leases (organization_id, kind, slots, first_at, last_at, settled)
  SELECT organization_id, kind, count(*), min(admitted_at), max(admitted_at), true
    FROM rate_limit_hits GROUP BY organization_id, kind;
DROP TABLE rate_limit_counters;
DROP TABLE rate_limit_hits;

-- Slots of (organization, kind) that may lie in the window ending at p_now, and when the first of those
-- rows stops counting (oldest + window: X-RateLimit-Reset, Retry-After).
CREATE FUNCTION rate_limit_count(p_org text, p_kind text, p_now timestamptz, p_window interval,
                                 OUT used integer, OUT oldest timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT coalesce(sum(l.slots), 0)::integer, min(l.last_at) FROM rate_limit_leases l
   WHERE l.organization_id = p_org AND l.kind = p_kind AND l.last_at > p_now - p_window
$$;

-- A lease ends: it stands from now on for exactly the admissions made from it. Only ever lowers a row's
-- weight and narrows its span, so it needs no lock: whatever a concurrent grant counted stays an upper bound.
CREATE FUNCTION rate_limit_settle(p_lease bigint, p_used integer, p_first timestamptz, p_last timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  IF p_used <= 0 THEN
    DELETE FROM rate_limit_leases l WHERE l.id = p_lease;
  ELSE
    UPDATE rate_limit_leases l
       SET slots = least(l.slots, p_used), first_at = greatest(l.first_at, least(p_first, l.last_at)),
           last_at = least(l.last_at, greatest(p_last, l.first_at)), settled = true
     WHERE l.id = p_lease;
  END IF;
END $$;

-- Settles the caller's previous lease (p_settle_lease, if any) and grants up to p_want slots to be admitted
-- in [p_now, p_now + p_lease]: granted iff every slot counted in the window before p_now plus these stays
-- within the organization's limit. p_want = 0 only reports the state. The advisory lock serializes grants
-- per (organization, kind) across processes; it is held for one short statement per lease, not per request.
CREATE FUNCTION rate_limit_lease(p_org text, p_kind text, p_now timestamptz, p_window interval, p_lease interval,
                                 p_want integer, p_settle_lease bigint, p_settle_used integer,
                                 p_settle_first timestamptz, p_settle_last timestamptz,
                                 OUT lease_id bigint, OUT granted integer, OUT rate_limit integer,
                                 OUT used integer, OUT oldest timestamptz)
LANGUAGE plpgsql AS $$
BEGIN
  -- Bookkeeping, not money: a Postgres crash may forget the last moment's leases (see docs/edge.md).
  PERFORM set_config('synchronous_commit', 'off', true);
  IF p_settle_lease IS NOT NULL THEN
    PERFORM rate_limit_settle(p_settle_lease, p_settle_used, p_settle_first, p_settle_last);
  END IF;
  SELECT CASE WHEN p_kind = 'write' THEN o.rate_limit_write ELSE o.rate_limit_read END INTO rate_limit
    FROM organizations o WHERE o.id = p_org;
  IF p_want > 0 THEN
    PERFORM pg_advisory_xact_lock(hashtextextended('rate_limit:' || p_org || ':' || p_kind, 0));
  END IF;
  SELECT c.used, c.oldest INTO used, oldest FROM rate_limit_count(p_org, p_kind, p_now, p_window) c;
  granted := greatest(0, least(p_want, rate_limit - used));
  IF granted > 0 THEN
    INSERT INTO rate_limit_leases (organization_id, kind, slots, first_at, last_at)
    VALUES (p_org, p_kind, granted, p_now, p_now + p_lease) RETURNING id INTO lease_id;
  END IF;
END $$;

-- edge_admit (0009) keeps its meaning for processes of the previous release during a rolling upgrade:
-- one admission is a settled one-slot lease, counted together with every new process's leases.
CREATE OR REPLACE FUNCTION rate_limit_take(p_org text, p_kind text, p_now timestamptz, p_window interval, p_limit integer,
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

-- Authentication for a process whose cache does not hold the key (or whose cache is off): failed-auth limit
-- (SPEC §4) → key. Returns the organization and its allowlist for the process to check and cache. A failure is
-- recorded; the one that blocks its address is announced, so every process refuses that address's valid keys too.
-- failures: the address's failed authentications in the window, oldest first.
CREATE FUNCTION edge_authenticate(p_key_hash bytea, p_failure_bucket inet, p_now timestamptz, p_window interval,
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

-- Every change that can alter an admission decision tells the api processes which organization to forget.
-- A new key needs no message: no process holds an unknown key.
CREATE FUNCTION edge_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_org text;
BEGIN
  IF TG_LEVEL = 'STATEMENT' THEN
    PERFORM pg_notify('ledger_edge', jsonb_build_object('flush', TG_TABLE_NAME)::text);
    RETURN NULL;
  END IF;
  IF TG_TABLE_NAME = 'organizations' THEN
    v_org := CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END;
  ELSE
    v_org := CASE WHEN TG_OP = 'DELETE' THEN OLD.organization_id ELSE NEW.organization_id END;
    IF TG_OP = 'UPDATE' AND OLD.organization_id <> NEW.organization_id THEN
      PERFORM pg_notify('ledger_edge', jsonb_build_object('organization_id', OLD.organization_id)::text);
    END IF;
  END IF;
  PERFORM pg_notify('ledger_edge', jsonb_build_object('organization_id', v_org)::text);
  RETURN NULL;
END $$;

CREATE TRIGGER api_keys_edge_notify AFTER UPDATE OR DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION edge_notify_change();
CREATE TRIGGER organizations_edge_notify AFTER UPDATE OR DELETE ON organizations
  FOR EACH ROW EXECUTE FUNCTION edge_notify_change();
CREATE TRIGGER ip_allowlist_edge_notify AFTER INSERT OR UPDATE OR DELETE ON ip_allowlist
  FOR EACH ROW EXECUTE FUNCTION edge_notify_change();
CREATE TRIGGER api_keys_edge_notify_truncate AFTER TRUNCATE ON api_keys
  FOR EACH STATEMENT EXECUTE FUNCTION edge_notify_change();
CREATE TRIGGER organizations_edge_notify_truncate AFTER TRUNCATE ON organizations
  FOR EACH STATEMENT EXECUTE FUNCTION edge_notify_change();
CREATE TRIGGER ip_allowlist_edge_notify_truncate AFTER TRUNCATE ON ip_allowlist
  FOR EACH STATEMENT EXECUTE FUNCTION edge_notify_change();

-- Down Migration
DROP TRIGGER ip_allowlist_edge_notify_truncate ON ip_allowlist;
DROP TRIGGER organizations_edge_notify_truncate ON organizations;
DROP TRIGGER api_keys_edge_notify_truncate ON api_keys;
DROP TRIGGER ip_allowlist_edge_notify ON ip_allowlist;
DROP TRIGGER organizations_edge_notify ON organizations;
DROP TRIGGER api_keys_edge_notify ON api_keys;
DROP FUNCTION edge_notify_change;
DROP FUNCTION edge_authenticate;
DROP FUNCTION rate_limit_lease;
DROP FUNCTION rate_limit_settle;
CREATE TABLE rate_limit_hits (
  organization_id text NOT NULL REFERENCES organizations (id),
  kind            text NOT NULL CHECK (kind IN ('read', 'write')),
  admitted_at     timestamptz NOT NULL
);
CREATE INDEX rate_limit_hits_window ON rate_limit_hits (organization_id, kind, admitted_at);
-- Each settled lease comes back as its slots, all at its last admission: counted no shorter than before.
INSERT INTO rate_limit_hits (organization_id, kind, admitted_at)
  SELECT l.organization_id, l.kind, l.last_at FROM rate_limit_leases l, generate_series(1, l.slots);
CREATE TABLE rate_limit_counters (
  organization_id text NOT NULL REFERENCES organizations (id),
  kind            text NOT NULL CHECK (kind IN ('read', 'write')),
  used            integer NOT NULL CHECK (used >= 0),
  PRIMARY KEY (organization_id, kind)
);
INSERT INTO rate_limit_counters (organization_id, kind, used)
  SELECT organization_id, kind, count(*) FROM rate_limit_hits GROUP BY organization_id, kind;
CREATE OR REPLACE FUNCTION rate_limit_take(p_org text, p_kind text, p_now timestamptz, p_window interval, p_limit integer,
                                           p_consume boolean, OUT admitted boolean, OUT used integer, OUT oldest timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
  v_used integer;
  v_expired integer;
BEGIN
  SELECT c.used INTO v_used FROM rate_limit_counters c
   WHERE c.organization_id = p_org AND c.kind = p_kind FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO rate_limit_counters (organization_id, kind, used) VALUES (p_org, p_kind, 0) ON CONFLICT DO NOTHING;
    SELECT c.used INTO v_used FROM rate_limit_counters c
     WHERE c.organization_id = p_org AND c.kind = p_kind FOR UPDATE;
  END IF;
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
DROP FUNCTION rate_limit_count;
DROP TABLE rate_limit_leases;
