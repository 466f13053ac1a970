/**
 * `npm run bench -- replay` (SPEC §17 goals): replaying REPLAY_EVENTS (10,000) events to a local receiver
 * against the first deliveries of the same events in the same run (goal: the replay at ≥ 0.5× their rate),
 * the worker's RSS sampled through both; then GET /event?object_id= over INDEX_EVENTS (1,000,000) events,
 * EXPLAIN (ANALYZE) showing the index it answers from, beside a lookup by primary key.
 *
 * The stack is `npm start`'s configuration: the dev server on a SQLite file, the worker and the api as their
 * own processes (`npm run worker`, `npm run api`) with default settings, the outbox dispatcher on.
 *   BENCH_REPLAY_EVENTS=10000 BENCH_INDEX_EVENTS=1000000 npx tsx bench/replay.ts
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../src/config';
import { createPool, type Pool } from '../src/db/pool';
import { randomString } from '../src/ids';
import { createOrganization, setRateLimits } from '../src/orgs/repo';
import { createEndpoint } from '../src/webhooks/repo';
import { generateSecret, sealSecret } from '../src/webhooks/signing';
import { freePort } from '../test/support/ports';
import { createScratchDatabase, startScratchTemporal } from '../test/support/scratch';
import { startProcess, stopProcess } from './processes';
import { writeResults } from './results';

const REPLAY_EVENTS = Number(process.env.BENCH_REPLAY_EVENTS ?? 10_000);
const INDEX_EVENTS = Number(process.env.BENCH_INDEX_EVENTS ?? 1_000_000);
/** How long either phase may take before the bench gives up. */
const PHASE_LIMIT_MS = 30 * 60_000;
const CLI = process.env.TEMPORAL_CLI_PATH ?? path.join(REPO_ROOT, '.tools', 'bin', 'temporal');
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const say = (line: string) => process.stdout.write(`${line}\n`);
const round = (value: number, digits = 1) => Number(value.toFixed(digits));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A receiver that answers 200 at once and counts requests per webhook-id. */
async function startReceiver(): Promise<{ url: string; received: Map<string, number>; requests: () => number; close(): Promise<void> }> {
  const received = new Map<string, number>();
  let requests = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      received.set(id, (received.get(id) ?? 0) + 1);
      requests += 1;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    requests: () => requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return round(kb / 1024);
}

/** Waits until `done()` while sampling the worker's RSS every 500 ms; a progress line every 5 s. */
async function phase(label: string, workerPid: number, progress: () => number, done: () => Promise<boolean>) {
  const started = performance.now();
  const rss: number[] = [];
  let lastSay = started;
  while (!(await done())) {
    if (performance.now() - started > PHASE_LIMIT_MS) throw new Error(`${label}: not done in ${PHASE_LIMIT_MS} ms`);
    rss.push(rssMb(workerPid));
    if (performance.now() - lastSay > 5_000) {
      lastSay = performance.now();
      say(`  [${label}] ${((lastSay - started) / 1000).toFixed(0)} s  ${progress()}/${REPLAY_EVENTS}`);
    }
    await sleep(500);
  }
  const seconds = (performance.now() - started) / 1000;
  rss.push(rssMb(workerPid));
  return { seconds: round(seconds, 2), per_second: round(REPLAY_EVENTS / seconds), worker_rss_mb_max: Math.max(...rss) };
}

