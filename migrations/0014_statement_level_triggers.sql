-- Up Migration
-- Everything the transactions table does beside a write, once per statement from the statement's transition
-- tables, in ONE trigger per event and (for updates) one pass over the old and new rows: the legality of each
-- move (the seed's table; src/ledger/contract.ts TRANSITIONS is the same), its status-history row, its balance
-- effect and settlement's transfer guard. A settlement window moves up to hundreds of thousands of rows in one
-- statement; 0005's row trigger (a plpgsql call and a history INSERT per row) and three statement triggers that
-- each joined the transition tables again made its two transactions 4-5.6x a bare UPDATE + history INSERT of
-- the same rows. The rules and error messages are 0005's transactions_ledger and 0006's
-- transactions_transfer_guard, unchanged; account_balances_add (0005) still applies each account's effect.
DROP TRIGGER transactions_ledger ON transactions;
DROP FUNCTION transactions_ledger();
DROP TRIGGER transactions_balances_insert ON transactions;
DROP FUNCTION transactions_balances_insert();
DROP TRIGGER transactions_balances_update ON transactions;
DROP FUNCTION transactions_balances_update();
DROP TRIGGER transactions_transfer_guard ON transactions;
DROP FUNCTION transactions_transfer_guard();

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

CREATE FUNCTION transactions_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  -- One statement: the history and balance writes run in CTEs over the rows that pass the check, and the
  -- check's aggregate (no LIMIT: transition tables have no statistics) decides below whether it all stands.
  WITH ok AS (SELECT * FROM new_rows WHERE status = 'pending'),
  history AS (
    INSERT INTO transaction_status_history (transaction_id, organization_id, from_status, to_status, transfer_id, changed_at)
    SELECT id, organization_id, NULL, 'pending', NULL, created_at FROM ok ORDER BY created_at, id
    RETURNING 1),
  effects AS (
    SELECT n.account_id, min(n.organization_id) AS organization_id, sum(c.pending)::bigint AS pending, sum(c.available)::bigint AS available,
           sum(c.in_transfer)::bigint AS in_transfer, sum(c.settled_in)::bigint AS settled_in, sum(c.settled_out)::bigint AS settled_out
      FROM ok n, LATERAL ledger_contribution(n.direction, n.status, n.transfer_id IS NOT NULL, n.amount_cents) c
     GROUP BY n.account_id),
  -- Accounts in id order, so two statements touching several accounts cannot deadlock.
  balances AS (
    SELECT account_balances_add(account_id, organization_id, pending, available, in_transfer, settled_in, settled_out)
      FROM effects ORDER BY account_id)
  SELECT count(*) FILTER (WHERE status <> 'pending') AS n, min(id) FILTER (WHERE status <> 'pending') AS id,
         min(status) FILTER (WHERE status <> 'pending') AS status,
         (SELECT count(*) FROM history) AS history_rows, (SELECT count(*) FROM balances) AS accounts
    INTO bad FROM new_rows;
  IF bad.n > 0 THEN
    RAISE EXCEPTION 'transaction %: recorded as %, must start pending', bad.id, bad.status USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER transactions_after_insert AFTER INSERT ON transactions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION transactions_after_insert();

CREATE FUNCTION transactions_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  -- The old and new version of every row, joined once (ids are the join key: an UPDATE that changed an id
  -- leaves an old row without its new one) and shared by the checks, the history and the balances.
  WITH moves AS MATERIALIZED (
    SELECT o.id, o.organization_id, o.account_id, o.direction, o.status AS old_status, n.status AS new_status,
           o.transfer_id AS old_transfer, n.transfer_id AS new_transfer, o.amount_cents, o.created_at,
           -- The writer's clock when it stamped updated_at (the api and activities do), else the database's.
           CASE WHEN n.updated_at IS DISTINCT FROM o.updated_at THEN n.updated_at ELSE now() END AS changed_at,
           n.id IS NULL
             OR n.organization_id <> o.organization_id OR n.account_id <> o.account_id OR n.direction <> o.direction
             OR n.type <> o.type OR n.source_id IS DISTINCT FROM o.source_id OR n.amount_cents <> o.amount_cents
             OR n.currency <> o.currency OR n.date <> o.date OR n.created_at <> o.created_at AS frozen,
           o.transfer_id IS NOT NULL AND n.transfer_id IS DISTINCT FROM o.transfer_id AS transfer_moved,
           n.status <> o.status AND NOT (
                (o.direction = 'cash_in' AND o.status = 'pending' AND n.status = 'available')
             OR (o.direction = 'cash_in' AND o.status = 'available' AND n.status = 'settled')
             OR (o.direction = 'cash_out' AND o.status = 'pending' AND n.status = 'in_transfer')
             OR (o.direction = 'cash_out' AND o.status = 'in_transfer' AND n.status = 'settled')) AS illegal,
           -- Settlement (0006): a transaction joins a transfer only while that transfer is being built (count 0:
           -- visible only inside its creating database transaction), of its own account; it becomes settled
           -- only with its transfer settled.
           n.transfer_id IS DISTINCT FROM o.transfer_id
             AND NOT coalesce(tr.transaction_count = 0 AND tr.status = 'pending' AND tr.account_id = n.account_id, false) AS bad_join,
           n.status = 'settled' AND o.status <> 'settled' AND NOT coalesce(tr.status = 'settled', false) AS bad_settle
      FROM old_rows o LEFT JOIN new_rows n ON n.id = o.id LEFT JOIN transfers tr ON tr.id = n.transfer_id),
  ok AS (SELECT * FROM moves WHERE NOT (frozen OR transfer_moved OR illegal OR bad_join OR bad_settle)),
  history AS (
    INSERT INTO transaction_status_history (transaction_id, organization_id, from_status, to_status, transfer_id, changed_at)
    SELECT id, organization_id, old_status, new_status, new_transfer, changed_at FROM ok WHERE new_status <> old_status
     ORDER BY created_at, id
    RETURNING 1),
  effects AS (
    SELECT m.account_id, min(m.organization_id) AS organization_id, sum(c.pending - w.pending)::bigint AS pending,
           sum(c.available - w.available)::bigint AS available, sum(c.in_transfer - w.in_transfer)::bigint AS in_transfer,
           sum(c.settled_in - w.settled_in)::bigint AS settled_in, sum(c.settled_out - w.settled_out)::bigint AS settled_out
      FROM ok m,
           LATERAL ledger_contribution(m.direction, m.old_status, m.old_transfer IS NOT NULL, m.amount_cents) w,
           LATERAL ledger_contribution(m.direction, m.new_status, m.new_transfer IS NOT NULL, m.amount_cents) c
     WHERE m.new_status <> m.old_status OR m.new_transfer IS DISTINCT FROM m.old_transfer
     GROUP BY m.account_id),
  -- Accounts in id order, so two statements touching several accounts cannot deadlock.
  balances AS (
    SELECT account_balances_add(account_id, organization_id, pending, available, in_transfer, settled_in, settled_out)
      FROM effects ORDER BY account_id)
  SELECT count(*) FILTER (WHERE frozen) AS frozen, min(id) FILTER (WHERE frozen) AS frozen_id,
         count(*) FILTER (WHERE transfer_moved) AS moved, min(id) FILTER (WHERE transfer_moved) AS moved_id,
         min(old_transfer) FILTER (WHERE transfer_moved) AS moved_from,
         count(*) FILTER (WHERE illegal) AS illegal,
         min(id || ': ' || direction || ' cannot go from ' || old_status || ' to ' || new_status) FILTER (WHERE illegal) AS illegal_what,
         count(*) FILTER (WHERE bad_join) AS bad_joins, min(id) FILTER (WHERE bad_join) AS bad_join_id,
         count(*) FILTER (WHERE bad_settle) AS bad_settles, min(id) FILTER (WHERE bad_settle) AS bad_settle_id,
         (SELECT count(*) FROM history) AS history_rows, (SELECT count(*) FROM balances) AS accounts
    INTO bad FROM moves;
  -- Any violation undoes the whole statement, the history and balance writes above included.
  IF bad.frozen > 0 THEN
    RAISE EXCEPTION 'transaction %: only status, transfer_id and bookkeeping columns may change', bad.frozen_id
      USING ERRCODE = 'check_violation';
  END IF;
  -- A transaction is in at most one transfer, ever.
  IF bad.moved > 0 THEN
    RAISE EXCEPTION 'transaction %: already in transfer %', bad.moved_id, bad.moved_from USING ERRCODE = 'check_violation';
  END IF;
  IF bad.illegal > 0 THEN
    RAISE EXCEPTION 'transaction %', bad.illegal_what USING ERRCODE = 'check_violation';
  END IF;
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
CREATE TRIGGER transactions_after_update AFTER UPDATE ON transactions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION transactions_after_update();

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
DROP TRIGGER transactions_after_update ON transactions;
DROP FUNCTION transactions_after_update();
DROP TRIGGER transactions_after_insert ON transactions;
DROP FUNCTION transactions_after_insert();
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
ALTER TABLE transaction_status_history ADD CONSTRAINT transaction_status_history_transaction_id_fkey
  FOREIGN KEY (transaction_id) REFERENCES transactions (id);
ALTER TABLE transaction_status_history ADD CONSTRAINT transaction_status_history_organization_id_fkey
  FOREIGN KEY (organization_id) REFERENCES organizations (id);
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
