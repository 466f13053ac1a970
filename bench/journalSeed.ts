import type { Pool } from '../src/db/pool';
import { createAccount, createOrganization } from '../src/orgs/repo';

/** The day the seeded journals end on: entries spread evenly over the days before it. */
export const SEED_END = new Date('2026-01-01T05:00:00Z');
const DAY_MS = 86_400_000;

/**
 * One account whose journal holds `entries` entries spread evenly over `days` days before SEED_END, written
 * set-based (generate_series; the entry table only refuses UPDATE and DELETE): pairs of a cash_in recorded and
 * confirmed, of amounts 1..1000 cents. Then a snapshot at every day's end, as each window close takes one.
 */
export async function seedJournal(
  pool: Pool,
  input: { entries: number; days: number; say: (line: string) => void },
): Promise<{ accountId: string; organizationId: string; apiKey: string }> {
  const created = await createOrganization(pool, { name: 'Journal bench', kycRequired: false, environment: 'sandbox' });
  const account = await createAccount(pool, created.organization.id, 'Journal bench account');
  const started = Date.now();
  await pool.query(
    `INSERT INTO journal_entries (id, organization_id, account_id, kind, transaction_id, from_bucket, to_bucket, amount_cents, created_at)
     SELECT journal_entry_id(), $1, $2, k.kind, 'txn_bench' || lpad((g / 2)::text, 12, '0'), k.from_bucket, k.to_bucket, 1 + (g / 2) % 1000,
            $3::timestamptz - ($4::int - g) * ($5::bigint * interval '1 millisecond' / $4::int)
       FROM generate_series(0, $4::int - 1) g
       JOIN (VALUES (0, 'cash_in_recorded', 'network', 'pending'), (1, 'cash_in_confirmed', 'pending', 'available')) k (parity, kind, from_bucket, to_bucket)
         ON k.parity = g % 2`,
    [created.organization.id, account.id, SEED_END, input.entries, input.days * DAY_MS],
  );
  await pool.query('VACUUM ANALYZE journal_entries');
  input.say(`seeded ${input.entries} entries over ${input.days} days in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const snapshotsStarted = Date.now();
  for (let day = input.days - 1; day >= 0; day -= 1) {
    await pool.query(`SELECT journal_take_snapshots($1)`, [new Date(SEED_END.getTime() - day * DAY_MS)]);
  }
  input.say(`took ${input.days} daily snapshots in ${((Date.now() - snapshotsStarted) / 1000).toFixed(1)} s`);
  return { accountId: account.id, organizationId: created.organization.id, apiKey: created.key.api_key };
}