/** EXPLAIN (ANALYZE) of GET /event?object_id= as src/events/repo.ts asks it, beside a primary-key lookup; p50 of 20 runs each. */
async function objectIdPlan(pool: Pool, organizationId: string) {
  say(`inserting ${INDEX_EVENTS} events for the object_id query...`);
  const chunk = 100_000;
  for (let from = 0; from < INDEX_EVENTS; from += chunk) {
    await pool.query(
      `INSERT INTO events (organization_id, type, data, created_at, dispatched_at)
       SELECT $1, 'transaction.created', jsonb_build_object('id', 'txn_idx' || g), now() - interval '1 day' + g * interval '1 millisecond', now()
         FROM generate_series($2::int, $3::int) g`,
      [organizationId, from, Math.min(from + chunk, INDEX_EVENTS) - 1],
    );
  }
  await pool.query('ANALYZE events');
  const { rows: one } = await pool.query<{ id: string }>(`SELECT id FROM events WHERE organization_id = $1 LIMIT 1 OFFSET $2`, [
    organizationId,
    Math.floor(INDEX_EVENTS / 2),
  ]);
  const timed = async (sql: string, params: unknown[]) => {
    const times: number[] = [];
    let plan = '';
    for (let i = 0; i < 20; i += 1) {
      const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE) ${sql}`, params);
      plan = rows.map((row) => row['QUERY PLAN']).join('\n');
      times.push(Number(/Execution Time: ([\d.]+) ms/.exec(plan)?.[1]));
    }
    times.sort((a, b) => a - b);
    return { p50_ms: round(times[10]!, 3), plan };
  };
  const byObject = await timed(
    `SELECT e.id, e.organization_id, e.type, e.data, e.created_at FROM events e
      WHERE e.organization_id = $1 AND e.data ->> 'id' = $2 ORDER BY e.created_at DESC, e.id DESC LIMIT 26`,
    [organizationId, `txn_idx${Math.floor(INDEX_EVENTS / 3)}`],
  );
  const byId = await timed(
    `SELECT e.id, e.organization_id, e.type, e.data, e.created_at FROM events e WHERE e.id = $1 AND e.organization_id = $2`,
    [one[0]!.id, organizationId],
  );
  say(`GET /event?object_id= over ${INDEX_EVENTS} events:\n${byObject.plan}`);
  return {
    events: INDEX_EVENTS,
    object_id_p50_ms: byObject.p50_ms,
    primary_key_p50_ms: byId.p50_ms,
    uses_index: /Index (Only )?Scan.*events_by_object/.test(byObject.plan),
    plan: byObject.plan.split('\n'),
  };
}

async function main() {
  const cleanup: Array<() => unknown> = [];
  try {
    say(`replay bench: ${os.cpus().length} cores, ${REPLAY_EVENTS} events, object_id over ${INDEX_EVENTS} events`);
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-bench-'));
    cleanup.push(() => fs.rmSync(workDir, { recursive: true, force: true }));
    const temporal = await startScratchTemporal(CLI, path.join(workDir, 'temporal.log'), {
      dbFile: path.join(workDir, 'temporal.db'),
      topology: 'dev',
      adminUrl: PG_BASE,
    });
    cleanup.push(() => temporal.stop());
    const scratch = await createScratchDatabase(PG_BASE, `ledger_bench_${Date.now()}_${randomString(6).toLowerCase()}`);
    cleanup.push(() => scratch.drop());
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const env = {
      DATABASE_URL: scratch.databaseUrl,
      TEMPORAL_ADDRESS: temporal.server.address,
      TEMPORAL_TASK_QUEUE: 'ledger-bench',
      LOG_LEVEL: 'warn',
      TEMPORAL_METRICS_ADDRESS: 'off',
      WORKER_METRICS_PORT: '0',
    };
    const worker: ChildProcess = await startProcess('worker', 'ops/bin/worker.ts', { ...env, LOG_LEVEL: 'info' }, /worker running/);
    cleanup.push(() => stopProcess(worker));
    const port = await freePort();
    const api = await startProcess('api', 'ops/bin/api.ts', { ...env, PORT: String(port) }, null);
    cleanup.push(() => stopProcess(api));
    const apiUrl = `http://127.0.0.1:${port}`;
    for (
      let attempt = 0;
      !(await fetch(`${apiUrl}/healthz`).then(
        (r) => r.ok,
        () => false,
      ));
      attempt += 1
    ) {
      if (attempt > 600) throw new Error('the api did not answer /healthz in 60 s');
      await sleep(100);
    }
    const pool = createPool(scratch.databaseUrl, 4);
    cleanup.push(() => pool.end());
    const results = await measure({ pool, apiUrl, receiver, workerPid: worker.pid! });
    say(`results: ${writeResults('replay', results)}`);
    say(JSON.stringify(results.summary, null, 2));
    process.exitCode = results.summary.replay_vs_first >= 0.5 && results.summary.object_id_uses_index ? 0 : 1;
  } finally {
    for (const step of cleanup.reverse())
      await Promise.resolve(step()).catch((error: unknown) => say(`cleanup: ${(error as Error).message}`));
  }
}

async function measure(input: { pool: Pool; apiUrl: string; receiver: Awaited<ReturnType<typeof startReceiver>>; workerPid: number }) {
  const { pool, apiUrl, receiver, workerPid } = input;
  const org = await createOrganization(pool, { name: 'Bench operator', kycRequired: true, environment: 'sandbox' });
  await setRateLimits(pool, org.organization.id, { write: 1_000_000, read: 1_000_000 });
  const endpoint = await createEndpoint(pool, {
    organizationId: org.organization.id,
    url: receiver.url,
    events: ['*'],
    secretSealed: sealSecret(generateSecret(), undefined),
  });
  const idleRss = rssMb(workerPid);
  const from = new Date(Date.now() - 60_000);
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO events (organization_id, type, data, created_at)
     SELECT $1, 'transaction.created', jsonb_build_object('id', 'txn_bench' || g), $2::timestamptz + g * interval '1 millisecond'
       FROM generate_series(1, $3) g RETURNING id`,
    [org.organization.id, from, REPLAY_EVENTS],
  );
  const ids = rows.map((row) => row.id);
  say(`first deliveries of ${REPLAY_EVENTS} events (the outbox dispatcher, one workflow per event)...`);
  const firstSeen = () => ids.filter((id) => receiver.received.has(id)).length;
  const first = await phase('first', workerPid, firstSeen, async () => firstSeen() === REPLAY_EVENTS);
  const before = receiver.requests();
  say(`replay of the same ${REPLAY_EVENTS} events...`);
  const started = await fetch(`${apiUrl}/webhook/${endpoint.id}/replay`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${org.key.api_key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ created_at_gte: from.toISOString() }),
  }).then((response) => response.json() as Promise<{ id: string; events_total: number }>);
  const status = async () =>
    (
      await pool.query<{ status: string; events_sent: number }>(`SELECT status, events_sent FROM webhook_replays WHERE id = $1`, [
        started.id,
      ])
    ).rows[0]!;
  const replay = await phase(
    'replay',
    workerPid,
    () => receiver.requests() - before,
    async () => (await status()).status !== 'running',
  );
  const final = await status();
  const index = await objectIdPlan(
    pool,
    (await createOrganization(pool, { name: 'Bench index', kycRequired: true, environment: 'sandbox' })).organization.id,
  );
  const summary = {
    events: REPLAY_EVENTS,
    first_per_second: first.per_second,
    replay_per_second: replay.per_second,
    replay_vs_first: round(replay.per_second / first.per_second, 2),
    replay_status: final.status,
    replay_events_sent: final.events_sent,
    replay_requests: receiver.requests() - before,
    worker_rss_mb: { idle: idleRss, first_max: first.worker_rss_mb_max, replay_max: replay.worker_rss_mb_max },
    object_id_p50_ms: index.object_id_p50_ms,
    primary_key_p50_ms: index.primary_key_p50_ms,
    object_id_uses_index: index.uses_index,
  };
  return { summary, first, replay, index, load_average: os.loadavg() };
}

void main();
