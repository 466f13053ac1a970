/**
 * Settlement bench (issue 6). Run: `npx tsx bench/settlement.ts` (a few minutes; needs Postgres at
 * BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432, and the Temporal CLI at .tools/bin/temporal).
 *
 * 1. Close a window of BENCH_WINDOW_N (100,000) transactions of one account, seeded in bulk with SQL
 *    (INSERT … SELECT generate_series; 2/3 cash_in made available, 1/3 cash_out pending):
 *      - the bare SQL aggregate (count and net of the eligible rows) over the same rows, before the close;
 *      - time from starting the window close to the transfer being committed, and the createTransfer
 *        activity's own database transaction (select, net, assign, history, balances, events) as the worker
 *        logs it;
 *      - time until every member is `settled` in the database (SANDBOX_SETTLE_SECONDS=0) and until the
 *        settlement workflow has signalled every member (assigned to each cash_out, settled to all);
 *      - time until every member lifecycle WORKFLOW has reached `settled`: for a sample of BENCH_SAMPLE
 *        (2,000) members that run real lifecycle workflows. Starting 100,000 workflows on a 2-core dev server
 *        alone takes longer than this bench may run, so the other members have no workflow (their rows carry
 *        no lifecycle_queue row, so no drainer starts one); they still cost one signal each (answered
 *        "not found"), so the notification time is the full 100,000-member cost.
 * 1b. The floor of waking a window's members: BENCH_SAMPLE workflows of the lifecycle's shape without the ledger
 *    (bench/lifecycleShapeWorkflow.ts: same search attributes and steps, parked at `available`), each signalled
 *    once from 32 concurrent loops (the notification's concurrency) on the same server, timed from the first
 *    signal until visibility counts none running, as step 1 times its lifecycles. Goal, with BENCH_SAMPLE =
 *    BENCH_WINDOW_N (every member has its workflow): step 1's close → every lifecycle completed ≤ 1.25× this.
 *      BENCH_WINDOW_N=20000 BENCH_SAMPLE=20000 BENCH_CHAOS_N=0 npx tsx bench/settlement.ts
 * 2. Chaos: BENCH_CHAOS_N (10,000) transactions over 4 accounts (with BENCH_CHAOS_SAMPLE lifecycle
 *    workflows), a window close while the worker PROCESS is SIGKILLed at random points of the settlement and
 *    restarted, then every invariant of src/settlement/invariants.ts is checked.
 * The worker runs as its own process (as deployed); numbers go to stdout and bench/results/.
 * BENCH_TEMPORAL=dev (default: the dev server on a SQLite file, as `npm start`) or cluster (`npm run cluster`'s
 * server on Postgres, in two fresh databases dropped at the end). A run of a few minutes on a 2-core box:
 *   BENCH_TEMPORAL=cluster BENCH_WINDOW_N=20000 BENCH_SAMPLE=500 BENCH_CHAOS_N=2000 BENCH_CHAOS_SAMPLE=200 npx tsx bench/settlement.ts
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { bundleWorkflowsOnce } from '../ops/clusterProcesses';
import { createLogger } from '../src/logger';
import { REPO_ROOT } from '../src/config';
import { createPool, type Pool } from '../src/db/pool';
import { randomString } from '../src/ids';
import { startTransactionWorkflow } from '../src/ledger/lifecycle';
import { getTransactionRow } from '../src/ledger/transactions';
import { createAccount, createOrganization } from '../src/orgs/repo';
import { startWindowClose } from '../src/settlement/client';
import {
  accountSettlementWorkflowId,
  memberNotificationProgressQuery,
  memberNotificationWorkflowId,
  settlementProgressQuery,
  SETTLEMENT_LIMITS,
} from '../src/settlement/workflowContract';
import { settlementViolations } from '../src/settlement/invariants';
import { shapeStart, startShapeWorker } from './lifecycleShape';
import { shapeSettledSignal } from './lifecycleShapeWorkflow';
import { settlementScheduleId } from '../src/settlement/schedule';
import { createScratchDatabase, startScratchTemporal, topologyFrom } from '../test/support/scratch';
import { writeResults } from './results';

const WINDOW_N = Number(process.env.BENCH_WINDOW_N ?? 100_000);
const SAMPLE = Number(process.env.BENCH_SAMPLE ?? 2_000);
const CHAOS_N = Number(process.env.BENCH_CHAOS_N ?? 10_000);
const CHAOS_SAMPLE = Number(process.env.BENCH_CHAOS_SAMPLE ?? 500);
const CHAOS_KILLS = Number(process.env.BENCH_CHAOS_KILLS ?? 5);
const CLI = process.env.TEMPORAL_CLI_PATH ?? path.join(REPO_ROOT, '.tools', 'bin', 'temporal');
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const WINDOW_DATE = '2026-03-08'; // the 23-hour spring-forward day
const DEADLINE_MS = 8 * 60_000;
/** dev: `npm start`'s dev server on a SQLite file; cluster: `npm run cluster`'s server on Postgres. */
const TOPOLOGY = topologyFrom(process.env.BENCH_TEMPORAL);

