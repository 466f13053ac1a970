/**
 * Settlement's two database transactions beside bare SQL that writes the same rows (issue 13, goal 3).
 * Run: `npx tsx bench/settlementDb.ts` (or `npm run bench -- settlementDb`); Postgres at BENCH_DATABASE_URL.
 *
 * Each round seeds BENCH_WINDOW_N (100,000) transactions of a fresh account (2/3 cash_in available, 1/3
 * cash_out pending) and a trigger-free copy of the same rows, then times, on one connection:
 *   - build:  createWindowTransfer, the createTransfer activity's transaction (assign every member, history,
 *             balances, guards, each cash_out's event, the transfer row and its deferred net check);
 *   - bare build: one statement that UPDATEs the same members on the copy and INSERTs their history rows;
 *   - settle: settleTransfer, the settleTransfer activity's transaction (every member settled, history,
 *             balances, guards, one event per member);
 *   - bare settle: the same UPDATE + history INSERT on the copy.
 * The bare statement and the real one alternate within each round, so both see the same machine. Medians of
 * BENCH_ROUNDS (3) rounds and their ratios go to stdout and bench/results/settlementDb-*.json.
 */
import { createPool, withTransaction, type Pool } from '../src/db/pool';
import { randomString } from '../src/ids';
import { createAccount, createOrganization } from '../src/orgs/repo';
import { createWindowTransfer, settleTransfer } from '../src/settlement/repo';
import { createScratchDatabase } from '../test/support/scratch';
import { writeResults } from './results';

const WINDOW_N = Number(process.env.BENCH_WINDOW_N ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const WINDOW_DATE = '2026-03-08';

const say = (line: string) => process.stdout.write(`${line}\n`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return Math.round(performance.now() - started);
}

/** Seeds one account's window and the same rows into the trigger-free copy. */
async function seed(pool: Pool, organizationId: string, accountId: string): Promise<void> {
  await pool.query(
    `INSERT INTO transactions (id, organization_id, account_id, direction, type, source_id, amount_cents, status, date, created_at, updated_at, workflow_started_at)
     SELECT 'txn_' || substr(md5(random()::text || g::text || $3), 1, 24), $2, $3, CASE WHEN g % 3 = 0 THEN 'cash_out' ELSE 'cash_in' END,
            'intent', NULL, 1 + floor(random() * 100000)::bigint, 'pending', $4::date, now() - (g || ' ms')::interval, now(), now()
       FROM generate_series(1, $1::int) g`,
    [WINDOW_N, organizationId, accountId, WINDOW_DATE],
  );
  await pool.query(`UPDATE transactions SET status = 'available', updated_at = now() WHERE account_id = $1 AND direction = 'cash_in'`, [
    accountId,
  ]);
  await pool.query(`INSERT INTO bare_transactions SELECT * FROM transactions WHERE account_id = $1`, [accountId]);
  await pool.query('VACUUM ANALYZE transactions, bare_transactions');
}

const BARE_BUILD = `WITH moved AS (
    UPDATE bare_transactions SET transfer_id = $2, updated_at = now(), status = CASE WHEN direction = 'cash_out' THEN 'in_transfer' ELSE status END
     WHERE account_id = $1 AND transfer_id IS NULL RETURNING id, organization_id, status, transfer_id)
  INSERT INTO bare_history (transaction_id, organization_id, from_status, to_status, transfer_id, changed_at)
  SELECT id, organization_id, 'pending', status, transfer_id, now() FROM moved WHERE status = 'in_transfer'`;
const BARE_SETTLE = `WITH moved AS (
    UPDATE bare_transactions SET status = 'settled', updated_at = now() WHERE account_id = $1 AND transfer_id = $2 RETURNING id, organization_id, direction, transfer_id)
  INSERT INTO bare_history (transaction_id, organization_id, from_status, to_status, transfer_id, changed_at)
  SELECT id, organization_id, CASE direction WHEN 'cash_in' THEN 'available' ELSE 'in_transfer' END, 'settled', transfer_id, now() FROM moved`;

async function main(): Promise<void> {
  const database = `ledger_bench_settledb_${Date.now()}_${process.pid}`;
  say(`settlement DB bench: ${ROUNDS} round(s) of ${WINDOW_N} members, database ${database}`);
  const scratch = await createScratchDatabase(PG_BASE, database);
  const pool = createPool(scratch.databaseUrl, 4);
  const rounds: Array<{ build_ms: number; bare_build_ms: number; settle_ms: number; bare_settle_ms: number }> = [];
  try {
    await pool.query(`CREATE TABLE bare_transactions (LIKE transactions INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES);
      CREATE TABLE bare_history (LIKE transaction_status_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES)`);
    const { organization } = await createOrganization(pool, { name: 'Settlement DB bench', kycRequired: false, environment: 'sandbox' });
    for (let round = 1; round <= ROUNDS; round++) {
      const account = await createAccount(pool, organization.id, `bench ${round}`);
      say(`[round ${round}/${ROUNDS}] seeding ${WINDOW_N} transactions of ${account.id}`);
      await seed(pool, organization.id, account.id);
      const bareTransferId = `transfer_${randomString(24)}`;
      const bareBuild = await timed(() => withTransaction(pool, (tx) => tx.query(BARE_BUILD, [account.id, bareTransferId])));
      let transferId = '';
      const build = await timed(async () => {
        const built = await withTransaction(pool, (tx) =>
          createWindowTransfer(tx, { accountId: account.id, windowDate: WINDOW_DATE, transferDate: WINDOW_DATE, now: new Date() }),
        );
        if (!built || built.transfer.transaction_count !== WINDOW_N)
          throw new Error(`built ${built?.transfer.transaction_count ?? 0} of ${WINDOW_N} members`);
        transferId = built.transfer.id;
      });
      const settle = await timed(() => withTransaction(pool, (tx) => settleTransfer(tx, transferId, new Date())));
      const bareSettle = await timed(() => withTransaction(pool, (tx) => tx.query(BARE_SETTLE, [account.id, bareTransferId])));
      rounds.push({ build_ms: build, bare_build_ms: bareBuild, settle_ms: settle, bare_settle_ms: bareSettle });
      say(
        `[round ${round}/${ROUNDS}] build ${build} ms (bare ${bareBuild} ms, ${(build / bareBuild).toFixed(2)}x); settle ${settle} ms (bare ${bareSettle} ms, ${(settle / bareSettle).toFixed(2)}x)`,
      );
    }
  } finally {
    await pool.end();
    await scratch.drop();
  }
  const summary = {
    bench: 'settlementDb',
    window_n: WINDOW_N,
    rounds,
    median: {
      build_ms: median(rounds.map((r) => r.build_ms)),
      bare_build_ms: median(rounds.map((r) => r.bare_build_ms)),
      build_ratio: median(rounds.map((r) => r.build_ms / r.bare_build_ms)),
      settle_ms: median(rounds.map((r) => r.settle_ms)),
      bare_settle_ms: median(rounds.map((r) => r.bare_settle_ms)),
      settle_ratio: median(rounds.map((r) => r.settle_ms / r.bare_settle_ms)),
    },
    goal: 'build and settle each at most 3x the bare statement',
  };
  say(
    `median: build ${summary.median.build_ms} ms = ${summary.median.build_ratio.toFixed(2)}x bare; settle ${summary.median.settle_ms} ms = ${summary.median.settle_ratio.toFixed(2)}x bare`,
  );
  say(`summary: ${writeResults('settlementDb', summary)}`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
