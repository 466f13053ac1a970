/**
 * What per-user limits (SPEC §26) cost at approval. Two goals, measured in one run against one in-process API
 * on a real Postgres (a scratch database) and a Temporal dev server of its own (no worker: this measures intake):
 *
 * 1. POST /intent for a user with limits set (day, week and month, never reached) against a user without any,
 *    from BENCH_CLIENTS concurrent loops for BENCH_SECONDS per round, the two alternating round by round (which
 *    goes first alternating too) so the shared box's noise hits both alike. Goal: the p50 latency with a limit
 *    ≤ 1.1× without, and so the throughput. Both users' approvals are counted (every approval is, so that a
 *    limit set later starts from the period's real use): the difference is reading and comparing the limits.
 * 2. The check itself (`takeLimits`: lock-and-read the user's counter row, then add) for a user with
 *    BENCH_PAST_INTENTS approved intents (1,000,000 by default, inserted straight into the intents table) against
 *    a user with none, BENCH_CHECKS times each, alternating, each in its own committed transaction. Goal: p50
 *    within 1.2×. POST /intent's p50 for the two users is reported beside it.
 *
 *   npm run bench -- limits
 *   BENCH_PAST_INTENTS=100000 BENCH_SECONDS=3 npx tsx bench/limits.ts
 *
 * Client and API share this process (both ways alike). Writes bench/results/limits-<time>.json.
 */
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { startApi } from '../src/api';
import { loadConfig } from '../src/config';
import { createPool, withTransaction, type Pool } from '../src/db/pool';
import { randomString } from '../src/ids';
import { takeLimits } from '../src/limits/service';
import { createLogger } from '../src/logger';
import { createOrganization, setRateLimits } from '../src/orgs/repo';
import { createTestUser } from '../test/support/harness';
import { createScratchDatabase, startScratchTemporal } from '../test/support/scratch';
import { closeConnections, postJson } from './http';
import { writeResults } from './results';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 8);
const PAST_INTENTS = Number(process.env.BENCH_PAST_INTENTS ?? 1_000_000);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 2_000);
const SINGLE_REQUESTS = Number(process.env.BENCH_SINGLE_REQUESTS ?? 500);
const ADMIN_URL = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DATABASE = `ledger_bench_limits_${randomString(8)
  .toLowerCase()
  .replace(/[^a-z0-9]/g, 'x')}`;
const CLI = process.env.TEMPORAL_CLI_PATH ?? path.join(path.resolve(__dirname, '..'), '.tools', 'bin', 'temporal');
const GOAL_WITH_LIMIT_MAX = 1.1;
const GOAL_HISTORY_MAX = 1.2;

interface Target {
  baseUrl: string;
  apiKey: string;
  pool: Pool;
  organizationId: string;
}

function log(message: string): void {
  process.stdout.write(`[bench:limits] ${message}\n`);
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}
const ms = (value: number) => Number(value.toFixed(3));

async function postIntent(target: Target, userId: string): Promise<number> {
  const started = performance.now();
  const answer = await postJson(
    `${target.baseUrl}/intent`,
    { Authorization: `Bearer ${target.apiKey}`, 'X-Idempotency-Key': randomString(24) },
    { direction: 'cash_in', user_id: userId, amount: 100, currency: 'USD' },
  );
  if (answer.status !== 200 || !answer.text.includes('"approved"')) throw new Error(`intent not approved: ${answer.status} ${answer.text}`);
  return performance.now() - started;
}

/** CLIENTS loops of POST /intent for one user for `seconds`: the latencies. */
async function load(target: Target, userId: string, seconds: number): Promise<{ latencies: number[]; seconds: number }> {
  const deadline = Date.now() + seconds * 1000;
  const started = performance.now();
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < deadline) latencies.push(await postIntent(target, userId));
    }),
  );
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

