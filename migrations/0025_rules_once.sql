-- Up Migration
-- Issue 32, each rule written once: the settlement rules that were spelled out in several SQL functions and
-- TypeScript queries are one SQL function each, and every place calls it (as user_status_transition_allowed,
-- migrations/0004, is for user status). Behaviour is unchanged: each function is the expression it replaces,
-- and as a one-expression LANGUAGE sql IMMUTABLE function the planner inlines it (index use stays the same).

-- A transaction's signed amount in a transfer's net: + cash_in, − cash_out.
CREATE FUNCTION transaction_signed_cents(p_direction text, p_amount_cents bigint) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN p_direction = 'cash_in' THEN p_amount_cents ELSE -p_amount_cents END
$$;

-- A transfer's signed amount (its amount_cents is unsigned, as the API shows it): + disbursement, − collection.
-- A transfer is built so that this equals the sum of its members' transaction_signed_cents (transfers_net_check).
CREATE FUNCTION transfer_signed_cents(p_direction text, p_amount_cents bigint) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE p_direction WHEN 'disbursement' THEN p_amount_cents ELSE -p_amount_cents END
$$;

-- What a settlement window for date p_window_date picks up (SPEC §10): a transaction in no transfer yet,
-- dated on or before the window, confirmed if cash_in (available), not yet batched if cash_out (pending).
CREATE FUNCTION eligible_for_window(p_transfer_id text, p_direction text, p_status text, p_date date, p_window_date date)
  RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT p_transfer_id IS NULL AND p_date <= p_window_date
     AND ((p_direction = 'cash_in' AND p_status = 'available') OR (p_direction = 'cash_out' AND p_status = 'pending'))
$$;

