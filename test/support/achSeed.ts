import type { Pool } from '../../src/db/pool';

/** The ODFI and originator identity the production ACH suites file under (SPEC §24's four file facts). */
export const PRODUCTION_ACH_ENV = {
  LEDGER_ENVIRONMENT: 'production',
  ACH_ODFI_ROUTING: '091000019',
  ACH_IMMEDIATE_ORIGIN: '123456789',
  ACH_ODFI_NAME: 'TEST ODFI',
  ACH_ORIGIN_NAME: 'PAYMENTS LEDGER TEST',
} as const;

/**
 * Many queued ACH entries at once (SPEC §24), for the suites and benches that need a big window: approved
 * cash_in intents on existing bank accounts and their pending transactions, written set-based in one
 * statement each. The database's own trigger (transactions_queue_ach_entries) queues each deposit's PPD debit, as
 * it does for POST /intent. No lifecycle workflow is started: the window files them all the same. Answers
 * the transaction ids, oldest first.
 */
export async function seedQueuedDeposits(
  pool: Pool,
  input: { bankAccountIds: readonly string[]; count: number; tag: string; environment: 'sandbox' | 'production' },
): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `WITH accounts AS (
       SELECT b.id AS bank_account_id, b.organization_id, b.user_id, i.account_id, row_number() OVER (ORDER BY b.id) - 1 AS k
         FROM bank_accounts b
         JOIN LATERAL (SELECT account_id FROM intents WHERE bank_account_id = b.id LIMIT 1) i ON true
        WHERE b.id = ANY($1::text[])),
     made AS (
       INSERT INTO intents (id, organization_id, account_id, user_id, idempotency_key, direction, amount_cents, approval_mode, status,
                            created_at, updated_at, bank_account_id)
       SELECT 'intent_' || $4 || '_' || $3 || lpad(g::text, 8, '0'), a.organization_id, a.account_id, a.user_id, 'seed-' || $3 || '-' || g,
              'cash_in', 100 + (g * 7919) % 100000, 'automatic', 'approved', clock_timestamp(), clock_timestamp(), a.bank_account_id
         FROM generate_series(1, $2::int) g
         JOIN accounts a ON a.k = g % (SELECT count(*) FROM accounts)
       RETURNING id, organization_id, account_id, amount_cents, created_at)
     INSERT INTO transactions (id, organization_id, account_id, direction, type, source_id, amount_cents, status, date, created_at, updated_at)
     SELECT 'txn_' || substr(m.id, length('intent_' || $4 || '_') + 1), m.organization_id, m.account_id, 'cash_in', 'intent', m.id,
            m.amount_cents, 'pending', current_date, m.created_at, m.created_at
       FROM made m ORDER BY m.id
     RETURNING id`,
    [input.bankAccountIds, input.count, input.tag, input.environment],
  );
  return rows.map((row) => row.id);
}
