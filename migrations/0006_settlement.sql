-- Up Migration
-- Settlement (SPEC §10): one net transfer per (settlement account, window date). The invariants live in
-- the database, so no code path (a retried activity, a killed worker, an operator's psql) can break them:
--   * one transfer per (account, window_date)                       → UNIQUE below
--   * a transaction is in at most one transfer, ever                 → transactions_ledger() refuses to change
--     transfer_id once set (0005), and transactions_transfer_guard() lets a transaction join a transfer only
--     while that transfer is still being built in its creating database transaction
--   * a transfer's signed amount is exactly the net of its members   → transfers_net_check(), a deferred
--     constraint trigger checked at COMMIT of every transaction that touched the transfer
--   * a settled transfer has only settled members, a settled member a settled transfer → both guards.

CREATE TABLE transfers (
  id                text PRIMARY KEY CHECK (id ~ '^transfer_[A-Za-z0-9_-]{16,}$'),
  organization_id   text NOT NULL REFERENCES organizations (id),
  account_id        text NOT NULL REFERENCES accounts (id),
  -- Unsigned, as the API shows it; `direction` gives the sign (disbursement +, collection −).
  amount_cents      bigint NOT NULL CHECK (amount_cents >= 0),
  currency          text NOT NULL DEFAULT 'USD' CHECK (currency = 'USD'),
  direction         text NOT NULL CHECK (direction IN ('disbursement', 'collection')),
  status            text NOT NULL CHECK (status IN ('pending', 'settled')),
  -- The window this transfer closes: its members have date <= window_date.
  window_date       date NOT NULL,
  -- The settlement date: the Eastern calendar day on which the window closes and the transfer is sent.
  date              date NOT NULL,
  -- 0 only while the transfer is being built inside its creating database transaction (members may join
  -- only then); transfers_net_check() refuses to commit it at 0.
  transaction_count integer NOT NULL CHECK (transaction_count >= 0),
  created_at        timestamptz NOT NULL,
  -- When the transfer was handed to the payment rail (NULL for a 0 transfer, which moves no money).
  submitted_at      timestamptz,
  settled_at        timestamptz,
  CHECK ((status = 'settled') = (settled_at IS NOT NULL)),
  -- A collection always moves money; a net of exactly 0 is a 0 disbursement (SPEC §10).
  CHECK (direction = 'disbursement' OR amount_cents > 0),
  UNIQUE (account_id, window_date)
);
CREATE INDEX transfers_list ON transfers (organization_id, created_at DESC, id DESC);

-- A member's transfer exists; the ledger column (0005) predates this table.
ALTER TABLE transactions ADD CONSTRAINT transactions_transfer_fk FOREIGN KEY (transfer_id) REFERENCES transfers (id);
-- Members of one transfer in list order (GET /transfer/{id}, batched workflow notifications).
CREATE INDEX transactions_transfer_members ON transactions (transfer_id, created_at DESC, id DESC) WHERE transfer_id IS NOT NULL;
DROP INDEX transactions_by_transfer;

-- Transfers change in two ways only: while being built (count 0) amount/direction/count are filled in once;
-- afterwards only pending → settled. Nothing else ever changes and nothing is deleted.
CREATE FUNCTION transfers_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'transfers are never deleted' USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF NEW.id <> OLD.id OR NEW.organization_id <> OLD.organization_id OR NEW.account_id <> OLD.account_id
     OR NEW.currency <> OLD.currency OR NEW.window_date <> OLD.window_date OR NEW.date <> OLD.date
     OR NEW.created_at <> OLD.created_at THEN
    RAISE EXCEPTION 'transfer %: identity columns never change', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF OLD.transaction_count > 0 AND (NEW.amount_cents <> OLD.amount_cents OR NEW.direction <> OLD.direction
     OR NEW.transaction_count <> OLD.transaction_count) THEN
    RAISE EXCEPTION 'transfer %: amount, direction and members are fixed once built', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF OLD.status = 'settled' AND (NEW.status <> 'settled' OR NEW.settled_at <> OLD.settled_at) THEN
    RAISE EXCEPTION 'transfer %: settled is final', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.status = 'settled' AND OLD.status = 'pending' AND OLD.transaction_count = 0 THEN
    RAISE EXCEPTION 'transfer %: cannot settle before it is built', OLD.id USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER transfers_guard BEFORE UPDATE OR DELETE ON transfers FOR EACH ROW EXECUTE FUNCTION transfers_guard();

-- Checked at COMMIT: the transfer's signed amount is the exact net of its members (Σ cash_in − Σ cash_out),
-- its count is their number (at least one), and its members' statuses agree with its own.
CREATE FUNCTION transfers_net_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  t transfers;
  member_count bigint;
  net_cents bigint;
  signed_cents bigint;
  unsettled bigint;
  unbatched bigint;
BEGIN
  SELECT * INTO t FROM transfers WHERE id = NEW.id;
  SELECT count(*), coalesce(sum(CASE WHEN direction = 'cash_in' THEN amount_cents ELSE -amount_cents END), 0),
         count(*) FILTER (WHERE status <> 'settled'),
         count(*) FILTER (WHERE NOT ((direction = 'cash_in' AND status IN ('available', 'settled'))
                                  OR (direction = 'cash_out' AND status IN ('in_transfer', 'settled'))))
    INTO member_count, net_cents, unsettled, unbatched
    FROM transactions WHERE transfer_id = t.id;
  IF t.transaction_count < 1 OR member_count <> t.transaction_count THEN
    RAISE EXCEPTION 'transfer %: transaction_count % but % members', t.id, t.transaction_count, member_count
      USING ERRCODE = 'check_violation';
  END IF;
  signed_cents := CASE t.direction WHEN 'disbursement' THEN t.amount_cents ELSE -t.amount_cents END;
  IF net_cents <> signed_cents THEN
    RAISE EXCEPTION 'transfer %: % % is not the net % of its members', t.id, t.direction, t.amount_cents, net_cents
      USING ERRCODE = 'check_violation';
  END IF;
  IF unbatched > 0 OR (t.status = 'settled' AND unsettled > 0) THEN
    RAISE EXCEPTION 'transfer % (%): % members in a status that does not belong to it', t.id, t.status, unbatched + unsettled
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER transfers_net_check AFTER INSERT OR UPDATE ON transfers
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION transfers_net_check();

-- A transaction joins a transfer only while that transfer is being built (count 0: visible only inside its
-- creating database transaction), of its own account; it becomes settled only with its transfer settled.
-- Once per statement: a window assigns and settles its members in one statement each.
CREATE FUNCTION transactions_transfer_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  -- One aggregate pass (no LIMIT: with one, the planner loops old_rows per new row, quadratic in a window).
  SELECT count(*) FILTER (WHERE joined AND NOT joinable) AS bad_joins,
         min(id) FILTER (WHERE joined AND NOT joinable) AS bad_join_id,
         count(*) FILTER (WHERE settled_now AND NOT transfer_settled) AS bad_settles,
         min(id) FILTER (WHERE settled_now AND NOT transfer_settled) AS bad_settle_id
    INTO bad
    FROM (SELECT n.id,
                 n.transfer_id IS DISTINCT FROM o.transfer_id AS joined,
                 coalesce(tr.transaction_count = 0 AND tr.status = 'pending' AND tr.account_id = n.account_id, false) AS joinable,
                 n.status = 'settled' AND o.status <> 'settled' AS settled_now,
                 coalesce(tr.status = 'settled', false) AS transfer_settled
            FROM new_rows n JOIN old_rows o ON o.id = n.id LEFT JOIN transfers tr ON tr.id = n.transfer_id) x;
  IF bad.bad_joins > 0 THEN
    RAISE EXCEPTION 'transaction %: cannot join a transfer that is not being built for its account (% rows)', bad.bad_join_id, bad.bad_joins
      USING ERRCODE = 'check_violation';
  END IF;
  IF bad.bad_settles > 0 THEN
    RAISE EXCEPTION 'transaction %: settles only with its transfer settled (% rows)', bad.bad_settle_id, bad.bad_settles
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER transactions_transfer_guard AFTER UPDATE ON transactions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION transactions_transfer_guard();

-- The seed's TransferSummary of a transaction as the API shows it: set once the transaction is in_transfer
-- or settled; a batched cash_in stays `null` while available (seed's status table).
CREATE FUNCTION transfer_summary_json(p_status text, p_transfer_id text) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_status IN ('in_transfer', 'settled') THEN (
    SELECT jsonb_build_object(
      'id', tr.id, 'amount', tr.amount_cents, 'currency', tr.currency, 'direction', tr.direction,
      'created_at', to_char(tr.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'date', to_char(tr.date, 'YYYY-MM-DD'))
    FROM transfers tr WHERE tr.id = p_transfer_id) END
$$;

-- The seed's Transaction as the API shows it, for the transaction.status_changed events a window writes in
-- bulk (same shape as renderTransaction() in src/ledger/repo.ts).
CREATE FUNCTION transaction_json(t transactions) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'id', t.id, 'amount', t.amount_cents, 'direction', t.direction, 'currency', t.currency, 'status', t.status,
    'type', t.type, 'source_id', t.source_id, 'account_id', t.account_id,
    'created_at', to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'date', to_char(t.date, 'YYYY-MM-DD'),
    'transfer', transfer_summary_json(t.status, t.transfer_id))
$$;

-- Down Migration
DROP TRIGGER transactions_transfer_guard ON transactions;
DROP FUNCTION transactions_transfer_guard;
DROP FUNCTION transaction_json;
DROP FUNCTION transfer_summary_json;
ALTER TABLE transactions DROP CONSTRAINT transactions_transfer_fk;
DROP INDEX transactions_transfer_members;
CREATE INDEX transactions_by_transfer ON transactions (transfer_id) WHERE transfer_id IS NOT NULL;
DROP TABLE transfers;
DROP FUNCTION transfers_net_check;
DROP FUNCTION transfers_guard;