/** Goal 1: alternating rounds with and without a limit. */
async function withAndWithout(target: Target, users: { limited: string; unlimited: string }) {
  await load(target, users.limited, 1);
  await load(target, users.unlimited, 1);
  const rounds: Array<{ way: 'limit' | 'none'; per_second: number; p50_ms: number; p99_ms: number }> = [];
  for (let r = 0; r < ROUNDS; r += 1) {
    const order = r % 2 === 0 ? (['limit', 'none'] as const) : (['none', 'limit'] as const);
    for (const way of order) {
      const round = await load(target, way === 'limit' ? users.limited : users.unlimited, SECONDS);
      const figures = {
        way,
        per_second: Math.round(round.latencies.length / round.seconds),
        p50_ms: ms(percentile(round.latencies, 50)),
        p99_ms: ms(percentile(round.latencies, 99)),
      };
      log(`POST /intent ${way === 'limit' ? 'with a limit' : 'without'}: ${figures.per_second}/s, p50 ${figures.p50_ms} ms`);
      rounds.push(figures);
    }
  }
  const median = (way: 'limit' | 'none', key: 'per_second' | 'p50_ms') =>
    percentile(
      rounds.filter((round) => round.way === way).map((round) => round[key]),
      50,
    );
  const p50Ratio = Number((median('limit', 'p50_ms') / median('none', 'p50_ms')).toFixed(3));
  const throughputRatio = Number((median('none', 'per_second') / median('limit', 'per_second')).toFixed(3));
  return {
    clients: CLIENTS,
    seconds_per_round: SECONDS,
    rounds,
    p50_ms_median: { with_limit: median('limit', 'p50_ms'), without: median('none', 'p50_ms') },
    per_second_median: { with_limit: median('limit', 'per_second'), without: median('none', 'per_second') },
    p50_ratio: p50Ratio,
    throughput_cost_ratio: throughputRatio,
    goal_max: GOAL_WITH_LIMIT_MAX,
    goal_met: p50Ratio <= GOAL_WITH_LIMIT_MAX && throughputRatio <= GOAL_WITH_LIMIT_MAX,
  };
}

/** BENCH_PAST_INTENTS approved cash_in intents of `userId`, one set-based insert per 100,000. */
async function seedHistory(pool: Pool, organizationId: string, userId: string): Promise<void> {
  const { rows } = await pool.query<{ id: string }>(`SELECT id FROM accounts WHERE organization_id = $1`, [organizationId]);
  const started = Date.now();
  for (let done = 0; done < PAST_INTENTS; done += 100_000) {
    const count = Math.min(100_000, PAST_INTENTS - done);
    await pool.query(
      `INSERT INTO intents (id, organization_id, account_id, user_id, idempotency_key, direction, amount_cents, approval_mode, status,
                            created_at, updated_at)
       SELECT 'intent_sandbox_' || md5('past-' || $4 || '-' || g), $1, $2, $3, 'past-' || $4 || '-' || g, 'cash_in', 100, 'automatic', 'approved',
              now() - g * interval '1 second', now() - g * interval '1 second'
         FROM generate_series(1, $5) AS g`,
      [organizationId, rows[0]!.id, userId, done, count],
    );
    log(`seeded ${done + count} past intents (${Math.round((Date.now() - started) / 1000)} s)`);
  }
  await pool.query('ANALYZE intents');
}

