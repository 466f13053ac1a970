/**
 * `npm run bench -- achLoad` (SPEC §24 goal): the api's write p99 while an ACH window file is being built
 * stays within 1.5× its p99 without a build. One api process (ops/bin/api.ts) on a scratch database and
 * Temporal dev server, BENCH_ACH_LOAD_CLIENTS (8) clients POSTing /intent (sandbox cash_in deposits from a
 * bank account, each queuing an ACH entry) without pause. No worker process: the writes never wait on
 * Temporal (SPEC §20; bench/intake.ts 2b), and the build, the worker's part here, runs in a process of its
 * own (on the shared 2 cores a worker bundling its workflows and running lifecycles is noise for both phases).
 * Each of BENCH_ACH_LOAD_ROUNDS (3) rounds:
 * 1. BENCH_ACH_LOAD_ENTRIES (100,000) queued entries are seeded (set-based SQL, test/support/achSeed.ts);
 * 2. baseline: the load alone for as long as the previous round's build took (the first round: 10 s);
 * 3. build: bench/achBuild.ts builds the window's file in a process of its own (as the worker's build
 *    activity does: claim, trace numbers, bank accounts opened, bytes, sealed and stored, entries moved in,
 *    one database transaction) while the same load runs; only the writes sent while it builds count.
 * Reported: each phase's p99 and count, the ratio of the medians (goal ≤ 1.5), the build's ms.
 *   BENCH_ACH_LOAD_ENTRIES=100000 BENCH_ACH_LOAD_ROUNDS=3 npx tsx bench/achLoad.ts
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { REPO_ROOT } from '../src/config';
import { createPool, type Pool } from '../src/db/pool';
import { randomString } from '../src/ids';
import { createOrganization, setRateLimits } from '../src/orgs/repo';
import { seedQueuedDeposits } from '../test/support/achSeed';
import { createTestUser } from '../test/support/harness';
import { createScratchDatabase, startScratchTemporal } from '../test/support/scratch';
import { closeConnections, makeBankAccount, postJson } from './http';
import { startApiProcess, startProcess } from './processes';
import { writeResults } from './results';

const ENTRIES = Number(process.env.BENCH_ACH_LOAD_ENTRIES ?? 100_000);
const ROUNDS = Math.max(3, Number(process.env.BENCH_ACH_LOAD_ROUNDS ?? 3));
const CLIENTS = Number(process.env.BENCH_ACH_LOAD_CLIENTS ?? 8);
const FIRST_BASELINE_MS = 10_000;
const CLI = process.env.TEMPORAL_CLI_PATH ?? path.join(REPO_ROOT, '.tools', 'bin', 'temporal');
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const TASK_QUEUE = 'ledger-ach-load';

const say = (line: string) => process.stdout.write(`${line}\n`);
const round = (value: number, digits = 1) => Number(value.toFixed(digits));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function p99(latencies: number[]): number {
  const sorted = [...latencies].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? NaN;
}

interface Sample {
  sentAt: number;
  ms: number;
}

/** CLIENTS loops POSTing /intent until `stop()`; every answer must be 200. */
function startLoad(apiUrl: string, apiKey: string, userId: string, bankAccountId: string) {
  const samples: Sample[] = [];
  let running = true;
  let failures = 0;
  const headers = () => ({ Authorization: `Bearer ${apiKey}`, 'X-Idempotency-Key': `load-${randomString(20)}` });
  let resets = 0;
  const client = async () => {
    while (running) {
      const sentAt = performance.now();
      const answer = await postJson(`${apiUrl}/intent`, headers(), {
        direction: 'cash_in',
        user_id: userId,
        amount: 100,
        currency: 'USD',
        bank_account_id: bankAccountId,
      }).catch((error: NodeJS.ErrnoException) => {
        // A kept-alive connection the api closed while idle (during the seeding) is reset on its first reuse.
        if (error.code !== 'ECONNRESET' || (resets += 1) > CLIENTS * 2) throw error;
        return null;
      });
      if (answer === null) continue;
      samples.push({ sentAt, ms: performance.now() - sentAt });
      if (answer.status !== 200) failures += 1;
    }
  };
  const loops = Array.from({ length: CLIENTS }, client);
  return {
    samples,
    async stop() {
      running = false;
      await Promise.all(loops);
      if (failures > 0) throw new Error(`${failures} writes did not answer 200`);
    },
  };
}