-- The status a member holds while its transfer is pending: a cash_in stays available, a cash_out is in_transfer.
CREATE FUNCTION transfer_member_status(p_direction text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE p_direction WHEN 'cash_in' THEN 'available' ELSE 'in_transfer' END
$$;

CREATE OR REPLACE FUNCTION journal_backfill() RETURNS bigint LANGUAGE sql AS $$
  WITH written AS (
    INSERT INTO journal_entries (id, organization_id, account_id, kind, transaction_id, transfer_id, from_bucket, to_bucket, amount_cents, created_at)
    SELECT journal_entry_id(), t.organization_id, t.account_id, k.kind, t.id, NULL, k.from_bucket, k.to_bucket, t.amount_cents, h.changed_at
      FROM transaction_status_history h
      JOIN transactions t ON t.id = h.transaction_id
      JOIN (VALUES ('cash_in', 'pending', 'cash_in_recorded', 'network', 'pending'),
                   ('cash_out', 'pending', 'cash_out_recorded', 'available', 'network'),
                   ('cash_in', 'available', 'cash_in_confirmed', 'pending', 'available')) AS k (direction, to_status, kind, from_bucket, to_bucket)
        ON k.direction = t.direction AND k.to_status = h.to_status
     WHERE NOT EXISTS (SELECT 1 FROM journal_entries e WHERE e.transaction_id = t.id AND e.kind = k.kind)
    UNION ALL
    SELECT journal_entry_id(), tr.organization_id, tr.account_id, k.kind, NULL, tr.id, k.from_bucket, k.to_bucket,
           transfer_signed_cents(tr.direction, tr.amount_cents),
           CASE k.kind WHEN 'transfer_created' THEN tr.created_at ELSE tr.settled_at END
      FROM transfers tr
      JOIN (VALUES ('transfer_created', 'available', 'in_transfer'), ('transfer_settled', 'in_transfer', 'operational')) AS k (kind, from_bucket, to_bucket)
        ON k.kind = 'transfer_created' OR tr.status = 'settled'
     WHERE tr.transaction_count > 0
       AND NOT EXISTS (SELECT 1 FROM journal_entries e WHERE e.transfer_id = tr.id AND e.kind = k.kind)
    RETURNING 1)
  SELECT count(*) FROM written
$$;

CREATE OR REPLACE FUNCTION transactions_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  -- The old and new version of every row, joined once (ids are the join key: an UPDATE that changed an id
  -- leaves an old row without its new one) and shared by the checks, the history and the journal.
  WITH moves AS MATERIALIZED (
    SELECT o.id, o.organization_id, o.account_id, o.direction, o.status AS old_status, n.status AS new_status,
           o.transfer_id AS old_transfer, n.transfer_id AS new_transfer, o.amount_cents, o.created_at,
           transaction_signed_cents(o.direction, o.amount_cents) AS signed_cents,
           tr.created_at AS transfer_created_at, tr.settled_at AS transfer_settled_at,
           -- The writer's clock when it stamped updated_at (the api and activities do), else the database's.
           CASE WHEN n.updated_at IS DISTINCT FROM o.updated_at THEN n.updated_at ELSE now() END AS changed_at,
           n.id IS NULL
             OR n.organization_id <> o.organization_id OR n.account_id <> o.account_id OR n.direction <> o.direction
             OR n.type <> o.type OR n.source_id IS DISTINCT FROM o.source_id OR n.amount_cents <> o.amount_cents
             OR n.currency <> o.currency OR n.date <> o.date OR n.created_at <> o.created_at AS frozen,
           o.transfer_id IS NOT NULL AND n.transfer_id IS DISTINCT FROM o.transfer_id AS transfer_moved,
           n.status <> o.status AND tt.direction IS NULL AS illegal,
           -- Settlement (0006): a transaction joins a transfer only while that transfer is being built (count 0:
           -- visible only inside its creating database transaction), of its own account; it becomes settled
           -- only with its transfer settled.
           n.transfer_id IS DISTINCT FROM o.transfer_id
             AND NOT coalesce(tr.transaction_count = 0 AND tr.status = 'pending' AND tr.account_id = n.account_id, false) AS bad_join,
           n.status = 'settled' AND o.status <> 'settled' AND NOT coalesce(tr.status = 'settled', false) AS bad_settle
      FROM old_rows o LEFT JOIN new_rows n ON n.id = o.id LEFT JOIN transfers tr ON tr.id = n.transfer_id
      LEFT JOIN transaction_transitions tt ON tt.direction = o.direction AND tt.from_status = o.status AND tt.to_status = n.status),
  ok AS (SELECT * FROM moves WHERE NOT (frozen OR transfer_moved OR illegal OR bad_join OR bad_settle)),
  history AS (
    INSERT INTO transaction_status_history (transaction_id, organization_id, from_status, to_status, transfer_id, changed_at)
    SELECT id, organization_id, old_status, new_status, new_transfer, changed_at FROM ok WHERE new_status <> old_status
     ORDER BY created_at, id),
  entries AS (
    INSERT INTO journal_entries (id, organization_id, account_id, kind, transaction_id, transfer_id, from_bucket, to_bucket, amount_cents, created_at)
    SELECT journal_entry_id(), organization_id, account_id, 'cash_in_confirmed', id, NULL, 'pending', 'available', amount_cents, changed_at
      FROM ok WHERE direction = 'cash_in' AND old_status = 'pending' AND new_status = 'available'
    UNION ALL
    SELECT journal_entry_id(), min(organization_id), min(account_id), 'transfer_created', NULL, new_transfer, 'available', 'in_transfer',
           sum(signed_cents), min(transfer_created_at)
      FROM ok WHERE old_transfer IS NULL AND new_transfer IS NOT NULL GROUP BY new_transfer
    UNION ALL
    SELECT journal_entry_id(), min(organization_id), min(account_id), 'transfer_settled', NULL, new_transfer, 'in_transfer', 'operational',
           sum(signed_cents), min(transfer_settled_at)
      FROM ok WHERE new_status = 'settled' AND old_status <> 'settled' GROUP BY new_transfer
    RETURNING account_id, organization_id, from_bucket, to_bucket, amount_cents),
  cache AS (
    -- Accounts in id order, so two statements touching several accounts cannot deadlock.
    INSERT INTO account_balances AS b (account_id, slot, organization_id, pending_cents, available_cents, in_transfer_cents, updated_at)
    SELECT account_id, balance_slot(), min(organization_id),
           sum(journal_bucket_cents('pending', from_bucket, to_bucket, amount_cents)),
           sum(journal_bucket_cents('available', from_bucket, to_bucket, amount_cents)),
           sum(journal_bucket_cents('in_transfer', from_bucket, to_bucket, amount_cents)), now()
      FROM entries GROUP BY account_id ORDER BY account_id
    ON CONFLICT (account_id, slot) DO UPDATE SET
      pending_cents = b.pending_cents + EXCLUDED.pending_cents, available_cents = b.available_cents + EXCLUDED.available_cents,
      in_transfer_cents = b.in_transfer_cents + EXCLUDED.in_transfer_cents, updated_at = now())
  SELECT count(*) FILTER (WHERE frozen) AS frozen, min(id) FILTER (WHERE frozen) AS frozen_id,
         count(*) FILTER (WHERE transfer_moved) AS moved, min(id) FILTER (WHERE transfer_moved) AS moved_id,
         min(old_transfer) FILTER (WHERE transfer_moved) AS moved_from,
         count(*) FILTER (WHERE illegal) AS illegal,
         min(id || ': ' || direction || ' cannot go from ' || old_status || ' to ' || new_status) FILTER (WHERE illegal) AS illegal_what,
         count(*) FILTER (WHERE bad_join) AS bad_joins, min(id) FILTER (WHERE bad_join) AS bad_join_id,
         count(*) FILTER (WHERE bad_settle) AS bad_settles, min(id) FILTER (WHERE bad_settle) AS bad_settle_id
    INTO bad FROM moves;
  -- Any violation undoes the whole statement, the history, journal and cache writes above included.
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

CREATE OR REPLACE FUNCTION transfers_net_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  t transfers;
  member_count bigint;
  net_cents bigint;
  signed_cents bigint;
  unsettled bigint;
  unbatched bigint;
BEGIN
  SELECT * INTO t FROM transfers WHERE id = NEW.id;
  SELECT count(*), coalesce(sum(transaction_signed_cents(direction, amount_cents)), 0),
         count(*) FILTER (WHERE status <> 'settled'),
         count(*) FILTER (WHERE status NOT IN (transfer_member_status(direction), 'settled'))
    INTO member_count, net_cents, unsettled, unbatched
    FROM transactions WHERE transfer_id = t.id;
  IF t.transaction_count < 1 OR member_count <> t.transaction_count THEN
    RAISE EXCEPTION 'transfer %: transaction_count % but % members', t.id, t.transaction_count, member_count
      USING ERRCODE = 'check_violation';
  END IF;
  signed_cents := transfer_signed_cents(t.direction, t.amount_cents);
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

-- Down Migration
CREATE OR REPLACE FUNCTION journal_backfill() RETURNS bigint LANGUAGE sql AS $$
  WITH written AS (
    INSERT INTO journal_entries (id, organization_id, account_id, kind, transaction_id, transfer_id, from_bucket, to_bucket, amount_cents, created_at)
    SELECT journal_entry_id(), t.organization_id, t.account_id, k.kind, t.id, NULL, k.from_bucket, k.to_bucket, t.amount_cents, h.changed_at
      FROM transaction_status_history h
      JOIN transactions t ON t.id = h.transaction_id
      JOIN (VALUES ('cash_in', 'pending', 'cash_in_recorded', 'network', 'pending'),
                   ('cash_out', 'pending', 'cash_out_recorded', 'available', 'network'),
                   ('cash_in', 'available', 'cash_in_confirmed', 'pending', 'available')) AS k (direction, to_status, kind, from_bucket, to_bucket)
        ON k.direction = t.direction AND k.to_status = h.to_status
     WHERE NOT EXISTS (SELECT 1 FROM journal_entries e WHERE e.transaction_id = t.id AND e.kind = k.kind)
    UNION ALL
    SELECT journal_entry_id(), tr.organization_id, tr.account_id, k.kind, NULL, tr.id, k.from_bucket, k.to_bucket,
           CASE tr.direction WHEN 'disbursement' THEN tr.amount_cents ELSE -tr.amount_cents END,
           CASE k.kind WHEN 'transfer_created' THEN tr.created_at ELSE tr.settled_at END
      FROM transfers tr
      JOIN (VALUES ('transfer_created', 'available', 'in_transfer'), ('transfer_settled', 'in_transfer', 'operational')) AS k (kind, from_bucket, to_bucket)
        ON k.kind = 'transfer_created' OR tr.status = 'settled'
     WHERE tr.transaction_count > 0
       AND NOT EXISTS (SELECT 1 FROM journal_entries e WHERE e.transfer_id = tr.id AND e.kind = k.kind)
    RETURNING 1)
  SELECT count(*) FROM written
$$;

CREATE OR REPLACE FUNCTION transactions_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  -- The old and new version of every row, joined once (ids are the join key: an UPDATE that changed an id
  -- leaves an old row without its new one) and shared by the checks, the history and the journal.
  WITH moves AS MATERIALIZED (
    SELECT o.id, o.organization_id, o.account_id, o.direction, o.status AS old_status, n.status AS new_status,
           o.transfer_id AS old_transfer, n.transfer_id AS new_transfer, o.amount_cents, o.created_at,
           CASE o.direction WHEN 'cash_in' THEN o.amount_cents ELSE -o.amount_cents END AS signed_cents,
           tr.created_at AS transfer_created_at, tr.settled_at AS transfer_settled_at,
           -- The writer's clock when it stamped updated_at (the api and activities do), else the database's.
           CASE WHEN n.updated_at IS DISTINCT FROM o.updated_at THEN n.updated_at ELSE now() END AS changed_at,
           n.id IS NULL
             OR n.organization_id <> o.organization_id OR n.account_id <> o.account_id OR n.direction <> o.direction
             OR n.type <> o.type OR n.source_id IS DISTINCT FROM o.source_id OR n.amount_cents <> o.amount_cents
             OR n.currency <> o.currency OR n.date <> o.date OR n.created_at <> o.created_at AS frozen,
           o.transfer_id IS NOT NULL AND n.transfer_id IS DISTINCT FROM o.transfer_id AS transfer_moved,
           n.status <> o.status AND tt.direction IS NULL AS illegal,
           -- Settlement (0006): a transaction joins a transfer only while that transfer is being built (count 0:
           -- visible only inside its creating database transaction), of its own account; it becomes settled
           -- only with its transfer settled.
           n.transfer_id IS DISTINCT FROM o.transfer_id
             AND NOT coalesce(tr.transaction_count = 0 AND tr.status = 'pending' AND tr.account_id = n.account_id, false) AS bad_join,
           n.status = 'settled' AND o.status <> 'settled' AND NOT coalesce(tr.status = 'settled', false) AS bad_settle
      FROM old_rows o LEFT JOIN new_rows n ON n.id = o.id LEFT JOIN transfers tr ON tr.id = n.transfer_id
      LEFT JOIN transaction_transitions tt ON tt.direction = o.direction AND tt.from_status = o.status AND tt.to_status = n.status),
  ok AS (SELECT * FROM moves WHERE NOT (frozen OR transfer_moved OR illegal OR bad_join OR bad_settle)),
  history AS (
    INSERT INTO transaction_status_history (transaction_id, organization_id, from_status, to_status, transfer_id, changed_at)
    SELECT id, organization_id, old_status, new_status, new_transfer, changed_at FROM ok WHERE new_status <> old_status
     ORDER BY created_at, id),
  entries AS (
    INSERT INTO journal_entries (id, organization_id, account_id, kind, transaction_id, transfer_id, from_bucket, to_bucket, amount_cents, created_at)
    SELECT journal_entry_id(), organization_id, account_id, 'cash_in_confirmed', id, NULL, 'pending', 'available', amount_cents, changed_at
      FROM ok WHERE direction = 'cash_in' AND old_status = 'pending' AND new_status = 'available'
    UNION ALL
    SELECT journal_entry_id(), min(organization_id), min(account_id), 'transfer_created', NULL, new_transfer, 'available', 'in_transfer',
           sum(signed_cents), min(transfer_created_at)
      FROM ok WHERE old_transfer IS NULL AND new_transfer IS NOT NULL GROUP BY new_transfer
    UNION ALL
    SELECT journal_entry_id(), min(organization_id), min(account_id), 'transfer_settled', NULL, new_transfer, 'in_transfer', 'operational',
           sum(signed_cents), min(transfer_settled_at)
      FROM ok WHERE new_status = 'settled' AND old_status <> 'settled' GROUP BY new_transfer
    RETURNING account_id, organization_id, from_bucket, to_bucket, amount_cents),
  cache AS (
    -- Accounts in id order, so two statements touching several accounts cannot deadlock.
    INSERT INTO account_balances AS b (account_id, slot, organization_id, pending_cents, available_cents, in_transfer_cents, updated_at)
    SELECT account_id, balance_slot(), min(organization_id),
           sum(journal_bucket_cents('pending', from_bucket, to_bucket, amount_cents)),
           sum(journal_bucket_cents('available', from_bucket, to_bucket, amount_cents)),
           sum(journal_bucket_cents('in_transfer', from_bucket, to_bucket, amount_cents)), now()
      FROM entries GROUP BY account_id ORDER BY account_id
    ON CONFLICT (account_id, slot) DO UPDATE SET
      pending_cents = b.pending_cents + EXCLUDED.pending_cents, available_cents = b.available_cents + EXCLUDED.available_cents,
      in_transfer_cents = b.in_transfer_cents + EXCLUDED.in_transfer_cents, updated_at = now())
  SELECT count(*) FILTER (WHERE frozen) AS frozen, min(id) FILTER (WHERE frozen) AS frozen_id,
         count(*) FILTER (WHERE transfer_moved) AS moved, min(id) FILTER (WHERE transfer_moved) AS moved_id,
         min(old_transfer) FILTER (WHERE transfer_moved) AS moved_from,
         count(*) FILTER (WHERE illegal) AS illegal,
         min(id || ': ' || direction || ' cannot go from ' || old_status || ' to ' || new_status) FILTER (WHERE illegal) AS illegal_what,
         count(*) FILTER (WHERE bad_join) AS bad_joins, min(id) FILTER (WHERE bad_join) AS bad_join_id,
         count(*) FILTER (WHERE bad_settle) AS bad_settles, min(id) FILTER (WHERE bad_settle) AS bad_settle_id
    INTO bad FROM moves;
  -- Any violation undoes the whole statement, the history, journal and cache writes above included.
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

CREATE OR REPLACE FUNCTION transfers_net_check() RETURNS trigger LANGUAGE plpgsql AS $$
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

DROP FUNCTION transfer_member_status(text);
DROP FUNCTION eligible_for_window(text, text, text, date, date);
DROP FUNCTION transfer_signed_cents(text, bigint);
DROP FUNCTION transaction_signed_cents(text, bigint);