/** Goal 2: the check's own time, alternating the two users, each check its own committed transaction. */
async function checkCost(target: Target, users: { history: string; fresh: string }) {
  const times: Record<'history' | 'fresh', number[]> = { history: [], fresh: [] };
  const op = (db: Parameters<typeof takeLimits>[0]['db']) => ({ db, organizationId: target.organizationId, now: new Date() });
  for (let i = 0; i < CHECKS * 2; i += 1) {
    const who = i % 2 === 0 ? 'history' : 'fresh';
    await withTransaction(target.pool, async (db) => {
      const started = performance.now();
      const [over] = await takeLimits(op(db), [{ userId: users[who], direction: 'cash_in', amountCents: 1 }]);
      times[who].push(performance.now() - started);
      if (over) throw new Error(`check declined: ${JSON.stringify(over)}`);
    });
  }
  const single: Record<'history' | 'fresh', number[]> = { history: [], fresh: [] };
  for (let i = 0; i < SINGLE_REQUESTS * 2; i += 1) {
    const who = i % 2 === 0 ? 'history' : 'fresh';
    single[who].push(await postIntent(target, users[who]));
  }
  const p50 = (values: number[]) => ms(percentile(values, 50));
  const ratio = Number((p50(times.history) / p50(times.fresh)).toFixed(3));
  return {
    past_intents: PAST_INTENTS,
    checks_each: CHECKS,
    check_ms: {
      history: { p50: p50(times.history), p99: ms(percentile(times.history, 99)) },
      fresh: { p50: p50(times.fresh), p99: ms(percentile(times.fresh, 99)) },
    },
    check_p50_ratio: ratio,
    post_intent_p50_ms_one_client: { history: p50(single.history), fresh: p50(single.fresh) },
    goal_max: GOAL_HISTORY_MAX,
    goal_met: ratio <= GOAL_HISTORY_MAX,
  };
}

async function serve(cleanup: Array<() => Promise<unknown>>): Promise<Target> {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-bench-limits-'));
  cleanup.push(async () => fs.rmSync(workDir, { recursive: true, force: true }));
  const temporal = await startScratchTemporal(CLI, path.join(workDir, 'temporal.log'), { dbFile: path.join(workDir, 'temporal.db') });
  cleanup.push(() => temporal.stop());
  const scratch = await createScratchDatabase(ADMIN_URL, DATABASE);
  cleanup.push(() => scratch.drop());
  const config = loadConfig({
    DATABASE_URL: scratch.databaseUrl,
    TEMPORAL_ADDRESS: temporal.server.address,
    TEMPORAL_TASK_QUEUE: 'ledger-bench-limits',
    LOG_LEVEL: 'silent',
    PORT: '0',
  });
  const pool = createPool(scratch.databaseUrl, config.DATABASE_POOL_MAX);
  cleanup.push(() => pool.end());
  const api = await startApi({ config, pool, log: createLogger('silent'), temporal: temporal.client });
  cleanup.push(() => api.close());
  const org = await createOrganization(pool, { name: 'Bench operator', kycRequired: true, environment: 'sandbox' });
  await setRateLimits(pool, org.organization.id, { write: 1_000_000, read: 1_000_000 });
  return { baseUrl: api.url, apiKey: org.key.api_key, pool, organizationId: org.organization.id };
}

async function setLimits(target: Target, userId: string): Promise<void> {
  const limit = 1_000_000_000_000;
  const answer = await fetch(`${target.baseUrl}/user/${userId}/limits`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${target.apiKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ cash_in: { day: limit, week: limit, month: limit } }),
  });
  if (answer.status !== 200) throw new Error(`PUT limits answered ${answer.status}: ${await answer.text()}`);
}

async function main(): Promise<void> {
  const cleanup: Array<() => Promise<unknown>> = [];
  try {
    log(`database ${DATABASE}; ${CLIENTS} clients, ${ROUNDS} rounds of ${SECONDS} s each way; ${PAST_INTENTS} past intents`);
    const target = await serve(cleanup);
    const user = () => createTestUser(target.pool, target.organizationId, 'enabled');
    const users = { limited: await user(), unlimited: await user(), history: await user(), fresh: await user() };
    for (const userId of [users.limited, users.history, users.fresh]) await setLimits(target, userId);
    const withLimit = await withAndWithout(target, users);
    await seedHistory(target.pool, target.organizationId, users.history);
    const history = await checkCost(target, users);
    log(`check p50: ${history.check_ms.history.p50} ms with ${PAST_INTENTS} past intents, ${history.check_ms.fresh.p50} ms with none`);
    closeConnections();
    const summary = {
      bench: 'limits',
      finished_at: new Date().toISOString(),
      cores: os.cpus().length,
      load_average: os.loadavg().map((value) => Number(value.toFixed(1))),
      with_limit: withLimit,
      history,
    };
    log(`results in ${writeResults('limits', summary)}`);
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
