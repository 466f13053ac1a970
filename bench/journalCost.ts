/**
 * What the journal costs the database (SPEC §21 goal: ≤ 15 % more than without it), in one run beside the schema before it.
 * Run: `npm run bench -- journalCost` or `npx tsx bench/journalCost.ts`; Postgres at BENCH_DATABASE_URL.
 *
 * Two scratch databases: one migrated with the migrations of the last commit before the journal (read from git:
 * `git archive a53fc8e migrations`; BENCH_BASE_REF names another),
 * one with this checkout's. The same code (src/ledger/transactions.ts, src/settlement/repo.ts; the journal
 * adds no statement of its own, only trigger work) runs against each, alternating within every round:
 *   - lifecycle: BENCH_JOURNAL_LIFECYCLES (1,000) cash_in recorded (insertTransaction) and confirmed
 *     (applyTransition → available), each its own database transaction on one connection, as the api and
 *     the lifecycle activity write them — the database's part of a lifecycle, without the edge's writes
 *     that the journal does not touch (so the ratio is an upper bound);
 *   - window: BENCH_WINDOW_N (100,000) members seeded, then the build (createWindowTransfer) and the settle
 *     (settleTransfer) transactions timed, as bench/settlementDb.ts times them.
 * Medians of BENCH_ROUNDS (3) rounds and the ratios journal / main go to stdout and bench/results/journalCost-*.json.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runner } from 'node-pg-migrate';
import pg from 'pg';
import { REPO_ROOT } from '../src/config';
import { migrate } from '../src/db/migrate';
import { createPool, withTransaction, type Pool } from '../src/db/pool';
import { applyTransition, insertTransaction } from '../src/ledger/transactions';
import { createAccount, createOrganization } from '../src/orgs/repo';
import { createWindowTransfer, settleTransfer } from '../src/settlement/repo';
import { createScratchDatabase } from '../test/support/scratch';
import { writeResults } from './results';

const LIFECYCLES = Number(process.env.BENCH_JOURNAL_LIFECYCLES ?? 1_000);
const WINDOW_N = Number(process.env.BENCH_WINDOW_N ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
// The baseline is the last commit whose schema has no journal (before migrations/0017_journal.sql).
const BASE_REF = process.env.BENCH_BASE_REF ?? 'a53fc8e';
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const WINDOW_DATE = '2026-03-08';
const SEED_BATCH = 5_000;

const say = (line: string) => process.stdout.write(`${line}\n`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return Math.round(performance.now() - started);
}

/** Applies `BASE_REF`'s migrations, read from git, so the baseline is main as committed. */
async function migrateBase(databaseUrl: string): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-journal-base-'));
  const archive = execFileSync('git', ['archive', BASE_REF, 'migrations'], { cwd: REPO_ROOT });
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await runner({
      dbClient: client,
      dir: path.join(dir, 'migrations'),
      direction: 'up',
      migrationsTable: 'pgmigrations',
      count: Infinity,
      singleTransaction: true,
      log: () => undefined,
    });
  } finally {
    await client.end();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function lifecycles(pool: Pool, org: { organizationId: string; accountId: string }): Promise<number> {
  return timed(async () => {
    for (let i = 0; i < LIFECYCLES; i += 1) {
      const now = new Date();
      const row = await withTransaction(pool, (tx) =>
        insertTransaction(tx, {
          organizationId: org.organizationId,
          accountId: org.accountId,
          direction: 'cash_in',
          type: 'intent',
          sourceId: null,
          amountCents: 100 + i,
          date: WINDOW_DATE,
          createdAt: now,
          // No worker here: no drainer serves this queue.
          taskQueue: 'bench-undrained',
        }),
      );
      await withTransaction(pool, (tx) => applyTransition(tx, { transactionId: row.id, toStatus: 'available', now: new Date() }));
    }
  });
}

async function windowOf(pool: Pool, organizationId: string, round: number): Promise<{ build: number; settle: number }> {
  const account = await createAccount(pool, organizationId, `window ${round}`);
  await pool.query(
    `INSERT INTO transactions (id, organization_id, account_id, direction, type, source_id, amount_cents, status, date, created_at, updated_at)
     SELECT 'txn_' || substr(md5(random()::text || g::text || $3), 1, 24), $2, $3, CASE WHEN g % 3 = 0 THEN 'cash_out' ELSE 'cash_in' END,
            'intent', NULL, 1 + floor(random() * 100000)::bigint, 'pending', $4::date, now() - (g || ' ms')::interval, now()
       FROM generate_series(1, $1::int) g`,
    [WINDOW_N, organizationId, account.id, WINDOW_DATE],
  );
  // The seed (not timed) confirms the cash_ins SEED_BATCH at a time: on the schema before the journal, one
  // 100,000-row UPDATE spilled its statement-level trigger's transition tables to disk and ran for minutes.
  for (;;) {
    const { rowCount } = await pool.query(
      `UPDATE transactions SET status = 'available', updated_at = now()
        WHERE id IN (SELECT id FROM transactions WHERE account_id = $1 AND direction = 'cash_in' AND status = 'pending' LIMIT $2)`,
      [account.id, SEED_BATCH],
    );
    if (!rowCount) break;
  }
  await pool.query('VACUUM ANALYZE transactions');
  let transferId = '';
  const build = await timed(async () => {
    // On a connection closed afterwards, as the settlement activities run it (docs/settlement.md).
    const built = await withTransaction(
      pool,
      (tx) => createWindowTransfer(tx, { accountId: account.id, windowDate: WINDOW_DATE, transferDate: WINDOW_DATE, now: new Date() }),
      { discardConnection: true },
    );
    transferId = built!.transfer.id;
  });
  const settle = await timed(() => withTransaction(pool, (tx) => settleTransfer(tx, transferId, new Date()), { discardConnection: true }));
  return { build, settle };
}

async function main(): Promise<void> {
  const stamp = `${Date.now()}_${process.pid}`;
  say(`journal cost bench: ${ROUNDS} round(s) of ${LIFECYCLES} lifecycles and a ${WINDOW_N}-member window, ${BASE_REF} vs this checkout`);
  const scratches = {
    main: await createScratchDatabase(PG_BASE, `bench_jcost_main_${stamp}`),
    journal: await createScratchDatabase(PG_BASE, `bench_jcost_journal_${stamp}`),
  };
  await migrateBase(scratches.main.databaseUrl);
  await migrate(scratches.journal.databaseUrl);
  const sides = (['main', 'journal'] as const).map((name) => ({ name, pool: createPool(scratches[name].databaseUrl, 2) }));
  const figures: Record<'main' | 'journal', Array<{ lifecycles_ms: number; build_ms: number; settle_ms: number }>> = {
    main: [],
    journal: [],
  };
  try {
    const orgs = await Promise.all(
      sides.map(
        async ({ pool }) =>
          (await createOrganization(pool, { name: 'Journal cost', kycRequired: false, environment: 'sandbox' })).organization.id,
      ),
    );
    for (let round = 1; round <= ROUNDS; round += 1) {
      // Alternating which side goes first, so neither always runs on the warmer machine.
      const order = round % 2 ? [0, 1] : [1, 0];
      for (const index of order) {
        const { name, pool } = sides[index]!;
        const account = await createAccount(pool, orgs[index]!, `lifecycles ${round}`);
        const lifecyclesMs = await lifecycles(pool, { organizationId: orgs[index]!, accountId: account.id });
        const { build, settle } = await windowOf(pool, orgs[index]!, round);
        figures[name].push({ lifecycles_ms: lifecyclesMs, build_ms: build, settle_ms: settle });
        say(
          `[round ${round}/${ROUNDS}] ${name.padEnd(7)} ${LIFECYCLES} lifecycles ${lifecyclesMs} ms; window build ${build} ms, settle ${settle} ms`,
        );
      }
    }
  } finally {
    for (const side of sides) await side.pool.end();
    await scratches.main.drop();
    await scratches.journal.drop();
  }
  const med = (name: 'main' | 'journal', key: 'lifecycles_ms' | 'build_ms' | 'settle_ms') => median(figures[name].map((f) => f[key]));
  const ratio = (key: 'lifecycles_ms' | 'build_ms' | 'settle_ms') => Number((med('journal', key) / med('main', key)).toFixed(3));
  const summary = {
    bench: 'journalCost',
    base_ref: BASE_REF,
    lifecycles: LIFECYCLES,
    window_n: WINDOW_N,
    rounds: figures,
    median: Object.fromEntries(
      (['main', 'journal'] as const).map((name) => [
        name,
        { lifecycles_ms: med(name, 'lifecycles_ms'), build_ms: med(name, 'build_ms'), settle_ms: med(name, 'settle_ms') },
      ]),
    ),
    ratio: { lifecycles: ratio('lifecycles_ms'), build: ratio('build_ms'), settle: ratio('settle_ms') },
    goal_ratio_max: 1.15,
  };
  say(
    `journal / ${BASE_REF} (medians): lifecycles ${summary.ratio.lifecycles}x, window build ${summary.ratio.build}x, settle ${summary.ratio.settle}x (goal ≤ 1.15x)`,
  );
  say(`summary: ${writeResults('journalCost', summary)}`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
