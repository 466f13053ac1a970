-- Up Migration
-- SPEC §25 a returned credit to a user (the PPD credit of a cash_out, or of a refund) puts the money back: a
-- dispute `won` with one cash_in `dispute` transaction (no cash_out: the money never reached the user), which
-- nets into the next window like any cash_in. A returned debit stays a `lost` dispute with its cash_out.
-- Both name the returned entry, so the database itself holds "one dispute per returned entry, ever".
--
-- What a returned credit dispute is, in the money rules of 0007:
--   * it draws nothing from its intent: it is not a refund and not a chargeback. It names the intent the
--     credit paid (the cash_out intent, or the cash_in intent a refund returned money from);
--   * a returned REFUND credit gives its amount back to the intent: the refund never reached the user, so
--     what has left the intent is that much less (intent_returned_cents), and a later return of the original
--     debit takes the whole deposit back, not only what the refund left;
--   * an intent has at most one dispute of its own (a chargeback or a returned debit) and any number of
--     returned credits (one per refund), each once.

ALTER TABLE disputes ADD COLUMN ach_entry_id text UNIQUE REFERENCES ach_entries (id);
ALTER TABLE disputes ADD COLUMN returns_credit boolean NOT NULL DEFAULT false;
ALTER TABLE disputes ADD CONSTRAINT disputes_credit_names_entry CHECK (NOT returns_credit OR ach_entry_id IS NOT NULL);
ALTER TABLE disputes DROP CONSTRAINT disputes_intent_id_key;
CREATE UNIQUE INDEX disputes_one_per_intent ON disputes (intent_id) WHERE NOT returns_credit;

-- What has left the intent: every refund, every dispute of its own except one the operator won (its funds came
-- back), less every refund credit the bank returned (won at birth: that refund's money is back).
CREATE OR REPLACE FUNCTION intent_returned_cents(p_intent_id text) RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT (SELECT coalesce(sum(amount_cents), 0) FROM refunds WHERE intent_id = p_intent_id)
       + (SELECT coalesce(sum(CASE WHEN returns_credit THEN -amount_cents ELSE amount_cents END), 0) FROM disputes
           WHERE intent_id = p_intent_id AND CASE WHEN returns_credit THEN status = 'won' ELSE status <> 'won' END)
$$;

-- 0007's guard, and for a dispute naming a returned entry: a returned debit is the PPD debit (27, 37) of the
-- intent's own cash_in; a returned credit is a returned PPD credit (22, 32) of exactly its amount, paying the
-- cash_out of this (approved cash_out) intent or a refund of this intent. A returned credit draws nothing.
CREATE OR REPLACE FUNCTION intent_draw_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  i record;
  returned bigint;
BEGIN
  SELECT organization_id, account_id, direction, status, amount_cents INTO i FROM intents WHERE id = NEW.intent_id FOR UPDATE;
  IF NOT FOUND OR i.organization_id <> NEW.organization_id OR i.account_id <> NEW.account_id THEN
    RAISE EXCEPTION '%: intent % is not this organization''s or account''s', NEW.id, NEW.intent_id USING ERRCODE = 'check_violation';
  END IF;
  -- Nested, not AND: a refunds row has no ach_entry_id, and plpgsql evaluates every field an expression names.
  IF TG_TABLE_NAME = 'disputes' THEN
    IF NEW.returns_credit THEN
      PERFORM 1 FROM ach_entries e JOIN transactions t ON t.id = e.transaction_id
                LEFT JOIN refunds r ON t.type = 'refund' AND r.id = t.source_id
       WHERE e.id = NEW.ach_entry_id AND e.transaction_code IN (22, 32) AND e.status = 'returned'
         AND e.organization_id = NEW.organization_id AND e.account_id = NEW.account_id AND e.amount_cents = NEW.amount_cents
         AND i.status = 'approved'
         AND ((t.type = 'intent' AND t.source_id = NEW.intent_id AND i.direction = 'cash_out') OR (t.type = 'refund' AND r.intent_id = NEW.intent_id));
      IF NOT FOUND THEN
        RAISE EXCEPTION '%: entry % is not a returned credit of % cents paying intent % or its refunds', NEW.id, NEW.ach_entry_id,
          NEW.amount_cents, NEW.intent_id USING ERRCODE = 'check_violation';
      END IF;
      RETURN NEW;
    END IF;
    IF NEW.ach_entry_id IS NOT NULL THEN
      PERFORM 1 FROM ach_entries e JOIN transactions t ON t.id = e.transaction_id
       WHERE e.id = NEW.ach_entry_id AND e.transaction_code IN (27, 37) AND t.type = 'intent' AND t.source_id = NEW.intent_id;
      IF NOT FOUND THEN
        RAISE EXCEPTION '%: entry % is not the debit of intent %', NEW.id, NEW.ach_entry_id, NEW.intent_id USING ERRCODE = 'check_violation';
      END IF;
    END IF;
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

-- A dispute decides once (0007); what it returns (its entry, debit or credit) never changes either.
CREATE OR REPLACE FUNCTION disputes_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'disputes are never deleted' USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF NEW.id <> OLD.id OR NEW.organization_id <> OLD.organization_id OR NEW.intent_id <> OLD.intent_id
     OR NEW.account_id <> OLD.account_id OR NEW.amount_cents <> OLD.amount_cents OR NEW.code <> OLD.code
     OR NEW.created_at <> OLD.created_at OR NEW.ach_entry_id IS DISTINCT FROM OLD.ach_entry_id
     OR NEW.returns_credit <> OLD.returns_credit THEN
    RAISE EXCEPTION 'dispute %: only status and resolved_at may change', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.status <> OLD.status AND NOT (OLD.status = 'created' AND NEW.status IN ('won', 'lost')) THEN
    RAISE EXCEPTION 'dispute %: cannot go from % to %', OLD.id, OLD.status, NEW.status USING ERRCODE = 'check_violation';
  END IF;
  -- A returned credit is the bank giving the money back: it can only be won.
  IF NEW.returns_credit AND NEW.status = 'lost' THEN
    RAISE EXCEPTION 'dispute %: a returned credit is won, never lost', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

-- Down Migration
CREATE OR REPLACE FUNCTION disputes_guard() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE OR REPLACE FUNCTION intent_draw_guard() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE OR REPLACE FUNCTION intent_returned_cents(p_intent_id text) RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT (SELECT coalesce(sum(amount_cents), 0) FROM refunds WHERE intent_id = p_intent_id)
       + (SELECT coalesce(sum(amount_cents), 0) FROM disputes WHERE intent_id = p_intent_id AND status <> 'won')
$$;
DROP INDEX disputes_one_per_intent;
ALTER TABLE disputes ADD CONSTRAINT disputes_intent_id_key UNIQUE (intent_id);
ALTER TABLE disputes DROP CONSTRAINT disputes_credit_names_entry;
ALTER TABLE disputes DROP COLUMN returns_credit;
ALTER TABLE disputes DROP COLUMN ach_entry_id;
