-- Up Migration
-- The ledger core (SPEC §7, §8, §9): intents, transactions, their append-only status history and the
-- per-account balances. The rules live here, not only in the application: a transaction's status can only
-- move along the seed's table, and the history row and the balance effect of every change are written by
-- triggers in the same database transaction as the change itself, so no code path can move money without
-- leaving both behind.

CREATE TABLE intents (
  id               text PRIMARY KEY CHECK (id ~ '^intent_(sandbox|production)_[A-Za-z0-9_-]{16,}$'),
  organization_id  text NOT NULL REFERENCES organizations (id),
  account_id       text NOT NULL REFERENCES accounts (id),
  user_id          text NOT NULL REFERENCES users (id),
  idempotency_key  text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
  direction        text NOT NULL CHECK (direction IN ('cash_in', 'cash_out')),
  amount_cents     bigint NOT NULL CHECK (amount_cents >= 1),
  currency         text NOT NULL DEFAULT 'USD' CHECK (currency = 'USD'),
  approval_mode    text NOT NULL CHECK (approval_mode IN ('automatic', 'manual')),
  status           text NOT NULL CHECK (status IN ('pending', 'approved', 'declined', 'canceled')),
  decline_category text CHECK (decline_category IN ('user_not_enabled')),
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  -- Manual approval exists for withdrawals only: deposits are the user's own money arriving.
  CHECK (approval_mode = 'automatic' OR direction = 'cash_out'),
  CHECK ((status = 'declined') = (decline_category IS NOT NULL)),
  CHECK (status <> 'pending' OR approval_mode = 'manual')
);
CREATE INDEX intents_list ON intents (organization_id, created_at DESC, id DESC);

-- An intent decides once: pending → approved | declined | canceled; a decided intent never changes again.
CREATE FUNCTION intents_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id <> OLD.id OR NEW.organization_id <> OLD.organization_id OR NEW.account_id <> OLD.account_id
     OR NEW.user_id <> OLD.user_id OR NEW.direction <> OLD.direction OR NEW.amount_cents <> OLD.amount_cents
     OR NEW.approval_mode <> OLD.approval_mode OR NEW.created_at <> OLD.created_at THEN
    RAISE EXCEPTION 'intent %: only status may change', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.status <> OLD.status AND OLD.status <> 'pending' THEN
    RAISE EXCEPTION 'intent %: % is final', OLD.id, OLD.status USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER intents_guard BEFORE UPDATE ON intents FOR EACH ROW EXECUTE FUNCTION intents_guard();

CREATE TABLE transactions (
  id                  text PRIMARY KEY CHECK (id ~ '^txn_[A-Za-z0-9_-]{16,}$'),
  organization_id     text NOT NULL REFERENCES organizations (id),
  account_id          text NOT NULL REFERENCES accounts (id),
  direction           text NOT NULL CHECK (direction IN ('cash_in', 'cash_out')),
  type                text NOT NULL CHECK (type IN ('intent', 'refund', 'dispute')),
  source_id           text,
  amount_cents        bigint NOT NULL CHECK (amount_cents >= 0),
  currency            text NOT NULL DEFAULT 'USD' CHECK (currency = 'USD'),
  status              text NOT NULL CHECK (status IN ('pending', 'available', 'in_transfer', 'settled')),
  -- The Eastern-time settlement window (with SETTLEMENT_CUTOFF) in which the transaction was recorded.
  date                date NOT NULL,
  -- Filled by the settlement feature: the one transfer this transaction belongs to, ever.
  transfer_id         text CHECK (transfer_id ~ '^transfer_[A-Za-z0-9_-]{16,}$'),
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  -- Set once Temporal accepted the workflow start (api after commit, or the reconciler); NULL rows older than a few seconds are started
  -- by the reconciler (SPEC §9: no accepted transaction without its workflow).
  workflow_started_at timestamptz,
  CHECK (status <> 'available' OR direction = 'cash_in'),
  CHECK (status <> 'in_transfer' OR direction = 'cash_out'),
  CHECK (status <> 'pending' OR transfer_id IS NULL),
  CHECK (status NOT IN ('in_transfer', 'settled') OR transfer_id IS NOT NULL)
);
CREATE INDEX transactions_list ON transactions (organization_id, created_at DESC, id DESC);
CREATE INDEX transactions_by_source ON transactions (source_id, created_at);
CREATE INDEX transactions_by_transfer ON transactions (transfer_id) WHERE transfer_id IS NOT NULL;
-- What a settlement window picks up: per account and date, rows not yet in any transfer.
CREATE INDEX transactions_unbatched ON transactions (account_id, date, status) WHERE transfer_id IS NULL;
CREATE INDEX transactions_without_workflow ON transactions (created_at) WHERE workflow_started_at IS NULL;