const say = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => Number((ms / 1000).toFixed(2));

/** Polls `probe` every `everyMs` until it returns a value, printing `progress()` every 2 s. */
async function until<T>(what: string, probe: () => Promise<T | undefined>, progress: () => Promise<string>, everyMs = 200): Promise<T> {
  const started = Date.now();
  let printed = started;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() - started > DEADLINE_MS) throw new Error(`${what}: not reached in ${DEADLINE_MS / 1000} s`);
    if (Date.now() - printed >= 2_000) {
      printed = Date.now();
      say(`  [${((Date.now() - started) / 1000).toFixed(0)}s] ${await progress()}`);
    }
    await sleep(everyMs);
  }
}

/** A worker process in its own process group (so SIGKILL reaches the node process tsx starts). */
function startWorkerProcess(env: Record<string, string>, onLog: (line: string) => void): { child: ChildProcess; ready: Promise<void> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'ops/bin/worker.ts'], {
    // Several workers run at once: no metrics ports to collide on.
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', TEMPORAL_METRICS_ADDRESS: 'off', WORKER_METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let buffer = '';
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      let newline = buffer.indexOf('\n');
      while (newline >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (line.includes('worker running')) resolve();
        onLog(line);
        newline = buffer.indexOf('\n');
      }
    });
    child.stderr.resume();
    child.once('exit', (code, signal) => reject(new Error(`worker exited (${code ?? signal}) before it ran`)));
  });
  ready.catch(() => undefined);
  return { child, ready };
}

async function killGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
  await exited;
}

/** Seeds `count` transactions of `accountId` dated WINDOW_DATE in bulk: 2/3 cash_in (available), 1/3 cash_out. */
async function seed(pool: Pool, organizationId: string, accountIds: string[], count: number): Promise<void> {
  const { start, end } = { start: Date.parse('2026-03-08T05:00:00Z'), end: Date.parse('2026-03-09T04:00:00Z') };
  await pool.query(
    `INSERT INTO transactions (id, organization_id, account_id, direction, type, source_id, amount_cents, status, date, created_at, updated_at, workflow_started_at)
     SELECT 'txn_' || substr(md5(random()::text || g::text), 1, 24), $1, ($2::text[])[1 + g % array_length($2::text[], 1)],
            CASE WHEN g % 3 = 0 THEN 'cash_out' ELSE 'cash_in' END, 'intent', NULL, 1 + floor(random() * 100000)::bigint, 'pending', $3::date,
            to_timestamp(($4::bigint + floor(random() * ($5::bigint - $4::bigint)))::double precision / 1000), now(), now()
       FROM generate_series(1, $6::int) g`,
    [organizationId, accountIds, WINDOW_DATE, start, end, count],
  );
  await pool.query(
    `UPDATE transactions SET status = 'available', updated_at = now() WHERE account_id = ANY($1) AND direction = 'cash_in' AND status = 'pending'`,
    [accountIds],
  );
}

