-- Up Migration
-- Refunds, disputes and payment tokens (SPEC §11). As in the ledger, the money rules live in the database
-- as well as in the application: the amounts returned from one intent (refunds plus disputes the operator
-- has not won) never exceed the intent, checked under a lock on the intent row so concurrent requests
-- cannot both pass; a dispute decides once; a token is used once. Tokens keep only masked card or bank
-- details (last four digits, brand or bank): the full numbers are never written anywhere.

-- An authorization whose card expired between tokenization and authorization is declined, not refused.
ALTER TABLE intents DROP CONSTRAINT intents_decline_category_check;
ALTER TABLE intents ADD CONSTRAINT intents_decline_category_check CHECK (decline_category IN ('user_not_enabled', 'card_expired'));

CREATE TABLE refunds (
  id              text PRIMARY KEY CHECK (id ~ '^refund_[A-Za-z0-9_-]{16,}$'),
  organization_id text NOT NULL REFERENCES organizations (id),
  intent_id       text NOT NULL REFERENCES intents (id),
  account_id      text NOT NULL REFERENCES accounts (id),
  amount_cents    bigint NOT NULL CHECK (amount_cents >= 1),
  currency        text NOT NULL DEFAULT 'USD' CHECK (currency = 'USD'),
  created_at      timestamptz NOT NULL
);
CREATE INDEX refunds_list ON refunds (organization_id, created_at DESC, id DESC);
CREATE INDEX refunds_by_intent ON refunds (intent_id);

CREATE TABLE disputes (
  id              text PRIMARY KEY CHECK (id ~ '^dispute_[A-Za-z0-9_-]{16,}$'),
  organization_id text NOT NULL REFERENCES organizations (id),
  -- The network disputes a payment once.
  intent_id       text NOT NULL UNIQUE REFERENCES intents (id),
  account_id      text NOT NULL REFERENCES accounts (id),
  amount_cents    bigint NOT NULL CHECK (amount_cents >= 1),
  currency        text NOT NULL DEFAULT 'USD' CHECK (currency = 'USD'),
  -- The network's reason code (ACH return code such as R10, card reason code such as 10.4).
  code            text NOT NULL CHECK (code ~ '^[A-Za-z0-9._-]{1,32}$'),
  status          text NOT NULL CHECK (status IN ('created', 'won', 'lost')),
  created_at      timestamptz NOT NULL,
  resolved_at     timestamptz,
  CHECK ((status = 'created') = (resolved_at IS NULL))
);
CREATE INDEX disputes_list ON disputes (organization_id, created_at DESC, id DESC);

-- What has left the intent: every refund, and every dispute except one the operator won (its funds came back).
CREATE FUNCTION intent_returned_cents(p_intent_id text) RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT (SELECT coalesce(sum(amount_cents), 0) FROM refunds WHERE intent_id = p_intent_id)
       + (SELECT coalesce(sum(amount_cents), 0) FROM disputes WHERE intent_id = p_intent_id AND status <> 'won')
$$;

-- Refunds and disputes draw on an approved cash_in intent, never beyond its amount. The intent row lock
-- serializes every such insert for one intent; the sum is read after the lock, so it includes every
-- committed competitor.
CREATE FUNCTION intent_draw_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  i record;
  returned bigint;
BEGIN
  SELECT organization_id, account_id, direction, status, amount_cents INTO i FROM intents WHERE id = NEW.intent_id FOR UPDATE;
  IF NOT FOUND OR i.organization_id <> NEW.organization_id OR i.account_id <> NEW.account_id THEN
    RAISE EXCEPTION '%: intent % is not this organization''s or account''s', NEW.id, NEW.intent_id USING ERRCODE = 'check_violation';
  END IF;
  IF i.direction <> 'cash_in' OR i.status <> 'approved' THEN
    RAISE EXCEPTION '%: intent % is a % %, only approved cash_in can be returned', NEW.id, NEW.intent_id, i.status, i.direction
      USING ERRCODE = 'check_violation';
  END IF;
  returned := intent_returned_cents(NEW.intent_id);
  IF returned + NEW.amount_cents > i.amount_cents THEN
    RAISE EXCEPTION '%: % cents would return % of intent % (amount %)', NEW.id, NEW.amount_cents, returned + NEW.amount_cents,
      NEW.intent_id, i.amount_cents USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER refunds_draw_guard BEFORE INSERT ON refunds FOR EACH ROW EXECUTE FUNCTION intent_draw_guard();
