import type { Queryable } from '../db/pool';
import { journalViolations } from '../journal/contract';

/**
 * One invariant's check: a query over the accounts ($1, and the window date as $2 when `windowed`) returning one
 * `problem` sentence per violation.
 */
interface InvariantCheck {
  windowed: boolean;
  sql: string;
}

/** Every settlement invariant of SPEC §10, in the order they are checked. */
const SETTLEMENT_INVARIANTS: readonly InvariantCheck[] = [
  // One transfer per (account, window), whose signed amount and count are exactly its members'.
  {
    windowed: true,
    sql: `SELECT format('account %s window %s has %s transfers', account_id, window_date, count(*)) AS problem
       FROM transfers WHERE account_id = ANY($1) AND window_date = $2::date GROUP BY account_id, window_date HAVING count(*) > 1`,
  },
  {
    windowed: false,
    sql: `SELECT format('transfer %s: %s %s of %s members, but members net %s over %s', tr.id, tr.direction, tr.amount_cents,
                   tr.transaction_count, m.net, m.n) AS problem
       FROM transfers tr
       CROSS JOIN LATERAL (SELECT count(*) AS n,
                                  coalesce(sum(transaction_signed_cents(direction, amount_cents)), 0) AS net
                             FROM transactions WHERE transfer_id = tr.id) m
      WHERE tr.account_id = ANY($1)
        AND (m.n <> tr.transaction_count OR m.net <> transfer_signed_cents(tr.direction, tr.amount_cents)
             OR (tr.amount_cents = 0 AND tr.direction <> 'disbursement'))`,
  },
  // Nothing eligible for the window is left behind once it closed.
  {
    windowed: true,
    sql: `SELECT format('transaction %s (%s %s, date %s) was left out of window %s', id, direction, status, date, $2::text) AS problem
       FROM transactions WHERE account_id = ANY($1) AND eligible_for_window(transfer_id, direction, status, date, $2::date)`,
  },
  // Members agree with their transfer's status.
  {
    windowed: false,
    sql: `SELECT format('transaction %s is %s in %s transfer %s', t.id, t.status, tr.status, tr.id) AS problem
       FROM transactions t JOIN transfers tr ON tr.id = t.transfer_id
      WHERE t.account_id = ANY($1)
        AND NOT ((tr.status = 'settled' AND t.status = 'settled')
              OR (tr.status = 'pending' AND t.status = transfer_member_status(t.direction)))`,
  },
  // Each member's history is exactly its path through the seed's table, each step once.
  {
    windowed: false,
    sql: `SELECT format('transaction %s history %s does not match status %s', t.id, h.path, t.status) AS problem
       FROM transactions t
       CROSS JOIN LATERAL (SELECT string_agg(to_status, '>' ORDER BY id) AS path FROM transaction_status_history WHERE transaction_id = t.id) h
      WHERE t.account_id = ANY($1) AND t.transfer_id IS NOT NULL
        AND h.path <> CASE
              WHEN t.direction = 'cash_in' AND t.status = 'available' THEN 'pending>available'
              WHEN t.direction = 'cash_in' THEN 'pending>available>settled'
              WHEN t.status = 'in_transfer' THEN 'pending>in_transfer'
              ELSE 'pending>in_transfer>settled' END`,
  },
  // Exactly one event per transfer step and per member transition.
  {
    windowed: false,
    sql: `SELECT format('transfer %s has %s transfer.created and %s transfer.settled events (status %s)', tr.id, e.created, e.settled, tr.status) AS problem
       FROM transfers tr
       CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE type = 'transfer.created') AS created,
                                  count(*) FILTER (WHERE type = 'transfer.settled') AS settled
                             FROM events WHERE organization_id = tr.organization_id AND type LIKE 'transfer.%' AND data->>'id' = tr.id) e
      WHERE tr.account_id = ANY($1) AND (e.created <> 1 OR e.settled <> CASE tr.status WHEN 'settled' THEN 1 ELSE 0 END)`,
  },
  {
    windowed: false,
    sql: `SELECT format('transaction %s has %s transaction.status_changed events to %s', e.data->>'id', count(*), e.data->>'status') AS problem
       FROM events e JOIN transactions t ON t.id = e.data->>'id'
      WHERE t.account_id = ANY($1) AND e.type = 'transaction.status_changed'
      GROUP BY e.data->>'id', e.data->>'status' HAVING count(*) <> 1`,
  },
  // Balances are exactly what the transactions say, and what the journal's postings sum to.
  {
    windowed: false,
    sql: `SELECT format('account %s balances %s/%s/%s, transactions say %s/%s/%s, journal %s/%s/%s', b.account_id, b.pending_cents,
                   b.available_cents, b.in_transfer_cents, c.pending, c.available, c.in_transfer, j.pending, j.available, j.in_transfer) AS problem
       FROM account_balance_totals b
       CROSS JOIN LATERAL (SELECT coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_in' AND status = 'pending'), 0) AS pending,
                                  coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_in' AND status = 'available' AND transfer_id IS NULL), 0)
                                  - coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_out' AND status = 'pending'), 0) AS available,
                                  coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_in' AND status = 'available' AND transfer_id IS NOT NULL), 0)
                                  - coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_out' AND status = 'in_transfer'), 0) AS in_transfer
                             FROM transactions t WHERE t.account_id = b.account_id) c
       CROSS JOIN LATERAL journal_balance_at(b.account_id, 'infinity') jb
       CROSS JOIN LATERAL (SELECT jb.pending_cents AS pending, jb.available_cents AS available, jb.in_transfer_cents AS in_transfer) j
      WHERE b.account_id = ANY($1)
        AND ((b.pending_cents, b.available_cents, b.in_transfer_cents) IS DISTINCT FROM (c.pending, c.available, c.in_transfer)
             OR (b.pending_cents, b.available_cents, b.in_transfer_cents) IS DISTINCT FROM (j.pending, j.available, j.in_transfer))`,
  },
];

/**
 * Every settlement invariant of SPEC §10, checked from the outside over the ledger's own tables: the chaos
 * test and the chaos bench call it after killing workers at random points. Returns the violations found
 * (empty when all hold), each a sentence naming what broke.
 */
export async function settlementViolations(db: Queryable, input: { accountIds: string[]; windowDate: string }): Promise<string[]> {
  const violations: string[] = [];
  for (const check of SETTLEMENT_INVARIANTS) {
    const params = check.windowed ? [input.accountIds, input.windowDate] : [input.accountIds];
    const { rows } = await db.query<{ problem: string }>(check.sql, params);
    violations.push(...rows.map((row) => row.problem));
  }
  violations.push(...(await journalViolations(db, input.accountIds)).map((row) => row.problem));
  return violations;
}