-- Append-only: one row per status a transaction reached, written by the trigger below.
CREATE TABLE transaction_status_history (
  id              bigserial PRIMARY KEY,
  transaction_id  text NOT NULL REFERENCES transactions (id),
  organization_id text NOT NULL REFERENCES organizations (id),
  from_status     text CHECK (from_status IN ('pending', 'available', 'in_transfer')),
  to_status       text NOT NULL CHECK (to_status IN ('pending', 'available', 'in_transfer', 'settled')),
  transfer_id     text,
  changed_at      timestamptz NOT NULL,
  -- Each status is reached at most once: (transaction, target status) is the transition's identity.
  UNIQUE (transaction_id, to_status)
);

CREATE FUNCTION transaction_status_history_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'transaction_status_history is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER transaction_status_history_append_only BEFORE UPDATE OR DELETE ON transaction_status_history
  FOR EACH ROW EXECUTE FUNCTION transaction_status_history_append_only();
CREATE TRIGGER transaction_status_history_no_truncate BEFORE TRUNCATE ON transaction_status_history
  FOR EACH STATEMENT EXECUTE FUNCTION transaction_status_history_append_only();

-- Balances per settlement account, in cents (SPEC §7). Each transaction contributes to exactly one bucket
-- according to (direction, status, in a transfer or not), see ledger_contribution():
--   pending     = Σ cash_in pending                                     (funds not yet confirmed)
--   available   = Σ cash_in available not in a transfer − Σ cash_out pending
--                 (what the next transfer would net; negative means the next transfer collects)
--   in_transfer = Σ cash_in available in a transfer − Σ cash_out in_transfer
--                 (the signed net of transfers not yet settled)
-- settled rows contribute to none; they are totalled in settled_in_cents / settled_out_cents.
-- Each account's balances are kept in BALANCE_SLOTS (16) rows, and a database transaction adds its effect to
-- one slot picked by its transaction id; the balance is the sum of the slots (account_balance_totals). One
-- row per account would be a lock every money movement on the account queues behind, held from the
-- transaction's insert to its commit flush: all writes to an account would run one at a time.
CREATE TABLE account_balances (
  account_id        text NOT NULL REFERENCES accounts (id),
  slot              smallint NOT NULL CHECK (slot BETWEEN 0 AND 15),
  organization_id   text NOT NULL REFERENCES organizations (id),
  pending_cents     bigint NOT NULL DEFAULT 0,
  available_cents   bigint NOT NULL DEFAULT 0,
  in_transfer_cents bigint NOT NULL DEFAULT 0,
  settled_in_cents  bigint NOT NULL DEFAULT 0,
  settled_out_cents bigint NOT NULL DEFAULT 0,
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, slot)
);

CREATE VIEW account_balance_totals AS
  SELECT account_id, min(organization_id) AS organization_id,
         sum(pending_cents)::bigint AS pending_cents, sum(available_cents)::bigint AS available_cents,
         sum(in_transfer_cents)::bigint AS in_transfer_cents, sum(settled_in_cents)::bigint AS settled_in_cents,
         sum(settled_out_cents)::bigint AS settled_out_cents, max(updated_at) AS updated_at
    FROM account_balances GROUP BY account_id;

-- The slot of the current database transaction: every statement of one transaction uses the same slot, so a
-- transaction holds at most one balance row per account and two transactions cannot lock slots in turn.
CREATE FUNCTION balance_slot() RETURNS smallint LANGUAGE sql VOLATILE AS $$
  SELECT (hashtext(txid_current()::text) & 15)::smallint
$$;

