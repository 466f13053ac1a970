-- Up Migration
-- End users of an organization (SPEC §6). Personal data kept to what payments need: the legal name,
-- address, email, birth date and phone for the rails and compliance; of the government id only its type,
-- last four digits and issuing state, never the full number.
CREATE TABLE users (
  id                  text PRIMARY KEY CHECK (id ~ '^user_[A-Za-z0-9_-]{16,}$'),
  organization_id     text NOT NULL REFERENCES organizations (id),
  tag                 text CHECK (length(tag) BETWEEN 1 AND 255),
  status              text NOT NULL CHECK (status IN ('created', 'enabled', 'suspended', 'disabled')),
  identity_verified   boolean NOT NULL,
  first_name          text NOT NULL CHECK (length(first_name) BETWEEN 1 AND 100),
  last_name           text NOT NULL CHECK (length(last_name) BETWEEN 1 AND 100),
  email               text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
  date_of_birth       date NOT NULL,
  phone_number        text CHECK (phone_number ~ '^\+[1-9][0-9]{1,14}$'),
  address             jsonb NOT NULL CHECK (jsonb_typeof(address) = 'object'),
  government_id_type  text NOT NULL CHECK (government_id_type IN ('passport', 'drivers_license', 'state_id', 'military_id', 'ssn')),
  government_id_last4 text NOT NULL CHECK (government_id_last4 ~ '^[0-9]{4}$'),
  government_id_state text CHECK (length(government_id_state) BETWEEN 1 AND 100),
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  -- A driver's licence or state id means nothing without the state that issued it.
  CONSTRAINT users_government_id_state_required
    CHECK (government_id_type NOT IN ('drivers_license', 'state_id') OR government_id_state IS NOT NULL)
);
-- The tag is the caller's own key for the user: unique per organization, forever (not just for the 24 h
-- the idempotency records live), so a late or racing repeat finds the original instead of a twin.
CREATE UNIQUE INDEX users_tag ON users (organization_id, tag) WHERE tag IS NOT NULL;
-- Keyset paging, newest first (SPEC §8), with and without the status filter.
CREATE INDEX users_list ON users (organization_id, created_at DESC, id DESC);
CREATE INDEX users_list_by_status ON users (organization_id, status, created_at DESC, id DESC);

-- The user lifecycle (SPEC §6): created → enabled; enabled ↔ suspended; any → disabled, which is final.
-- One definition, used by the guarded UPDATE in src/users/repo.ts and by the trigger below, so no code
-- path (a bug, a hand-written UPDATE in psql) can make a transition the spec does not have.
CREATE FUNCTION user_status_transition_allowed(p_from text, p_to text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT (p_from, p_to) IN (('created', 'enabled'), ('enabled', 'suspended'), ('suspended', 'enabled'),
                            ('created', 'disabled'), ('enabled', 'disabled'), ('suspended', 'disabled'))
$$;

-- Append-only: one row per status a user has ever entered, the first with from_status NULL.
CREATE TABLE user_status_history (
  seq             bigserial PRIMARY KEY,
  user_id         text NOT NULL REFERENCES users (id),
  organization_id text NOT NULL REFERENCES organizations (id),
  from_status     text CHECK (from_status IN ('created', 'enabled', 'suspended', 'disabled')),
  to_status       text NOT NULL CHECK (to_status IN ('created', 'enabled', 'suspended', 'disabled')),
  -- Who asked: 'api' (POST /user), 'cli' (operator), 'simulation' (sandbox), 'system' when unset.
  source          text NOT NULL CHECK (length(source) BETWEEN 1 AND 50),
  changed_at      timestamptz NOT NULL
);
CREATE INDEX user_status_history_by_user ON user_status_history (user_id, seq);

-- The history is written by the database itself, in the same transaction as the change, so it cannot be
-- forgotten. The writer names itself with `SET LOCAL ledger.status_source`.
CREATE FUNCTION users_status_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF NEW.organization_id IS DISTINCT FROM OLD.organization_id OR NEW.created_at IS DISTINCT FROM OLD.created_at
       OR NEW.tag IS DISTINCT FROM OLD.tag THEN
      RAISE EXCEPTION 'users.organization_id, tag and created_at never change' USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.status = OLD.status THEN
      RETURN NEW;
    END IF;
    IF NOT user_status_transition_allowed(OLD.status, NEW.status) THEN
      RAISE EXCEPTION 'user % may not go from % to %', OLD.id, OLD.status, NEW.status
        USING ERRCODE = 'check_violation', CONSTRAINT = 'user_status_transition';
    END IF;
    -- The writer may stamp the change with its own clock; a bare UPDATE gets the database's.
    IF NEW.updated_at = OLD.updated_at THEN
      NEW.updated_at := now();
    END IF;
  END IF;
  INSERT INTO user_status_history (user_id, organization_id, from_status, to_status, source, changed_at)
  VALUES (NEW.id, NEW.organization_id, CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END, NEW.status,
          coalesce(nullif(current_setting('ledger.status_source', true), ''), 'system'),
          CASE WHEN TG_OP = 'UPDATE' THEN NEW.updated_at ELSE NEW.created_at END);
  RETURN NEW;
END $$;

-- BEFORE UPDATE so a refused transition never reaches the row; AFTER INSERT because the first history
-- row references the user row. One function keeps the rule in one place.
CREATE TRIGGER users_status_guard_update BEFORE UPDATE ON users
  FOR EACH ROW EXECUTE FUNCTION users_status_guard();
CREATE TRIGGER users_status_history_insert AFTER INSERT ON users
  FOR EACH ROW EXECUTE FUNCTION users_status_guard();

CREATE FUNCTION user_status_history_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'user_status_history is append-only' USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER user_status_history_append_only BEFORE UPDATE OR DELETE ON user_status_history
  FOR EACH ROW EXECUTE FUNCTION user_status_history_append_only();

-- Down Migration
DROP TABLE user_status_history;
DROP TABLE users;
DROP FUNCTION user_status_history_append_only;
DROP FUNCTION users_status_guard;
DROP FUNCTION user_status_transition_allowed;