/** Runs bench/achBuild.ts; resolves with the performance.now() interval of its build and the build's own ms. */
async function buildInProcess(env: Record<string, string>): Promise<{ from: number; to: number; ms: number; entries: number }> {
  const child: ChildProcess = await startProcess('build', 'bench/achBuild.ts', env, /building/);
  const from = performance.now();
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the build exited with ${code}: ${output}`))));
  });
  const to = performance.now();
  const line = /built (\{.*\})/.exec(output);
  if (!line) throw new Error(`the build said nothing: ${output}`);
  return { from, to, ...(JSON.parse(line[1]!) as { ms: number; entries: number }) };
}

async function rounds(pool: Pool, apiUrl: string, apiKey: string, userId: string, bankAccountId: string, env: Record<string, string>) {
  const results: Array<{ baseline_p99_ms: number; baseline_writes: number; build_p99_ms: number; build_writes: number; build_ms: number }> =
    [];
  let baselineMs = FIRST_BASELINE_MS;
  for (let r = 0; r < ROUNDS; r += 1) {
    const seeded = Date.now();
    await seedQueuedDeposits(pool, {
      bankAccountIds: [bankAccountId],
      count: ENTRIES,
      tag: `r${r}${randomString(8)}`,
      environment: 'sandbox',
    });
    await pool.query('VACUUM ANALYZE ach_entries');
    say(`  round ${r + 1}: seeded ${ENTRIES} queued entries in ${((Date.now() - seeded) / 1000).toFixed(1)} s`);
    const load = startLoad(apiUrl, apiKey, userId, bankAccountId);
    // The load stops before anything else on every path: a build that fails must not leave clients writing to an
    // api the cleanup then stops (their ECONNREFUSED crashed the bench and hid the build's own error).
    let build: Awaited<ReturnType<typeof buildInProcess>>;
    let baselineFrom: number, baselineTo: number;
    try {
      await sleep(2_000);
      baselineFrom = performance.now();
      await sleep(baselineMs);
      baselineTo = performance.now();
      build = await buildInProcess(env);
    } catch (error) {
      await load.stop().catch(() => undefined);
      throw error;
    }
    await load.stop();
    const within = (from: number, to: number) => load.samples.filter((s) => s.sentAt >= from && s.sentAt < to).map((s) => s.ms);
    const baseline = within(baselineFrom, baselineTo);
    const during = within(build.from, build.to);
    if (build.entries !== ENTRIES) throw new Error(`the build filed ${build.entries} entries, not ${ENTRIES}`);
    results.push({
      baseline_p99_ms: round(p99(baseline)),
      baseline_writes: baseline.length,
      build_p99_ms: round(p99(during)),
      build_writes: during.length,
      build_ms: round(build.ms),
    });
    say(`  round ${r + 1}: ${JSON.stringify(results.at(-1))}`);
    baselineMs = Math.max(5_000, build.to - build.from);
  }
  return results;
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const cleanup: Array<() => unknown> = [];
  try {
    say(`ACH load bench: ${os.cpus().length} cores, ${ENTRIES}-entry builds, ${ROUNDS} rounds, ${CLIENTS} clients`);
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-ach-load-'));
    cleanup.push(() => fs.rmSync(workDir, { recursive: true, force: true }));
    const temporal = await startScratchTemporal(CLI, path.join(workDir, 'temporal.log'), { dbFile: path.join(workDir, 'temporal.db') });
    cleanup.push(() => temporal.stop());
    const scratch = await createScratchDatabase(
      PG_BASE,
      `ledger_ach_load_${Date.now()}_${randomString(6)
        .toLowerCase()
        .replace(/[^a-z0-9]/g, 'x')}`,
    );
    cleanup.push(() => scratch.drop());
    const pool = createPool(scratch.databaseUrl, 4);
    cleanup.push(() => pool.end());
    cleanup.push(() => closeConnections());
    const env = {
      DATABASE_URL: scratch.databaseUrl,
      TEMPORAL_ADDRESS: temporal.server.address,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      LOG_LEVEL: 'warn',
      WEBHOOK_DISPATCHER: 'off',
      TEMPORAL_METRICS_ADDRESS: 'off',
      WORKER_METRICS_PORT: '0',
      BENCH_ACH_LOAD_ENTRIES: String(ENTRIES),
    };
    const org = await createOrganization(pool, { name: 'ACH load bench', kycRequired: true, environment: 'sandbox' });
    await setRateLimits(pool, org.organization.id, { write: 1_000_000, read: 1_000_000 });
    const userId = await createTestUser(pool, org.organization.id, 'enabled');
    const { apiUrl } = await startApiProcess(env, cleanup);
    say(`  api at ${apiUrl}`);
    const bankAccountId = await makeBankAccount(apiUrl, org.key.api_key, userId);
    const results = await rounds(pool, apiUrl, org.key.api_key, userId, bankAccountId, env);
    const baselineP99 = median(results.map((r) => r.baseline_p99_ms));
    const buildP99 = median(results.map((r) => r.build_p99_ms));
    const summary = {
      bench: 'achLoad',
      cpus: os.cpus().length,
      entries: ENTRIES,
      clients: CLIENTS,
      baseline_p99_ms: baselineP99,
      build_p99_ms: buildP99,
      build_vs_baseline_p99: round(buildP99 / baselineP99, 3),
      goal_build_vs_baseline_p99_max: 1.5,
      build_ms: round(median(results.map((r) => r.build_ms))),
      rounds: results,
    };
    const written = writeResults('achLoad', summary);
    say(JSON.stringify(summary, null, 2));
    say(`Results: ${written}`);
  } finally {
    for (const step of cleanup.reverse()) await step();
  }
}

main().catch((error: Error) => {
  process.stderr.write(`${error.stack ?? error.message}\n`);
  process.exit(1);
});
