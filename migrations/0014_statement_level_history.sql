-- Up Migration
-- The transactions table's legality checks and status history, once per statement from its transition
-- tables (as the balance and transfer-guard triggers already are) instead of once per row: a settlement
-- window moves up to hundreds of thousands of rows in one statement, and a row trigger that inserts one
-- history row per call cost 3-4x the statement's own writes. The rules are the same as 0005's
-- transactions_ledger, which this replaces; the messages are too.
DROP TRIGGER IF EXISTS transactions_ledger ON transactions;
DROP FUNCTION IF EXISTS transactions_ledger();

CREATE FUNCTION transactions_history_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  -- One aggregate pass: transition tables have no statistics, so a LIMIT here could plan a loop per row.
  SELECT count(*) FILTER (WHERE status <> 'pending') AS n, min(id) FILTER (WHERE status <> 'pending') AS id,
         min(status) FILTER (WHERE status <> 'pending') AS status
    INTO bad FROM new_rows;
  IF bad.n > 0 THEN
    RAISE EXCEPTION 'transaction %: recorded as %, must start pending', bad.id, bad.status USING ERRCODE = 'check_violation';
  END IF;
  INSERT INTO transaction_status_history (transaction_id, organization_id, from_status, to_status, transfer_id, changed_at)
  SELECT id, organization_id, NULL, 'pending', NULL, created_at FROM new_rows;
  RETURN NULL;
END $$;
CREATE TRIGGER transactions_history_insert AFTER INSERT ON transactions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION transactions_history_insert();