CREATE FUNCTION ledger_contribution(p_direction text, p_status text, p_in_transfer boolean, p_amount bigint,
  OUT pending bigint, OUT available bigint, OUT in_transfer bigint, OUT settled_in bigint, OUT settled_out bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  pending := 0; available := 0; in_transfer := 0; settled_in := 0; settled_out := 0;
  IF p_direction = 'cash_in' THEN
    IF p_status = 'pending' THEN pending := p_amount;
    ELSIF p_status = 'available' AND NOT p_in_transfer THEN available := p_amount;
    ELSIF p_status = 'available' THEN in_transfer := p_amount;
    ELSIF p_status = 'settled' THEN settled_in := p_amount;
    END IF;
  ELSE
    IF p_status = 'pending' THEN available := -p_amount;
    ELSIF p_status = 'in_transfer' THEN in_transfer := -p_amount;
    ELSIF p_status = 'settled' THEN settled_out := p_amount;
    END IF;
  END IF;
END $$;

-- The only transitions there are (the seed's table), and the history and balance effect of each.
CREATE FUNCTION transactions_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  legal boolean;
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF NEW.status <> 'pending' THEN
      RAISE EXCEPTION 'transaction %: recorded as %, must start pending', NEW.id, NEW.status USING ERRCODE = 'check_violation';
    END IF;
    INSERT INTO transaction_status_history (transaction_id, organization_id, from_status, to_status, transfer_id, changed_at)
    VALUES (NEW.id, NEW.organization_id, NULL, 'pending', NULL, NEW.created_at);
    -- The balance effect is applied once per statement (transactions_balances_*), see below.
    RETURN NEW;
  END IF;

  IF NEW.id <> OLD.id OR NEW.organization_id <> OLD.organization_id OR NEW.account_id <> OLD.account_id
     OR NEW.direction <> OLD.direction OR NEW.type <> OLD.type OR NEW.source_id IS DISTINCT FROM OLD.source_id
     OR NEW.amount_cents <> OLD.amount_cents OR NEW.currency <> OLD.currency OR NEW.date <> OLD.date
     OR NEW.created_at <> OLD.created_at THEN
    RAISE EXCEPTION 'transaction %: only status, transfer_id and bookkeeping columns may change', OLD.id
      USING ERRCODE = 'check_violation';
  END IF;
  -- A transaction is in at most one transfer, ever.
  IF OLD.transfer_id IS NOT NULL AND NEW.transfer_id IS DISTINCT FROM OLD.transfer_id THEN
    RAISE EXCEPTION 'transaction %: already in transfer %', OLD.id, OLD.transfer_id USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.status <> OLD.status THEN
    legal := (OLD.direction = 'cash_in' AND OLD.status = 'pending' AND NEW.status = 'available')
          OR (OLD.direction = 'cash_in' AND OLD.status = 'available' AND NEW.status = 'settled')
          OR (OLD.direction = 'cash_out' AND OLD.status = 'pending' AND NEW.status = 'in_transfer')
          OR (OLD.direction = 'cash_out' AND OLD.status = 'in_transfer' AND NEW.status = 'settled');
    IF NOT legal THEN
      RAISE EXCEPTION 'transaction %: % cannot go from % to %', OLD.id, OLD.direction, OLD.status, NEW.status
        USING ERRCODE = 'check_violation';
    END IF;
    INSERT INTO transaction_status_history (transaction_id, organization_id, from_status, to_status, transfer_id, changed_at)
    -- The writer's clock when it stamped updated_at (the api and activities do), else the database's.
    VALUES (NEW.id, NEW.organization_id, OLD.status, NEW.status, NEW.transfer_id,
            CASE WHEN NEW.updated_at IS DISTINCT FROM OLD.updated_at THEN NEW.updated_at ELSE now() END);
  END IF;
  RETURN NEW;
END $$;
-- AFTER: the history row references the transaction, which must exist by then.
CREATE TRIGGER transactions_ledger AFTER INSERT OR UPDATE ON transactions FOR EACH ROW EXECUTE FUNCTION transactions_ledger();

-- The balance effect of every INSERT/UPDATE statement, applied once per statement and account from the
-- statement's transition tables, in the same database transaction. Once per statement, not per row: a
-- settlement window moves up to hundreds of thousands of rows of ONE account in one statement, and a
-- per-row UPDATE of the same account_balances row leaves a dead version per row that every later update
-- in that transaction walks past (quadratic: moving 40,000 rows took 32 s that way, 5 s per statement).
-- Accounts are locked in id order, so two statements touching several accounts cannot deadlock.
-- Adds one statement's effect on one account to the current transaction's balance slot.
CREATE FUNCTION account_balances_add(p_account text, p_organization text, p_pending bigint, p_available bigint,
                                     p_in_transfer bigint, p_settled_in bigint, p_settled_out bigint)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO account_balances AS b (account_id, slot, organization_id, pending_cents, available_cents, in_transfer_cents,
                                     settled_in_cents, settled_out_cents, updated_at)
  VALUES (p_account, balance_slot(), p_organization, p_pending, p_available, p_in_transfer, p_settled_in, p_settled_out, now())
  ON CONFLICT (account_id, slot) DO UPDATE SET
    pending_cents = b.pending_cents + EXCLUDED.pending_cents,
    available_cents = b.available_cents + EXCLUDED.available_cents,
    in_transfer_cents = b.in_transfer_cents + EXCLUDED.in_transfer_cents,
    settled_in_cents = b.settled_in_cents + EXCLUDED.settled_in_cents,
    settled_out_cents = b.settled_out_cents + EXCLUDED.settled_out_cents,
    updated_at = now()
$$;

CREATE FUNCTION transactions_balances_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d record;
BEGIN
  FOR d IN
    SELECT n.account_id, min(n.organization_id) AS organization_id, sum(c.pending)::bigint AS pending, sum(c.available)::bigint AS available,
           sum(c.in_transfer)::bigint AS in_transfer, sum(c.settled_in)::bigint AS settled_in, sum(c.settled_out)::bigint AS settled_out
      FROM new_rows n, LATERAL ledger_contribution(n.direction, n.status, n.transfer_id IS NOT NULL, n.amount_cents) c
     GROUP BY n.account_id
     ORDER BY n.account_id
  LOOP
    PERFORM account_balances_add(d.account_id, d.organization_id, d.pending, d.available, d.in_transfer, d.settled_in, d.settled_out);
  END LOOP;
  RETURN NULL;
END $$;
CREATE TRIGGER transactions_balances_insert AFTER INSERT ON transactions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION transactions_balances_insert();

CREATE FUNCTION transactions_balances_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d record;
BEGIN
  FOR d IN
    SELECT n.account_id, min(n.organization_id) AS organization_id, sum(c.pending - w.pending)::bigint AS pending,
           sum(c.available - w.available)::bigint AS available, sum(c.in_transfer - w.in_transfer)::bigint AS in_transfer,
           sum(c.settled_in - w.settled_in)::bigint AS settled_in, sum(c.settled_out - w.settled_out)::bigint AS settled_out
      FROM new_rows n JOIN old_rows o ON o.id = n.id,
           LATERAL ledger_contribution(o.direction, o.status, o.transfer_id IS NOT NULL, o.amount_cents) w,
           LATERAL ledger_contribution(n.direction, n.status, n.transfer_id IS NOT NULL, n.amount_cents) c
     WHERE n.status <> o.status OR n.transfer_id IS DISTINCT FROM o.transfer_id
     GROUP BY n.account_id
     ORDER BY n.account_id
  LOOP
    PERFORM account_balances_add(d.account_id, d.organization_id, d.pending, d.available, d.in_transfer, d.settled_in, d.settled_out);
  END LOOP;
  RETURN NULL;
END $$;
CREATE TRIGGER transactions_balances_update AFTER UPDATE ON transactions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION transactions_balances_update();

CREATE FUNCTION transactions_no_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'transactions are never deleted' USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER transactions_no_delete BEFORE DELETE ON transactions FOR EACH ROW EXECUTE FUNCTION transactions_no_delete();

-- Down Migration
DROP VIEW account_balance_totals;
DROP TABLE account_balances;
DROP FUNCTION balance_slot;
DROP TABLE transaction_status_history;
DROP TABLE transactions;
DROP TABLE intents;
DROP FUNCTION transactions_no_delete;
DROP FUNCTION transactions_balances_update;
DROP FUNCTION transactions_balances_insert;
DROP FUNCTION account_balances_add;
DROP FUNCTION transactions_ledger;
DROP FUNCTION ledger_contribution;
DROP FUNCTION transaction_status_history_append_only;
DROP FUNCTION intents_guard;
