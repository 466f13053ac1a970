-- Up Migration
-- SPEC §26: deposit and withdrawal limits per user, with a cooling-off on raises, and self-exclusion.

-- An organization's limits for users without their own value of that (direction, period). No row: none.
CREATE TABLE org_limit_defaults (
  organization_id text NOT NULL REFERENCES organizations (id),
  direction       text NOT NULL CHECK (direction IN ('cash_in', 'cash_out')),
  period          text NOT NULL CHECK (period IN ('day', 'week', 'month')),
  limit_cents     bigint NOT NULL CHECK (limit_cents >= 0),
  updated_at      timestamptz NOT NULL,
  PRIMARY KEY (organization_id, direction, period)
);

-- A user's own limit of one (direction, period); a row, even with limit_cents NULL (none), overrides the
-- organization's default. A raise waits: pending_effective_at says when pending_cents (NULL: no limit) takes
-- over, and readers treat a pending value whose time has come as the limit, so no timer has to apply it.
CREATE TABLE user_limits (
  user_id              text NOT NULL REFERENCES users (id),
  direction            text NOT NULL CHECK (direction IN ('cash_in', 'cash_out')),
  period               text NOT NULL CHECK (period IN ('day', 'week', 'month')),
  limit_cents          bigint CHECK (limit_cents >= 0),
  pending_cents        bigint CHECK (pending_cents >= 0),
  pending_effective_at timestamptz,
  updated_at           timestamptz NOT NULL,
  PRIMARY KEY (user_id, direction, period),
  CHECK (pending_effective_at IS NOT NULL OR pending_cents IS NULL)
);

-- What a user has used of each period, kept as counters (not a sum over history) so the check at approval
-- costs the same on a user's millionth intent as on the first. One row per (user, direction): the row is also
-- the lock that serializes a user's approvals (src/limits/repo.ts). A counter belongs to the period named
-- beside it; the first approval of a later period starts it again from zero. Fill factor leaves room for
-- the in-place (HOT) updates every approval makes.
CREATE TABLE user_limit_usage (
  user_id          text NOT NULL REFERENCES users (id),
  direction        text NOT NULL CHECK (direction IN ('cash_in', 'cash_out')),
  day              date NOT NULL,
  day_used_cents   bigint NOT NULL CHECK (day_used_cents >= 0),
  week             date NOT NULL CHECK (extract(isodow FROM week) = 1),
  week_used_cents  bigint NOT NULL CHECK (week_used_cents >= 0),
  month            date NOT NULL CHECK (extract(day FROM month) = 1),
  month_used_cents bigint NOT NULL CHECK (month_used_cents >= 0),
  PRIMARY KEY (user_id, direction)
) WITH (fillfactor = 80);

-- An intent declined for a limit says which one and how much of it was used.
ALTER TABLE intents ADD COLUMN decline_limit jsonb;
ALTER TABLE intents DROP CONSTRAINT intents_decline_category_check;
ALTER TABLE intents ADD CONSTRAINT intents_decline_category_check
  CHECK (decline_category IN ('user_not_enabled', 'card_expired', 'limit_exceeded'));
ALTER TABLE intents ADD CONSTRAINT intents_decline_limit_check
  CHECK ((decline_category IS NOT DISTINCT FROM 'limit_exceeded') = (decline_limit IS NOT NULL));

-- Self-exclusion: while self_excluded_until is set the user is suspended for it ('infinity': indefinitely).
ALTER TABLE users ADD COLUMN self_excluded_until timestamptz;
ALTER TABLE users ADD CONSTRAINT users_self_exclusion_suspended CHECK (self_excluded_until IS NULL OR status = 'suspended');

-- Each self-exclusion asked for. `status_before` is where its end returns the user. The workflow whose
-- durable timer ends it is started from temporal_commands, queued with this row (src/limits/commands.ts); an
-- indefinite one has no end and no workflow.
CREATE TABLE self_exclusions (
  id                  text PRIMARY KEY,
  organization_id     text NOT NULL REFERENCES organizations (id),
  user_id             text NOT NULL REFERENCES users (id),
  until               timestamptz NOT NULL,
  status_before       text NOT NULL CHECK (status_before IN ('enabled', 'suspended')),
  created_at          timestamptz NOT NULL,
  ended_at            timestamptz
);
CREATE INDEX self_exclusions_by_user ON self_exclusions (user_id, created_at DESC);

-- Nobody lifts a self-exclusion early: while it lasts, no writer (API, CLI, a hand-typed UPDATE) may change the
-- user's status or shorten it. Only its end, at or after `until`, clears it. The service refuses first with a
-- 409; this is the rule's backstop.
CREATE FUNCTION users_self_exclusion_guard() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.self_excluded_until IS NOT NULL AND OLD.self_excluded_until > now()
     AND (NEW.status IS DISTINCT FROM OLD.status
          OR NEW.self_excluded_until IS NULL OR NEW.self_excluded_until < OLD.self_excluded_until) THEN
    RAISE EXCEPTION 'user % is self-excluded until %', OLD.id, OLD.self_excluded_until
      USING ERRCODE = 'check_violation', CONSTRAINT = 'user_self_exclusion';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER users_self_exclusion_guard BEFORE UPDATE OF status, self_excluded_until ON users
  FOR EACH ROW EXECUTE FUNCTION users_self_exclusion_guard();

-- Down Migration
DROP TRIGGER users_self_exclusion_guard ON users;
DROP FUNCTION users_self_exclusion_guard;
DROP TABLE self_exclusions;
ALTER TABLE users DROP CONSTRAINT users_self_exclusion_suspended;
ALTER TABLE users DROP COLUMN self_excluded_until;
ALTER TABLE intents DROP CONSTRAINT intents_decline_limit_check;
ALTER TABLE intents DROP CONSTRAINT intents_decline_category_check;
ALTER TABLE intents ADD CONSTRAINT intents_decline_category_check CHECK (decline_category IN ('user_not_enabled', 'card_expired'));
ALTER TABLE intents DROP COLUMN decline_limit;
DROP TABLE user_limit_usage;
DROP TABLE user_limits;
DROP TABLE org_limit_defaults;