/** Real lifecycle workflows for a random sample of the seeded members. */
async function startSample(pool: Pool, client: Client, taskQueue: string, accountIds: string[], size: number): Promise<string[]> {
  // cash_out first: workflows start (and get their first tasks) roughly in this order, so once the cash_in
  // ones report `available` the cash_out ones have finished starting too, and the worker is idle.
  const { rows } = await pool.query<{ id: string }>(
    `SELECT id FROM (SELECT id, direction FROM transactions WHERE account_id = ANY($1) ORDER BY random() LIMIT $2) s
      ORDER BY direction DESC`,
    [accountIds, size],
  );
  const ids = rows.map((row) => row.id);
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < ids.length) {
        const id = ids[next]!;
        next += 1;
        await startTransactionWorkflow(client, taskQueue, (await getTransactionRow(pool, id))!);
      }
    }),
  );
  return ids;
}

async function runningLifecycles(client: Client, taskQueue: string): Promise<number> {
  const { count } = await client.workflow.count(
    `TaskQueue = '${taskQueue}' AND WorkflowType = 'transactionWorkflow' AND ExecutionStatus = 'Running'`,
  );
  return count;
}

/** Step 1b: `count` lifecycle-shaped workflows parked at `available`, then the time to signal and complete them all. */
async function bareWakeUp(address: string, client: Client, count: number): Promise<{ start_s: number; wake_up_s: number }> {
  const shapes = await startShapeWorker(address);
  const loops = async (total: number, op: (index: number) => Promise<unknown>) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: SETTLEMENT_LIMITS.notifyConcurrency }, async () => {
        while (next < total) await op(next++);
      }),
    );
  };
  const ids = Array.from({ length: count }, (_, index) => `shape-${index}-${randomString(8)}`);
  try {
    let t = Date.now();
    await loops(count, (index) =>
      client.workflow.start('lifecycleShapeWorkflow', shapeStart(shapes.taskQueue, ids[index]!, 0, WINDOW_DATE)),
    );
    await until(
      'shapes parked',
      async () => (shapes.available() >= count ? true : undefined),
      async () => `${shapes.available()}/${count} shapes parked at available`,
      100,
    );
    const start_s = seconds(Date.now() - t);
    t = Date.now();
    const stillRunning = async () =>
      (await client.workflow.count(`TaskQueue = '${shapes.taskQueue}' AND ExecutionStatus = 'Running'`)).count;
    await loops(count, (index) => client.workflow.getHandle(ids[index]!).signal(shapeSettledSignal));
    await until(
      'shapes completed',
      async () => ((await stillRunning()) === 0 ? true : undefined),
      async () => `${await stillRunning()} shapes still running`,
      500,
    );
    return { start_s, wake_up_s: seconds(Date.now() - t) };
  } finally {
    await shapes.stop();
  }
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const cleanup: Array<() => unknown> = [];
  const results: Record<string, number | string | boolean | null | string[]> = {
    cores: os.cpus().length,
    window_n: WINDOW_N,
    sample: SAMPLE,
    chaos_n: CHAOS_N,
    topology: TOPOLOGY,
  };
  try {
    say(
      `settlement bench: ${os.cpus().length} cores; Temporal ${TOPOLOGY}; window of ${WINDOW_N} transactions (${SAMPLE} with lifecycle workflows); chaos with ${CHAOS_N}`,
    );
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'settlement-bench-'));
    const temporal = await startScratchTemporal(CLI, path.join(workDir, 'temporal.log'), { topology: TOPOLOGY, adminUrl: PG_BASE });
    cleanup.push(() => temporal.stop());
    const { server: dev, client } = temporal;
    const database = `ledger_bench_settlement_${Date.now()}`;
    const scratch = await createScratchDatabase(PG_BASE, database);
    cleanup.push(() => scratch.drop());
    const { databaseUrl } = scratch;
    const pool = createPool(databaseUrl, 6);
    pool.on('error', () => undefined); // the final DROP DATABASE … WITH (FORCE) ends idle connections
    cleanup.push(() => pool.end());
    const bundlePath = await bundleWorkflowsOnce(workDir, createLogger('error', 'bench-bundler'));
    say(
      `Temporal ${TOPOLOGY === 'dev' ? 'dev server (SQLite file)' : 'server on Postgres (npm run cluster)'} ${dev.address}, Postgres ${database}`,
    );

    // ---- 1. one window of WINDOW_N ------------------------------------------------------------------
    {
      const taskQueue = `bench-${randomString(8)}`;
      const workerEnv = {
        DATABASE_URL: databaseUrl,
        TEMPORAL_ADDRESS: dev.address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        LEDGER_WORKFLOW_BUNDLE: bundlePath,
        SANDBOX_CONFIRM_SECONDS: '0',
        SANDBOX_SETTLE_SECONDS: '0',
      };
      let createMs: number | null = null;
      let settleMs: number | null = null;
      let settleDbMs: number | null = null;
      const worker = startWorkerProcess(workerEnv, (line) => {
        if (line.includes('"transfer created"')) createMs = JSON.parse(line).elapsed_ms;
        if (line.includes('"transfer settled"')) settleDbMs = JSON.parse(line).elapsed_ms;
      });
      cleanup.push(() => killGroup(worker.child));
      cleanup.push(() =>
        client.schedule
          .getHandle(settlementScheduleId(taskQueue))
          .delete()
          .catch(() => undefined),
      );
      await worker.ready;
      const org = await createOrganization(pool, { name: 'Bench', kycRequired: false, environment: 'sandbox' });
      const accountId = org.account.id;
      let t = Date.now();
      await seed(pool, org.organization.id, [accountId], WINDOW_N);
      results.seed_s = seconds(Date.now() - t);
      say(`seeded ${WINDOW_N} transactions in ${results.seed_s} s`);
      t = Date.now();
      const sample = await startSample(pool, client, taskQueue, [accountId], SAMPLE);
      // Idle before the close (each has handed its payment to the rail and waits), so the close is not timed
      // behind their start-up: every cash_in of the sample reports `available`.
      const { rows: sampleIn } = await pool.query(
        `SELECT count(*)::int AS n FROM transactions WHERE id = ANY($1) AND direction = 'cash_in'`,
        [sample],
      );
      const waiting = async () =>
        (
          await client.workflow.count(
            `TaskQueue = '${taskQueue}' AND WorkflowType = 'transactionWorkflow' AND TransactionStatus = 'available'`,
          )
        ).count;
      await until(
        'sample workflows waiting',
        async () => ((await waiting()) >= sampleIn[0].n ? true : undefined),
        async () => `${await waiting()}/${sampleIn[0].n} sample cash_in workflows waiting at available`,
        500,
      );
      results.sample_start_s = seconds(Date.now() - t);
      say(`started ${sample.length} lifecycle workflows in ${results.sample_start_s} s`);

      // The bare aggregate over the same rows, best of 3.
      const bare: number[] = [];
      let expected: { n: number; net: number } | undefined;
      for (let i = 0; i < 3; i += 1) {
        const t0 = performance.now();
        const { rows } = await pool.query<{ n: number; net: number }>(
          `SELECT count(*)::int AS n, coalesce(sum(CASE WHEN direction = 'cash_in' THEN amount_cents ELSE -amount_cents END), 0)::bigint AS net
             FROM transactions WHERE account_id = $1 AND transfer_id IS NULL AND date <= $2::date
              AND ((direction = 'cash_in' AND status = 'available') OR (direction = 'cash_out' AND status = 'pending'))`,
          [accountId, WINDOW_DATE],
        );
        bare.push(performance.now() - t0);
        expected = rows[0];
      }
      results.bare_sql_aggregate_ms = Number(Math.min(...bare).toFixed(1));
      say(`bare SQL aggregate: ${expected!.n} rows, net ${expected!.net} cents, ${results.bare_sql_aggregate_ms} ms (best of 3)`);

      const started = Date.now();
      await startWindowClose(client, taskQueue, { windowDate: WINDOW_DATE, accountId });
      const progress = async () => {
        const { rows } = await pool.query<{ status: string; n: number }>(
          `SELECT status, count(*)::int AS n FROM transactions WHERE account_id = $1 GROUP BY status ORDER BY status`,
          [accountId],
        );
        const phase = await client
          .withDeadline(Date.now() + 1_000, async () => {
            const p = await client.workflow.getHandle(accountSettlementWorkflowId(accountId, WINDOW_DATE)).query(settlementProgressQuery);
            // A notification pass counts its members live in its own child workflow.
            const kind = p.phase === 'notifying_assigned' ? 'assigned' : p.phase === 'notifying_settled' ? 'settled' : null;
            const notified = kind
              ? (
                  await client.workflow
                    .getHandle(memberNotificationWorkflowId(accountId, WINDOW_DATE, kind))
                    .query(memberNotificationProgressQuery)
                ).notified
              : p.notified;
            return `${p.phase} (${notified} notified)`;
          })
          .catch(() => 'starting');
        return `${rows.map((r) => `${r.status} ${r.n}`).join(', ')}; workflow ${phase}`;
      };
      const transfer = await until(
        'transfer created',
        async () => {
          const { rows } = await pool.query(`SELECT id, amount_cents, direction, transaction_count FROM transfers WHERE account_id = $1`, [
            accountId,
          ]);
          return rows[0];
        },
        progress,
      );
      results.time_to_transfer_created_s = seconds(Date.now() - started);
      // The part of that spent before the account's settlement workflow even began (the worker's backlog of
      // sample workflows starting up, the window workflow's fan-out).
      const accountRun = await client.workflow.getHandle(accountSettlementWorkflowId(accountId, WINDOW_DATE)).describe();
      results.settlement_workflow_started_after_s = seconds(accountRun.startTime.getTime() - started);
      await until(
        'activity log',
        async () => (createMs !== null ? true : undefined),
        async () => 'waiting for the worker log',
        50,
      );
      results.create_transfer_db_transaction_ms = createMs;
      const signed = transfer.direction === 'disbursement' ? transfer.amount_cents : -transfer.amount_cents;
      if (signed !== Number(expected!.net) || transfer.transaction_count !== expected!.n)
        throw new Error('transfer differs from the bare aggregate');
      say(
        `transfer ${transfer.id}: ${transfer.direction} ${transfer.amount_cents} of ${transfer.transaction_count} (= bare aggregate) — ` +
          `created ${results.time_to_transfer_created_s} s after the close started (its settlement workflow began at ` +
          `${results.settlement_workflow_started_after_s} s); the DB transaction that built it ${createMs} ms`,
      );

      await until(
        'members settled in the database',
        async () => {
          const { rows } = await pool.query(`SELECT count(*)::int AS n FROM transactions WHERE account_id = $1 AND status <> 'settled'`, [
            accountId,
          ]);
          return rows[0].n === 0 ? true : undefined;
        },
        progress,
      );
      results.time_to_all_members_settled_db_s = seconds(Date.now() - started);
      const { rows: st } = await pool.query(
        `SELECT extract(epoch FROM settled_at - created_at) * 1000 AS ms FROM transfers WHERE id = $1`,
        [transfer.id],
      );
      settleMs = Math.round(Number(st[0].ms));
      await until(
        'activity log',
        async () => (settleDbMs !== null ? true : undefined),
        async () => 'waiting for the worker log',
        50,
      );
      results.settle_transfer_db_transaction_ms = settleDbMs;
      say(
        `every member settled in the database ${results.time_to_all_members_settled_db_s} s after the close started; ` +
          `the DB transaction that settled them ${settleDbMs} ms`,
      );
      await client.workflow.getHandle(accountSettlementWorkflowId(accountId, WINDOW_DATE)).result();
      results.time_to_all_members_signalled_s = seconds(Date.now() - started);
      say(`settlement workflow done (every member signalled) ${results.time_to_all_members_signalled_s} s after the close started`);
      await until(
        'sample workflows settled',
        async () => ((await runningLifecycles(client, taskQueue)) === 0 ? true : undefined),
        async () => `${await runningLifecycles(client, taskQueue)} sample lifecycle workflows still running`,
        500,
      );
      results.time_to_sample_workflows_settled_s = seconds(Date.now() - started);
      const results_ = await Promise.all(sample.slice(0, 50).map((id) => client.workflow.getHandle(id).result()));
      if (results_.some((r) => r !== 'settled')) throw new Error('a sample lifecycle workflow did not end settled');
      say(
        `all ${sample.length} sample lifecycle workflows completed at settled ${results.time_to_sample_workflows_settled_s} s after the close started`,
      );
      results.transfer_created_to_settled_ms = settleMs;
      t = Date.now();
      const violations = await settlementViolations(pool, { accountIds: [accountId], windowDate: WINDOW_DATE });
      results.window_invariant_violations = violations.length;
      say(
        `invariants: ${violations.length} violations (checked in ${seconds(Date.now() - t)} s)${violations.length ? `\n  ${violations.slice(0, 5).join('\n  ')}` : ''}`,
      );
      await killGroup(worker.child);
    }

    // ---- 1b. the floor: as many bare lifecycle shapes woken by one signal each -------------------------
    if (SAMPLE > 0) {
      say(`step 1b: ${SAMPLE} workflows of the lifecycle's shape (no ledger) parked, then each signalled once`);
      const bare = await bareWakeUp(dev.address, client, SAMPLE);
      results.bare_shape_start_s = bare.start_s;
      results.bare_shape_wake_up_s = bare.wake_up_s;
      const ratio = Number(results.time_to_sample_workflows_settled_s) / bare.wake_up_s;
      results.lifecycles_completed_vs_bare_wake_up = Number(ratio.toFixed(3));
      say(
        `bare shapes: parked in ${bare.start_s} s; signalled and completed in ${bare.wake_up_s} s; the window's close → every ` +
          `lifecycle completed took ${results.time_to_sample_workflows_settled_s} s = ${results.lifecycles_completed_vs_bare_wake_up}× ` +
          `(goal ≤ 1.25 when BENCH_SAMPLE = BENCH_WINDOW_N)`,
      );
    }

    // ---- 2. chaos: SIGKILL the worker during a window of CHAOS_N (BENCH_CHAOS_N=0 skips it) -------------
    if (CHAOS_N > 0) {
      const taskQueue = `chaos-${randomString(8)}`;
      const workerEnv = {
        DATABASE_URL: databaseUrl,
        TEMPORAL_ADDRESS: dev.address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        LEDGER_WORKFLOW_BUNDLE: bundlePath,
        SANDBOX_CONFIRM_SECONDS: '0',
        SANDBOX_SETTLE_SECONDS: '3',
      };
      let worker = startWorkerProcess(workerEnv, () => undefined);
      cleanup.push(() => killGroup(worker.child));
      cleanup.push(() =>
        client.schedule
          .getHandle(settlementScheduleId(taskQueue))
          .delete()
          .catch(() => undefined),
      );
      await worker.ready;
      const org = await createOrganization(pool, { name: 'Chaos', kycRequired: false, environment: 'sandbox' });
      const accountIds = [org.account.id];
      for (let i = 1; i < 4; i += 1) accountIds.push((await createAccount(pool, org.organization.id, `Chaos ${i}`)).id);
      await seed(pool, org.organization.id, accountIds, CHAOS_N);
      const sample = await startSample(pool, client, taskQueue, accountIds, CHAOS_SAMPLE);
      say(`chaos: seeded ${CHAOS_N} transactions over ${accountIds.length} accounts, ${sample.length} lifecycle workflows`);
      const seedValue = Number(process.env.CHAOS_SEED ?? Date.now() % 100_000);
      let state = seedValue;
      const random = () => {
        state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
        return state / 2_147_483_648;
      };
      say(`chaos: seed ${seedValue}`);
      const started = Date.now();
      await startWindowClose(client, taskQueue, { windowDate: WINDOW_DATE, organizationId: org.organization.id });
      // Kill points spread over the settlement: round r waits for stage r (close started, a transfer built,
      // all built, a transfer settled, all settled and members being told), then a random moment more.
      const stages: Array<[string, (built: number, settled: number) => boolean]> = [
        ['close started', () => true],
        ['a transfer built', (built) => built >= 1],
        ['every transfer built', (built) => built >= accountIds.length],
        ['a transfer settled', (_built, settled) => settled >= 1],
        ['every transfer settled', (_built, settled) => settled >= accountIds.length],
      ];
      const kills: string[] = [];
      for (let round = 0; round < CHAOS_KILLS; round += 1) {
        const [stage, reached] = stages[Math.min(round, stages.length - 1)]!;
        const counts = async () =>
          (
            await pool.query<{ built: number; settled: number }>(
              `SELECT count(*)::int AS built, count(*) FILTER (WHERE status = 'settled')::int AS settled FROM transfers WHERE account_id = ANY($1)`,
              [accountIds],
            )
          ).rows[0]!;
        await until(
          `chaos stage ${stage}`,
          async () => {
            const { built, settled } = await counts();
            return reached(built, settled) ? true : undefined;
          },
          async () => `waiting for: ${stage}`,
          100,
        );
        const delayMs = Math.floor(random() * 1_500);
        await sleep(delayMs);
        const { built, settled } = await counts();
        const line = `round ${round}: SIGKILL ${delayMs} ms after "${stage}" (${built} transfers built, ${settled} settled)`;
        kills.push(line);
        say(`  chaos ${line}`);
        await killGroup(worker.child);
        worker = startWorkerProcess(workerEnv, () => undefined);
        await worker.ready;
      }
      for (const accountId of accountIds) {
        await until(
          `settlement of ${accountId}`,
          async () => {
            const d = await client.workflow
              .getHandle(accountSettlementWorkflowId(accountId, WINDOW_DATE))
              .describe()
              .catch(() => null);
            return d?.status.name === 'COMPLETED' ? true : undefined;
          },
          async () => {
            const { rows } = await pool.query(
              `SELECT status, count(*)::int AS n FROM transactions WHERE account_id = ANY($1) GROUP BY status ORDER BY status`,
              [accountIds],
            );
            return rows.map((r) => `${r.status} ${r.n}`).join(', ');
          },
          500,
        );
      }
      await until(
        'chaos sample workflows settled',
        async () => ((await runningLifecycles(client, taskQueue)) === 0 ? true : undefined),
        async () => `${await runningLifecycles(client, taskQueue)} sample lifecycle workflows still running`,
        500,
      );
      results.chaos_total_s = seconds(Date.now() - started);
      const violations = await settlementViolations(pool, { accountIds, windowDate: WINDOW_DATE });
      const { rows: left } = await pool.query(
        `SELECT count(*)::int AS n FROM transactions WHERE account_id = ANY($1) AND status <> 'settled'`,
        [accountIds],
      );
      results.chaos_kills = kills;
      results.chaos_invariant_violations = violations.length;
      results.chaos_unsettled_members = left[0].n;
      say(
        `chaos: ${CHAOS_KILLS} kills, done in ${results.chaos_total_s} s; ${violations.length} invariant violations, ${left[0].n} members not settled` +
          `${violations.length ? `\n  ${violations.slice(0, 5).join('\n  ')}` : ''}`,
      );
      if (violations.length || left[0].n) process.exitCode = 1;
    }

    say(`results: ${writeResults('settlement', results)}`);
  } finally {
    for (const step of cleanup.reverse())
      await Promise.resolve()
        .then(step)
        .catch(() => undefined);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
