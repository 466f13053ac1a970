-- Up Migration
-- The journal (SPEC §21) and the state machine as data. Every change to an account's balances is an
-- append-only journal entry written by the same statement-level triggers that change the status (0014), in
-- the same statement, so no path can move money without its entry and the hot path gains no round trip.
-- The slotted counters (account_balances, 0005) stay as the cache GET /account reads in one index scan;
-- they are now added to from the entries each statement writes, never from a second copy of the rules.

-- The transaction state machine (the seed's table), the one copy both sides read: the status trigger joins
-- it, and test/journal.test.ts compares it with TRANSITIONS in src/ledger/contract.ts.
CREATE TABLE transaction_transitions (
  direction   text NOT NULL CHECK (direction IN ('cash_in', 'cash_out')),
  from_status text NOT NULL CHECK (from_status IN ('pending', 'available', 'in_transfer')),
  to_status   text NOT NULL CHECK (to_status IN ('available', 'in_transfer', 'settled')),
  PRIMARY KEY (direction, from_status, to_status)
);
INSERT INTO transaction_transitions (direction, from_status, to_status) VALUES
  ('cash_in', 'pending', 'available'), ('cash_in', 'available', 'settled'),
  ('cash_out', 'pending', 'in_transfer'), ('cash_out', 'in_transfer', 'settled');

-- Every entry kind moves one amount from one bucket to another: its two postings are (from_bucket, −amount)
-- and (to_bucket, +amount), so an entry that does not sum to zero cannot be written at all. `amount_cents`
-- is signed for the transfer kinds (a collection's net is negative). The CHECK is the posting table of
-- SPEC §21; docs/journal.md explains it. `network` and `operational` are counterparties outside the ledger.
CREATE TABLE journal_entries (
  id              text PRIMARY KEY CHECK (id ~ '^je_[A-Za-z0-9_-]{16,}$'),
  organization_id text NOT NULL,
  account_id      text NOT NULL,
  kind            text NOT NULL,
  transaction_id  text,
  transfer_id     text,
  from_bucket     text NOT NULL,
  to_bucket       text NOT NULL,
  amount_cents    bigint NOT NULL,
  created_at      timestamptz NOT NULL,
  CHECK ((kind, from_bucket, to_bucket) IN (
    ('cash_in_recorded', 'network', 'pending'),
    ('cash_in_confirmed', 'pending', 'available'),
    ('cash_out_recorded', 'available', 'network'),
    ('transfer_created', 'available', 'in_transfer'),
    ('transfer_settled', 'in_transfer', 'operational'))),
  CHECK (CASE WHEN kind LIKE 'transfer\_%' THEN transfer_id IS NOT NULL AND transaction_id IS NULL
              ELSE transaction_id IS NOT NULL AND transfer_id IS NULL AND amount_cents >= 0 END)
);
-- A transition writes its entry once: (transaction, kind) and (transfer, kind) are each entry's identity.
CREATE UNIQUE INDEX journal_entries_of_transaction ON journal_entries (transaction_id, kind) WHERE transaction_id IS NOT NULL;
CREATE UNIQUE INDEX journal_entries_of_transfer ON journal_entries (transfer_id, kind) WHERE transfer_id IS NOT NULL;
-- An account's entries newest first (GET /account/{id}/entries) and in a span of time (balances, statements);
-- the postings' columns ride along so a balance at an instant sums a day of entries from the index alone.
CREATE INDEX journal_entries_by_account ON journal_entries (account_id, created_at DESC, id DESC)
  INCLUDE (from_bucket, to_bucket, amount_cents);

-- The postings of every entry, one row per (entry, bucket): what statements and readers sum.
CREATE VIEW journal_postings AS
  SELECT e.id AS entry_id, e.organization_id, e.account_id, e.kind, e.transaction_id, e.transfer_id, e.created_at,
         p.leg, p.bucket, p.amount_cents
    FROM journal_entries e
    CROSS JOIN LATERAL (VALUES (1, e.from_bucket, -e.amount_cents), (2, e.to_bucket, e.amount_cents)) AS p (leg, bucket, amount_cents);

CREATE FUNCTION journal_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only (% refused)', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER journal_entries_append_only BEFORE UPDATE OR DELETE ON journal_entries
  FOR EACH ROW EXECUTE FUNCTION journal_append_only();
CREATE TRIGGER journal_entries_no_truncate BEFORE TRUNCATE ON journal_entries
  FOR EACH STATEMENT EXECUTE FUNCTION journal_append_only();
CREATE TRIGGER transaction_transitions_read_only BEFORE INSERT OR UPDATE OR DELETE ON transaction_transitions
  FOR EACH STATEMENT EXECUTE FUNCTION journal_append_only();

CREATE FUNCTION journal_entry_id() RETURNS text LANGUAGE sql VOLATILE AS $$
  SELECT 'je_' || replace(gen_random_uuid()::text, '-', '')
$$;

-- Per account, what a set of entries adds to each bucket of the cache (the sums of their postings).
CREATE FUNCTION journal_bucket_cents(p_bucket text, p_from text, p_to text, p_amount bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT (CASE WHEN p_to = p_bucket THEN p_amount ELSE 0 END) - (CASE WHEN p_from = p_bucket THEN p_amount ELSE 0 END)
$$;

-- The cache now holds the account's three buckets only; the settled totals had no reader and the journal
-- keeps what settled (the operational postings).
DROP VIEW account_balance_totals;
ALTER TABLE account_balances DROP COLUMN settled_in_cents, DROP COLUMN settled_out_cents;
CREATE VIEW account_balance_totals AS
  SELECT account_id, min(organization_id) AS organization_id,
         sum(pending_cents)::bigint AS pending_cents, sum(available_cents)::bigint AS available_cents,
         sum(in_transfer_cents)::bigint AS in_transfer_cents, max(updated_at) AS updated_at
    FROM account_balances GROUP BY account_id;
DROP FUNCTION account_balances_add(text, text, bigint, bigint, bigint, bigint, bigint);
DROP FUNCTION ledger_contribution(text, text, boolean, bigint);

-- The history, the entries and the cache of one INSERT statement. Data-modifying CTEs run to completion
-- whether or not the final SELECT reads them (PostgreSQL, "Data-Modifying Statements in WITH"), and the
-- check below raises after them, which undoes the whole statement.
CREATE OR REPLACE FUNCTION transactions_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  WITH ok AS (SELECT * FROM new_rows WHERE status = 'pending'),
  history AS (
    INSERT INTO transaction_status_history (transaction_id, organization_id, from_status, to_status, transfer_id, changed_at)
    SELECT id, organization_id, NULL, 'pending', NULL, created_at FROM ok ORDER BY created_at, id),
  entries AS (
    INSERT INTO journal_entries (id, organization_id, account_id, kind, transaction_id, from_bucket, to_bucket, amount_cents, created_at)
    SELECT journal_entry_id(), organization_id, account_id, direction || '_recorded', id,
           CASE direction WHEN 'cash_in' THEN 'network' ELSE 'available' END,
           CASE direction WHEN 'cash_in' THEN 'pending' ELSE 'network' END, amount_cents, created_at
      FROM ok
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
  SELECT count(*) FILTER (WHERE status <> 'pending') AS n, min(id) FILTER (WHERE status <> 'pending') AS id,
         min(status) FILTER (WHERE status <> 'pending') AS status
    INTO bad FROM new_rows;
  IF bad.n > 0 THEN
    RAISE EXCEPTION 'transaction %: recorded as %, must start pending', bad.id, bad.status USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;

-- The entries of one UPDATE statement: a cash_in's confirmation per row; a transfer's creation and its
-- settlement once per transfer, for the net of the members the statement moved (a window moves them all in
-- one statement, so its entry is one row however many members it has), stamped with the transfer's own
-- created_at / settled_at.
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

-- The journal of the rows written before it existed, from the status history and the transfers, stamped as
-- the live triggers stamp them (a status's changed_at; a transfer's created_at and settled_at). Entries
-- already there are kept, so running it twice writes nothing the second time. Returns how many it wrote.
CREATE FUNCTION journal_backfill() RETURNS bigint LANGUAGE sql AS $$
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
SELECT journal_backfill();

-- One row per account and window close: the balances as of `at`, so a balance at any instant reads the last
-- snapshot at or before it plus at most a day of entries. Derived data, rebuilt the same way every time.
CREATE TABLE journal_snapshots (
  account_id        text NOT NULL,
  at                timestamptz NOT NULL,
  organization_id   text NOT NULL,
  pending_cents     bigint NOT NULL,
  available_cents   bigint NOT NULL,
  in_transfer_cents bigint NOT NULL,
  PRIMARY KEY (account_id, at)
);

-- One account's balances at the instant p_at, before anything stamped p_at or later (windows and statements
-- are half-open, [start, end), so a snapshot at a window's close is exactly the windows before it): its
-- last snapshot at or before p_at plus the entries from that snapshot up to p_at.
CREATE FUNCTION journal_balance_at(p_account text, p_at timestamptz,
  OUT pending_cents bigint, OUT available_cents bigint, OUT in_transfer_cents bigint)
LANGUAGE sql STABLE AS $$
  SELECT coalesce(s.pending_cents, 0) + coalesce(sum(journal_bucket_cents('pending', e.from_bucket, e.to_bucket, e.amount_cents)), 0),
         coalesce(s.available_cents, 0) + coalesce(sum(journal_bucket_cents('available', e.from_bucket, e.to_bucket, e.amount_cents)), 0),
         coalesce(s.in_transfer_cents, 0) + coalesce(sum(journal_bucket_cents('in_transfer', e.from_bucket, e.to_bucket, e.amount_cents)), 0)
    FROM (SELECT NULL) one
    LEFT JOIN LATERAL (SELECT * FROM journal_snapshots s WHERE s.account_id = p_account AND s.at <= p_at ORDER BY s.at DESC LIMIT 1) s ON true
    LEFT JOIN journal_entries e ON e.account_id = p_account AND e.created_at < p_at AND e.created_at >= coalesce(s.at, '-infinity')
   GROUP BY s.pending_cents, s.available_cents, s.in_transfer_cents
$$;

-- Every account's balances at p_at (a past instant: a window's close), from its previous snapshot plus the
-- entries since, in one statement. A snapshot already taken is kept. Returns how many it wrote.
CREATE FUNCTION journal_take_snapshots(p_at timestamptz) RETURNS bigint LANGUAGE sql AS $$
  WITH written AS (
    INSERT INTO journal_snapshots (account_id, at, organization_id, pending_cents, available_cents, in_transfer_cents)
    SELECT a.id, p_at, a.organization_id, b.pending_cents, b.available_cents, b.in_transfer_cents
      FROM accounts a, LATERAL journal_balance_at(a.id, p_at) b
     WHERE p_at <= now()
    ON CONFLICT (account_id, at) DO NOTHING
    RETURNING 1)
  SELECT count(*) FROM written
$$;

-- Down Migration
-- Irreversible: the journal is the ledger's book of record, append-only; going back would destroy it.
DO $$ BEGIN RAISE EXCEPTION '0017_journal cannot be undone: the journal is append-only'; END $$;