-- The only transitions there are (the seed's table; src/ledger/contract.ts TRANSITIONS is the same), and
-- the history row of each.
CREATE FUNCTION transactions_history_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  SELECT count(*) FILTER (WHERE n_id IS NULL) AS lost, min(o_id) FILTER (WHERE n_id IS NULL) AS lost_id,
         count(*) FILTER (WHERE immutable_changed) AS frozen, min(o_id) FILTER (WHERE immutable_changed) AS frozen_id,
         count(*) FILTER (WHERE transfer_moved) AS moved, min(o_id) FILTER (WHERE transfer_moved) AS moved_id,
         min(o_transfer) FILTER (WHERE transfer_moved) AS moved_from,
         count(*) FILTER (WHERE illegal) AS illegal, min(o_id || ': ' || o_direction || ' cannot go from ' || o_status || ' to ' || n_status)
           FILTER (WHERE illegal) AS illegal_what
    INTO bad
    FROM (SELECT o.id AS o_id, n.id AS n_id, o.direction AS o_direction, o.status AS o_status, n.status AS n_status,
                 o.transfer_id AS o_transfer,
                 n.organization_id <> o.organization_id OR n.account_id <> o.account_id OR n.direction <> o.direction
                   OR n.type <> o.type OR n.source_id IS DISTINCT FROM o.source_id OR n.amount_cents <> o.amount_cents
                   OR n.currency <> o.currency OR n.date <> o.date OR n.created_at <> o.created_at AS immutable_changed,
                 o.transfer_id IS NOT NULL AND n.transfer_id IS DISTINCT FROM o.transfer_id AS transfer_moved,
                 n.status <> o.status AND NOT (
                      (o.direction = 'cash_in' AND o.status = 'pending' AND n.status = 'available')
                   OR (o.direction = 'cash_in' AND o.status = 'available' AND n.status = 'settled')
                   OR (o.direction = 'cash_out' AND o.status = 'pending' AND n.status = 'in_transfer')
                   OR (o.direction = 'cash_out' AND o.status = 'in_transfer' AND n.status = 'settled')) AS illegal
            FROM old_rows o LEFT JOIN new_rows n ON n.id = o.id) x;
  IF bad.lost > 0 OR bad.frozen > 0 THEN
    RAISE EXCEPTION 'transaction %: only status, transfer_id and bookkeeping columns may change', coalesce(bad.lost_id, bad.frozen_id)
      USING ERRCODE = 'check_violation';
  END IF;
  -- A transaction is in at most one transfer, ever.
  IF bad.moved > 0 THEN
    RAISE EXCEPTION 'transaction %: already in transfer %', bad.moved_id, bad.moved_from USING ERRCODE = 'check_violation';
  END IF;
  IF bad.illegal > 0 THEN
    RAISE EXCEPTION 'transaction %', bad.illegal_what USING ERRCODE = 'check_violation';
  END IF;
  INSERT INTO transaction_status_history (transaction_id, organization_id, from_status, to_status, transfer_id, changed_at)
  -- The writer's clock when it stamped updated_at (the api and activities do), else the database's.
  SELECT n.id, n.organization_id, o.status, n.status, n.transfer_id,
         CASE WHEN n.updated_at IS DISTINCT FROM o.updated_at THEN n.updated_at ELSE now() END
    FROM old_rows o JOIN new_rows n ON n.id = o.id
   WHERE n.status <> o.status
   ORDER BY n.created_at, n.id;
  RETURN NULL;
END $$;
CREATE TRIGGER transactions_history_update AFTER UPDATE ON transactions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION transactions_history_update();

-- The history's foreign keys checked, per inserted row, what holds by construction: history rows are written
-- only by the triggers above, from the transaction rows of the same statement, and neither table ever loses
-- a row (transactions_no_delete, transaction_status_history_append_only). At a window's scale the two
-- per-row checks (and the row locks they take on transactions) were a third of the settle statement.
ALTER TABLE transaction_status_history DROP CONSTRAINT transaction_status_history_transaction_id_fkey;
ALTER TABLE transaction_status_history DROP CONSTRAINT transaction_status_history_organization_id_fkey;

-- The same contributions as 0005's plpgsql version, as one SQL SELECT the planner inlines into the balance
-- triggers' queries (a plpgsql call per row, twice per moved row, was most of their time).
DROP FUNCTION ledger_contribution(text, text, boolean, bigint);
CREATE FUNCTION ledger_contribution(p_direction text, p_status text, p_in_transfer boolean, p_amount bigint)
RETURNS TABLE (pending bigint, available bigint, in_transfer bigint, settled_in bigint, settled_out bigint)
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_direction = 'cash_in' AND p_status = 'pending' THEN p_amount ELSE 0 END::bigint,
         CASE WHEN p_direction = 'cash_in' AND p_status = 'available' AND NOT p_in_transfer THEN p_amount
              WHEN p_direction = 'cash_out' AND p_status = 'pending' THEN -p_amount ELSE 0 END::bigint,
         CASE WHEN p_direction = 'cash_in' AND p_status = 'available' AND p_in_transfer THEN p_amount
              WHEN p_direction = 'cash_out' AND p_status = 'in_transfer' THEN -p_amount ELSE 0 END::bigint,
         CASE WHEN p_direction = 'cash_in' AND p_status = 'settled' THEN p_amount ELSE 0 END::bigint,
         CASE WHEN p_direction = 'cash_out' AND p_status = 'settled' THEN p_amount ELSE 0 END::bigint
$$;

-- The one Transaction renderer takes its TransferSummary as an argument, so a window's bulk events read
-- their transfer once instead of once per member; transaction_json(t) keeps reading it per row.
DROP FUNCTION transaction_json(transactions);
CREATE FUNCTION transaction_json(t transactions, p_transfer jsonb) RETURNS json LANGUAGE sql STABLE AS $$
  SELECT json_build_object(
    'id', t.id, 'amount', t.amount_cents, 'direction', t.direction, 'currency', t.currency, 'status', t.status,
    'type', t.type, 'source_id', t.source_id, 'account_id', t.account_id,
    'created_at', to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'date', to_char(t.date, 'YYYY-MM-DD'),
    'transfer', CASE WHEN t.status IN ('in_transfer', 'settled') THEN p_transfer END)
$$;
CREATE FUNCTION transaction_json(t transactions) RETURNS json LANGUAGE sql STABLE AS $$
  SELECT transaction_json(t, transfer_summary_json(t.status, t.transfer_id))
$$;

-- Down Migration
DROP TRIGGER transactions_history_update ON transactions;
DROP FUNCTION transactions_history_update();
DROP TRIGGER transactions_history_insert ON transactions;
DROP FUNCTION transactions_history_insert();
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
    RETURN NEW;
  END IF;
  IF NEW.id <> OLD.id OR NEW.organization_id <> OLD.organization_id OR NEW.account_id <> OLD.account_id
     OR NEW.direction <> OLD.direction OR NEW.type <> OLD.type OR NEW.source_id IS DISTINCT FROM OLD.source_id
     OR NEW.amount_cents <> OLD.amount_cents OR NEW.currency <> OLD.currency OR NEW.date <> OLD.date
     OR NEW.created_at <> OLD.created_at THEN
    RAISE EXCEPTION 'transaction %: only status, transfer_id and bookkeeping columns may change', OLD.id
      USING ERRCODE = 'check_violation';
  END IF;
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
    VALUES (NEW.id, NEW.organization_id, OLD.status, NEW.status, NEW.transfer_id,
            CASE WHEN NEW.updated_at IS DISTINCT FROM OLD.updated_at THEN NEW.updated_at ELSE now() END);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER transactions_ledger AFTER INSERT OR UPDATE ON transactions FOR EACH ROW EXECUTE FUNCTION transactions_ledger();
ALTER TABLE transaction_status_history ADD CONSTRAINT transaction_status_history_transaction_id_fkey
  FOREIGN KEY (transaction_id) REFERENCES transactions (id);
ALTER TABLE transaction_status_history ADD CONSTRAINT transaction_status_history_organization_id_fkey
  FOREIGN KEY (organization_id) REFERENCES organizations (id);
DROP FUNCTION ledger_contribution(text, text, boolean, bigint);
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
DROP FUNCTION transaction_json(transactions);
DROP FUNCTION transaction_json(transactions, jsonb);
CREATE FUNCTION transaction_json(t transactions) RETURNS json LANGUAGE sql STABLE AS $$
  SELECT json_build_object(
    'id', t.id, 'amount', t.amount_cents, 'direction', t.direction, 'currency', t.currency, 'status', t.status,
    'type', t.type, 'source_id', t.source_id, 'account_id', t.account_id,
    'created_at', to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'date', to_char(t.date, 'YYYY-MM-DD'),
    'transfer', transfer_summary_json(t.status, t.transfer_id))
$$;