CREATE TRIGGER disputes_draw_guard BEFORE INSERT ON disputes FOR EACH ROW EXECUTE FUNCTION intent_draw_guard();

-- A refund is a fact: never changed, never removed.
CREATE FUNCTION refunds_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'refunds are immutable (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER refunds_immutable BEFORE UPDATE OR DELETE ON refunds FOR EACH ROW EXECUTE FUNCTION refunds_immutable();

-- A dispute decides once: created → won | lost; nothing else about it changes, and it is never removed.
CREATE FUNCTION disputes_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'disputes are never deleted' USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF NEW.id <> OLD.id OR NEW.organization_id <> OLD.organization_id OR NEW.intent_id <> OLD.intent_id
     OR NEW.account_id <> OLD.account_id OR NEW.amount_cents <> OLD.amount_cents OR NEW.code <> OLD.code
     OR NEW.created_at <> OLD.created_at THEN
    RAISE EXCEPTION 'dispute %: only status and resolved_at may change', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.status <> OLD.status AND NOT (OLD.status = 'created' AND NEW.status IN ('won', 'lost')) THEN
    RAISE EXCEPTION 'dispute %: cannot go from % to %', OLD.id, OLD.status, NEW.status USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER disputes_guard BEFORE UPDATE OR DELETE ON disputes FOR EACH ROW EXECUTE FUNCTION disputes_guard();

CREATE TABLE payment_tokens (
  id              text PRIMARY KEY CHECK (id ~ '^token_[A-Za-z0-9_-]{16,}$'),
  organization_id text NOT NULL REFERENCES organizations (id),
  user_id         text NOT NULL REFERENCES users (id),
  type            text NOT NULL CHECK (type IN ('bank_account', 'card')),
  -- Masked forms only. bank_name is null when the routing number is not in the built-in directory.
  last4           text NOT NULL CHECK (last4 ~ '^[0-9]{4}$'),
  bank_name       text CHECK (length(bank_name) <= 100),
  card_brand      text CHECK (card_brand IN ('visa', 'mastercard', 'amex', 'discover', 'diners', 'jcb', 'unionpay', 'unknown')),
  exp_month       smallint CHECK (exp_month BETWEEN 1 AND 12),
  exp_year        smallint CHECK (exp_year BETWEEN 2000 AND 2100),
  expires_at      timestamptz NOT NULL,
  used_at         timestamptz,
  -- The authorization (intent) that used it.
  intent_id       text REFERENCES intents (id),
  created_at      timestamptz NOT NULL,
  CHECK (expires_at > created_at),
  CHECK ((used_at IS NULL) = (intent_id IS NULL)),
  CHECK (type <> 'card' OR (card_brand IS NOT NULL AND exp_month IS NOT NULL AND exp_year IS NOT NULL AND bank_name IS NULL)),
  CHECK (type <> 'bank_account' OR (card_brand IS NULL AND exp_month IS NULL AND exp_year IS NULL))
);
CREATE INDEX payment_tokens_list ON payment_tokens (organization_id, created_at DESC, id DESC);

-- Single use: once used, a token never changes again.
CREATE FUNCTION payment_tokens_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.used_at IS NOT NULL THEN
    RAISE EXCEPTION 'token % was already used', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.id <> OLD.id OR NEW.organization_id <> OLD.organization_id OR NEW.user_id <> OLD.user_id OR NEW.type <> OLD.type
     OR NEW.last4 <> OLD.last4 OR NEW.expires_at <> OLD.expires_at OR NEW.created_at <> OLD.created_at THEN
    RAISE EXCEPTION 'token %: only its use may be recorded', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER payment_tokens_guard BEFORE UPDATE ON payment_tokens FOR EACH ROW EXECUTE FUNCTION payment_tokens_guard();

-- Down Migration
DROP TABLE payment_tokens;
DROP FUNCTION payment_tokens_guard;
DROP TABLE disputes;
DROP TABLE refunds;
DROP FUNCTION disputes_guard;
DROP FUNCTION refunds_immutable;
DROP FUNCTION intent_draw_guard;
DROP FUNCTION intent_returned_cents;
ALTER TABLE intents DROP CONSTRAINT intents_decline_category_check;
ALTER TABLE intents ADD CONSTRAINT intents_decline_category_check CHECK (decline_category IN ('user_not_enabled'));
