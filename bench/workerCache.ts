/**
 * What a parked lifecycle costs a worker's memory (docs/production.md, worker cache sizing):
 *
 *   npx tsx bench/workerCache.ts                  # BENCH_PARKED=2000 lifecycles
 *
 * An in-memory dev server, a scratch database and one worker process (ops/bin/worker.ts) whose cache holds
 * them all (WORKER_MAX_CACHED_WORKFLOWS = BENCH_PARKED + 500). BENCH_PARKED cash_in transactions are queued
 * (insertTransaction, as a write does); the worker's drainer starts them and each parks after its first
 * workflow task, waiting for the network's confirmation (SANDBOX_CONFIRM_SECONDS is an hour). The worker's
 * RSS (VmRSS) is read once it is idle before, and once its CPU is quiet again after; the difference per
 * parked workflow, and per 10,000, is the cost of keeping them cached (no replay when a window wakes them).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../src/config';
import { createPool, withTransaction, type Pool } from '../src/db/pool';
import { settlementDateOf } from '../src/easternDates';
import { insertTransaction } from '../src/ledger/transactions';
import { createOrganization } from '../src/orgs/repo';
import { createScratchDatabase, startScratchTemporal } from '../test/support/scratch';
import { cpuSeconds } from './cpu';
import { startProcess, stopProcess } from './processes';
import { writeResults } from './results';

const PARKED = Number(process.env.BENCH_PARKED ?? 2_000);
const CLI = process.env.TEMPORAL_CLI_PATH ?? path.join(REPO_ROOT, '.tools', 'bin', 'temporal');
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const TASK_QUEUE = 'ledger-cache';

const say = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mib = (kib: number) => Number((kib / 1024).toFixed(1));

function rssKiB(pid: number): number {
  const line = fs
    .readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((each) => each.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]);
}

/** Waits until the process used under 2 % of a core over 3 s. */
async function quiet(pid: number): Promise<void> {
  for (;;) {
    const before = cpuSeconds(pid) ?? 0;
    await sleep(3_000);
    if ((cpuSeconds(pid) ?? 0) - before < 0.06) return;
  }
}

async function queueEmpty(pool: Pool): Promise<void> {
  for (;;) {
    const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM lifecycle_queue`);
    if (rows[0]!.n === 0) return;
    await sleep(200);
  }
}

async function main() {
  const cleanup: Array<() => unknown> = [];
  try {
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-cache-'));
    cleanup.push(() => fs.rmSync(workDir, { recursive: true, force: true }));
    const temporal = await startScratchTemporal(CLI, path.join(workDir, 'temporal.log'), { dbFile: null });
    cleanup.push(() => temporal.stop());
    const scratch = await createScratchDatabase(PG_BASE, `ledger_cache_${Date.now()}_${process.pid}`);
    cleanup.push(() => scratch.drop());
    const pool = createPool(scratch.databaseUrl, 4);
    cleanup.push(() => pool.end());
    const env = {
      DATABASE_URL: scratch.databaseUrl,
      TEMPORAL_ADDRESS: temporal.server.address,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      LOG_LEVEL: 'info',
      SANDBOX_CONFIRM_SECONDS: '3600',
      WEBHOOK_DISPATCHER: 'off',
      TEMPORAL_METRICS_ADDRESS: 'off',
      WORKER_METRICS_PORT: '0',
      WORKER_MAX_CACHED_WORKFLOWS: String(PARKED + 500),
    };
    const worker = await startProcess('worker', 'ops/bin/worker.ts', env, /worker running/);
    cleanup.push(() => stopProcess(worker));
    const pid = worker.pid!;
    await quiet(pid);
    const idleKiB = rssKiB(pid);
    say(`worker idle: ${mib(idleKiB)} MiB RSS; queueing ${PARKED} lifecycles`);
    const org = await createOrganization(pool, { name: 'Cache bench', kycRequired: true, environment: 'sandbox' });
    const now = new Date();
    for (let i = 0; i < PARKED; i += 1) {
      await withTransaction(pool, (tx) =>
        insertTransaction(tx, {
          organizationId: org.organization.id,
          accountId: org.account.id,
          direction: 'cash_in',
          type: 'intent',
          sourceId: null,
          amountCents: 1 + i,
          date: settlementDateOf(now, '00:00'),
          createdAt: now,
          taskQueue: TASK_QUEUE,
        }),
      );
    }
    await queueEmpty(pool);
    await quiet(pid);
    const parkedKiB = rssKiB(pid);
    const perWorkflowKiB = (parkedKiB - idleKiB) / PARKED;
    const results = {
      bench: 'workerCache',
      parked: PARKED,
      rss_idle_mib: mib(idleKiB),
      rss_parked_mib: mib(parkedKiB),
      kib_per_parked_workflow: Number(perWorkflowKiB.toFixed(1)),
      mib_per_10000_parked: mib(perWorkflowKiB * 10_000),
    };
    say(JSON.stringify(results, null, 2));
    writeResults('workerCache', results);
  } finally {
    for (const step of cleanup.reverse()) await Promise.resolve(step()).catch(() => undefined);
  }
}

main().catch((error: unknown) => {
  say(`worker cache bench failed: ${(error as Error).stack ?? String(error)}`);
  process.exit(1);
});
