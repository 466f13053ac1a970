/**
 * What POST /intent/batch buys an operator paying out many intents (SPEC §19 goal: ≥ 10× the intents accepted
 * per second through 100-item batches as through single POST /intent, from the same machine): one in-process
 * API on a real Postgres and a Temporal dev server of its own (SQLite file, `npm start`'s flags), every
 * approved intent's lifecycle workflow started as in production (no worker runs them: this measures intake).
 * A client process of its own sends, from BENCH_CLIENTS concurrent loops, either single POST /intent requests
 * or POST /intent/batch requests of BENCH_BATCH_SIZE items, for BENCH_SECONDS per round; the two ways
 * alternate round by round (which goes first alternating too) so the shared box's noise hits both alike. Each
 * figure is the median of BENCH_ROUNDS rounds of intents accepted (answered 200, in their slot for a batch)
 * per second, and the ratio is batch over single.
 *
 *   npm run bench -- batch                                 # 3 rounds of 5 s each way, 8 clients, 100 per batch
 *   BENCH_ROUNDS=5 BENCH_SECONDS=10 npx tsx bench/batch.ts
 *
 * Prints progress lines and the summary; writes the summary to bench/results/batch-<time>.json.
 * BENCH_DATABASE_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/postgres) must let us create a database.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startApi } from '../src/api';
import { loadConfig } from '../src/config';
import { createPool } from '../src/db/pool';
import { randomString } from '../src/ids';
import { createLogger } from '../src/logger';
import { createOrganization, setRateLimits } from '../src/orgs/repo';
import { createTestUser } from '../test/support/harness';
import { createScratchDatabase, startScratchTemporal } from '../test/support/scratch';
import { closeConnections, postJson } from './http';
import { writeResults } from './results';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 8);
const BATCH_SIZE = Number(process.env.BENCH_BATCH_SIZE ?? 100);
const WARMUP_SECONDS = 1;
const ADMIN_URL = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DATABASE = `ledger_bench_batch_${randomString(8)
  .toLowerCase()
  .replace(/[^a-z0-9]/g, 'x')}`;
const REPO_ROOT = path.resolve(__dirname, '..');
const CLI = process.env.TEMPORAL_CLI_PATH ?? path.join(REPO_ROOT, '.tools', 'bin', 'temporal');
const GOAL_RATIO_MIN = 10;

type Way = 'single' | 'batch';
/** `approved`: each intent records a transaction and starts its workflow; `pending`: manual cash_out, no transaction yet. */
type Decision = 'approved' | 'pending';
const DECISIONS: Decision[] = ['approved', 'pending'];

interface Target {
  baseUrl: string;
  apiKey: string;
  userId: string;
}

interface Round {
  way: Way;
  decision: Decision;
  requests: number;
  accepted: number;
  refused: number;
  seconds: number;
}

function log(message: string): void {
  process.stdout.write(`[bench:batch] ${message}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const intentBody = (userId: string, i: number, decision: Decision) => ({
  direction: 'cash_out',
  user_id: userId,
  amount: 100 + (i % 1000),
  currency: 'USD',
  approval_mode: decision === 'pending' ? 'manual' : 'automatic',
});

/** One request of `way`; answers how many intents it got accepted and refused. */
async function send(target: Target, way: Way, decision: Decision, i: number): Promise<{ accepted: number; refused: number }> {
  const headers = { Authorization: `Bearer ${target.apiKey}`, 'X-Idempotency-Key': randomString(24) };
  if (way === 'single') {
    const answer = await postJson(`${target.baseUrl}/intent`, headers, intentBody(target.userId, i, decision));
    return answer.status === 200 ? { accepted: 1, refused: 0 } : { accepted: 0, refused: 1 };
  }
  const intents = Array.from({ length: BATCH_SIZE }, (_, j) => ({
    idempotency_key: randomString(24),
    ...intentBody(target.userId, i + j, decision),
  }));
  const answer = await postJson(`${target.baseUrl}/intent/batch`, headers, { intents });
  if (answer.status !== 200) return { accepted: 0, refused: BATCH_SIZE };
  const { data } = JSON.parse(answer.text) as { data: Array<{ status: number }> };
  const accepted = data.filter((slot) => slot.status === 200).length;
  return { accepted, refused: BATCH_SIZE - accepted };
}

/** CLIENTS loops sending `way` for `seconds`. */
async function load(target: Target, way: Way, decision: Decision, seconds: number): Promise<Round> {
  const deadline = Date.now() + seconds * 1000;
  const started = Date.now();
  const round: Round = { way, decision, requests: 0, accepted: 0, refused: 0, seconds: 0 };
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < deadline) {
        const answered = await send(target, way, decision, next++);
        round.requests += 1;
        round.accepted += answered.accepted;
        round.refused += answered.refused;
      }
    }),
  );
  round.seconds = (Date.now() - started) / 1000;
  return round;
}

/** The client process: warm-up, then the rounds, alternating; prints them as one JSON line. */
async function client(target: Target): Promise<void> {
  for (const way of ['single', 'batch'] as const) await load(target, way, 'approved', WARMUP_SECONDS);
  const rounds: Round[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order: Way[] = r % 2 === 0 ? ['single', 'batch'] : ['batch', 'single'];
    for (const decision of DECISIONS) for (const way of order) rounds.push(await load(target, way, decision, SECONDS));
  }
  process.stdout.write(`${JSON.stringify(rounds)}\n`);
  closeConnections();
}

function runClient(target: Target): Promise<Round[]> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', __filename, 'client'],
      { env: { ...process.env, BENCH_BATCH_TARGET: JSON.stringify(target) }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`client failed: ${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as Round[]);
      },
    );
  });
}

/** The served API on a scratch database and a Temporal dev server of its own, one organization and user. */
async function serve(cleanup: Array<() => Promise<unknown>>): Promise<Target> {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-bench-batch-'));
  cleanup.push(async () => fs.rmSync(workDir, { recursive: true, force: true }));
  const temporal = await startScratchTemporal(CLI, path.join(workDir, 'temporal.log'), { dbFile: path.join(workDir, 'temporal.db') });
  cleanup.push(() => temporal.stop());
  const scratch = await createScratchDatabase(ADMIN_URL, DATABASE);
  cleanup.push(() => scratch.drop());
  const config = loadConfig({
    DATABASE_URL: scratch.databaseUrl,
    TEMPORAL_ADDRESS: temporal.server.address,
    TEMPORAL_TASK_QUEUE: 'ledger-bench-batch',
    LOG_LEVEL: 'silent',
    PORT: '0',
  });
  const pool = createPool(scratch.databaseUrl, config.DATABASE_POOL_MAX);
  cleanup.push(() => pool.end());
  const api = await startApi({ config, pool, log: createLogger('silent'), temporal: temporal.client });
  cleanup.push(() => api.close());
  const org = await createOrganization(pool, { name: 'Bench operator', kycRequired: true, environment: 'sandbox' });
  await setRateLimits(pool, org.organization.id, { write: 1_000_000, read: 1_000_000 });
  const userId = await createTestUser(pool, org.organization.id, 'enabled');
  return { baseUrl: api.url, apiKey: org.key.api_key, userId };
}

function ratioOf(rounds: Round[], decision: Decision) {
  const rates = (way: Way) =>
    rounds.filter((round) => round.way === way && round.decision === decision).map((round) => round.accepted / round.seconds);
  const single = median(rates('single'));
  const batch = median(rates('batch'));
  const ratio = Number((batch / single).toFixed(2));
  return { single_intents_per_second_median: Math.round(single), batch_intents_per_second_median: Math.round(batch), ratio };
}

function summarize(rounds: Round[]) {
  const approved = ratioOf(rounds, 'approved');
  return {
    bench: 'batch',
    finished_at: new Date().toISOString(),
    cores: os.cpus().length,
    load_average: os.loadavg().map((value) => Number(value.toFixed(1))),
    clients: CLIENTS,
    batch_size: BATCH_SIZE,
    seconds_per_round: SECONDS,
    rounds: rounds.map((round) => ({ ...round, intents_per_second: Math.round(round.accepted / round.seconds) })),
    approved,
    pending: ratioOf(rounds, 'pending'),
    goal_ratio_min: GOAL_RATIO_MIN,
    goal_met_approved: approved.ratio >= GOAL_RATIO_MIN,
  };
}

async function main(): Promise<void> {
  const cleanup: Array<() => Promise<unknown>> = [];
  try {
    log(`database ${DATABASE}; ${CLIENTS} clients, batches of ${BATCH_SIZE}, ${ROUNDS} rounds of ${SECONDS} s each way`);
    const target = await serve(cleanup);
    const rounds = await runClient(target);
    for (const round of rounds)
      log(`${round.decision} ${round.way}: ${Math.round(round.accepted / round.seconds)} intents/s (${round.refused} refused)`);
    const summary = summarize(rounds);
    log(`results in ${writeResults('batch', summary)}`);
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
  }
}

if (process.argv[2] === 'client') void client(JSON.parse(process.env.BENCH_BATCH_TARGET!) as Target);
else
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
