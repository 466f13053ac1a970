/**
 * Intake bench (SPEC §20): writes never wait on Temporal. On `npm start`'s Temporal server (the dev server
 * keeping its state in a SQLite file), with one api and one worker process (ops/bin/api.ts, ops/bin/worker.ts):
 *
 *   npx tsx bench/intake.ts          (npm run bench -- intake)
 *
 * 1. Baseline: a bare loop starting a no-op workflow (bench/noopWorkflow.ts, its own worker in this process)
 *    from 32 concurrent clients, BENCH_BARE_STARTS (2,000) starts.
 * 1c. BENCH_BARE_STARTS workflows of the lifecycle's shape (bench/lifecycleShapeWorkflow.ts: its search
 *    attributes, its first local step, then parked on an hour's timer as the lifecycles here are), started from
 *    32 clients with their worker (bench/shapeWorker.ts) running them: Temporal alone doing what the drain has
 *    it do, without the ledger.
 * 2. BENCH_INTENTS (2,000) cash_in POST /intent from 32 clients: accepted/s ÷ the bare loop's starts/s (goal
 *    ≥ 1.0) and ÷ the shapes' starts/s, and the seconds from the first POST until the drainer has every
 *    workflow started (queue empty).
 *    2b: the same with no worker process running (the drain, its starts and the lifecycles' first workflow
 *    tasks off the shared cores), then a worker started to drain them: the api and Postgres alone.
 * 3. Frozen Temporal at the seed's rate limit: 16 writers, each its own organization writing 95 times a
 *    minute (the limit is 100 a minute), BENCH_FROZEN_BEFORE_SECONDS (10) with Temporal running, then the
 *    server stopped with SIGSTOP for BENCH_FROZEN_SECONDS (30), then SIGCONT and BENCH_FROZEN_AFTER_SECONDS (5)
 *    more. Every write must answer 200; p99 while frozen vs before; seconds from SIGCONT until a bare no-op
 *    start is accepted (Temporal's own recovery, the floor), until the oldest queued row has started, and
 *    until every transaction accepted before SIGCONT has its workflow (a row leaves lifecycle_queue only once
 *    Temporal accepted the start; goal ≤ 10 s); the transaction workflows Temporal counts (visibility) = the
 *    transactions in Postgres (none started twice, none missing).
 * 3b. The floor of phase 3's drain: the server stopped again for as long, and at SIGCONT as many lifecycle
 *    shapes as phase 3's backlog started from 32 clients: the seconds Temporal alone needs for them.
 * 4. The same with 16 writers without pause (limits lifted): the backlog is then what 30 s of the api's full
 *    rate queued, drained at Temporal's start rate. Once the oldest row has started, the worker process is
 *    SIGKILLed mid-drain and a new one started (its start-up time is reported): a pass killed before its
 *    commit leaves its rows queued, and the new drainer starts them (REJECT_DUPLICATE for any the killed one
 *    had already started).
 * 5. The bare loop again, on the server now holding every lifecycle: the baseline the backlog's drain rate
 *    compares with (a dev server holding thousands of workflows starts new ones more slowly).
 * SANDBOX_CONFIRM_SECONDS is an hour: the lifecycles park after their start, as most do in a window.
 * BENCH_INTAKE_FROZEN=0 stops after phase 2b (A/B runs of the write path).
 * Results: stdout and bench/results/intake-<time>.json.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { REPO_ROOT } from '../src/config';
import { createPool, type Pool } from '../src/db/pool';
import { randomString } from '../src/ids';
import { TRANSACTION_WORKFLOW_TYPE } from '../src/ledger/workflowContract';
import { createOrganization, setRateLimits } from '../src/orgs/repo';
import { createTestUser } from '../test/support/harness';
import { createScratchDatabase, startScratchTemporal } from '../test/support/scratch';
import { cpuMeter, cpuSeconds, localPostmaster, postgresCpuSeconds } from './cpu';
import { closeConnections, postJson } from './http';
import { shapeStart, startShapeWorker, type ShapeWorker } from './lifecycleShape';
import { startApiProcess, startProcess, stopProcess } from './processes';
import { writeResults } from './results';

const INTENTS = Number(process.env.BENCH_INTENTS ?? 2_000);
const BARE_STARTS = Number(process.env.BENCH_BARE_STARTS ?? 2_000);
const FROZEN_BEFORE_S = Number(process.env.BENCH_FROZEN_BEFORE_SECONDS ?? 10);
const FROZEN_S = Number(process.env.BENCH_FROZEN_SECONDS ?? 30);
const FROZEN_AFTER_S = Number(process.env.BENCH_FROZEN_AFTER_SECONDS ?? 5);
const CLIENTS = 32;
const FROZEN_WRITERS = 16;
/** Phase 3's writers: 95 % of the seed's 100 writes a minute per organization, so no write meets the limit. */
const PACED_PER_MINUTE = Number(process.env.BENCH_PACED_PER_MINUTE ?? 95);
/** BENCH_INTAKE_FROZEN=0 stops after phase 2b: the intake's ratios alone, for A/B runs of the write path. */
const FROZEN_PHASES = process.env.BENCH_INTAKE_FROZEN !== '0';
const CLI = process.env.TEMPORAL_CLI_PATH ?? path.join(REPO_ROOT, '.tools', 'bin', 'temporal');
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** The lifecycles park on SANDBOX_CONFIRM_SECONDS (an hour, below) after their first step; so do the shapes. */
const PARK_SECONDS = 3_600;
const SHAPE_DATE = '2026-01-01';

const say = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (value: number, digits = 1) => Number(value.toFixed(digits));

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** The 99th percentile of a loop's latencies, in ms to one decimal. */
function p99Ms(samples: ReadonlyArray<{ ms: number }>): number {
  const latencies = samples.map((s) => s.ms);
  return round(percentile(latencies, 99));
}

/**
 * Runs `op` (given the loop's index) from `clients` loops until `total` ops are done (or `until()` says stop);
 * latencies by start time. `paceMs`: each loop starts an op at most every paceMs (a writer at a set rate).
 */
async function loop(
  clients: number,
  op: (client: number) => Promise<void>,
  stop: { total?: number; until?: () => boolean; paceMs?: number },
) {
  const samples: Array<{ atMs: number; ms: number; client: number }> = [];
  let errors = 0;
  let issued = 0;
  const started = performance.now();
  const more = () => (stop.total !== undefined ? issued < stop.total : !stop.until!());
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      let due = performance.now() + (stop.paceMs ?? 0) * (client / clients);
      while (more()) {
        if (stop.paceMs !== undefined) {
          await sleep(Math.max(0, due - performance.now()));
          due += stop.paceMs;
          if (!more()) break;
        }
        issued += 1;
        const t0 = performance.now();
        try {
          await op(client);
          samples.push({ atMs: t0, ms: performance.now() - t0, client });
        } catch (error) {
          errors += 1;
          if (errors <= 3) say(`  error: ${(error as Error).message}`);
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { samples, errors, seconds, perSecond: samples.length / seconds };
}

/** The oldest row still queued (null: none). */
async function queueHead(pool: Pool): Promise<string | null> {
  const { rows } = await pool.query<{ id: string | null }>(`SELECT min(id)::text AS id FROM lifecycle_queue`);
  return rows[0]!.id;
}

/** Seconds until the queue's oldest row is no longer `head` (the first start Temporal accepted). */
async function secondsUntilHeadMoves(pool: Pool, head: string | null): Promise<number> {
  const t0 = performance.now();
  while (head !== null && (await queueHead(pool)) === head) await sleep(20);
  return (performance.now() - t0) / 1000;
}

/** Rows queued (only those queued at or before `upTo`, the database's clock, when given). */
async function queueLength(pool: Pool, upTo: Date | null = null): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM lifecycle_queue WHERE created_at <= coalesce($1::timestamptz, 'infinity')`,
    [upTo],
  );
  return rows[0]!.n;
}

/** Seconds from now until the lifecycle queue is empty (of rows queued at or before `upTo`, when given). */
async function secondsUntilDrained(pool: Pool, upTo: Date | null = null, limitS = 600): Promise<number> {
  const t0 = performance.now();
  while ((await queueLength(pool, upTo)) > 0) {
    if (performance.now() - t0 > limitS * 1000) throw new Error(`queue not drained in ${limitS} s`);
    await sleep(20);
  }
  return (performance.now() - t0) / 1000;
}

function postIntent(apiUrl: string, apiKey: string, userId: string) {
  const url = new URL('/intent', apiUrl).toString();
  return async () => {
    const headers = { Authorization: `Bearer ${apiKey}`, 'X-Idempotency-Key': randomString(24) };
    const answer = await postJson(url, headers, { direction: 'cash_in', user_id: userId, amount: 100, currency: 'USD' });
    if (answer.status !== 200) throw new Error(`POST /intent answered ${answer.status}`);
  };
}

/**
 * The box's CPU by part: the api, the worker, Postgres, the Temporal server, this process (the load's client, the
 * no-op worker) and the shapes' worker.
 */
type BoxCpu = () => () => Record<string, number>;

/** CPU ms per item of each part, and their sum. */
function perItem(used: Record<string, number>, items: number): Record<string, number> {
  const each = Object.fromEntries(Object.entries(used).map(([name, seconds]) => [name, round((seconds * 1000) / items, 2)]));
  return { ...each, all: round((Object.values(used).reduce((sum, s) => sum + s, 0) * 1000) / items, 2) };
}

/**
 * INTENTS POST /intent from CLIENTS clients against the bare loop's rate; then `beforeDrain` (if given) and the
 * seconds from the first POST until every workflow has started (the queue empty).
 */
async function intakePhase(
  pool: Pool,
  post: () => Promise<void>,
  bare: { perSecond: number },
  box: BoxCpu,
  beforeDrain?: () => Promise<void>,
) {
  const t0 = performance.now();
  const cpu = box();
  const intents = await loop(CLIENTS, post, { total: INTENTS });
  const used = cpu();
  if (beforeDrain) await beforeDrain();
  const startedAllS = (performance.now() - t0) / 1000 + (await secondsUntilDrained(pool));
  const latencies = intents.samples.map((s) => s.ms);
  return {
    accepted: intents.samples.length,
    errors: intents.errors,
    per_second: round(intents.perSecond),
    p50_ms: round(percentile(latencies, 50)),
    p99_ms: round(percentile(latencies, 99)),
    ratio_to_bare_loop: round(intents.perSecond / bare.perSecond, 2),
    cpu_ms_per_intent: perItem(used, intents.samples.length),
    seconds_until_every_workflow_started: round(startedAllS, 2),
    workflows_started_per_second: round(intents.samples.length / startedAllS),
  };
}

/** `attempt` again every 20 ms after each failure, until it succeeds (Temporal answering again after SIGCONT). */
async function untilAccepted(attempt: () => Promise<unknown>): Promise<void> {
  for (;;) {
    try {
      await attempt();
      return;
    } catch {
      await sleep(20);
    }
  }
}

/** Seconds until a bare no-op start is accepted: Temporal's own recovery after SIGCONT, the drain's floor. */
async function secondsUntilBareStart(client: Client): Promise<number> {
  const t0 = performance.now();
  await untilAccepted(() =>
    client.withDeadline(Date.now() + 2_000, () =>
      client.workflow.start('noopWorkflow', { taskQueue: 'bench-noop', workflowId: `noop-${randomString(16)}` }),
    ),
  );
  return (performance.now() - t0) / 1000;
}

/** Resolves once `total` shapes have run their first step (their worker's count), or throws after 10 minutes. */
async function untilShapesSubmitted(shapes: ShapeWorker, total: number): Promise<void> {
  const deadline = performance.now() + 600_000;
  while (shapes.submitted() < total) {
    if (performance.now() > deadline) throw new Error(`only ${shapes.submitted()}/${total} shapes ran their first step`);
    await sleep(50);
  }
}

/**
 * Phase 3b, the floor of phase 3's drain: Temporal alone doing what the drainer has it do after a freeze.
 * The server is stopped for FROZEN_S as in phase 3, and at SIGCONT `count` workflows of the lifecycle's shape
 * (its search attributes, its first step, its parking timer) are started from CLIENTS clients, each retried
 * until accepted; seconds from SIGCONT until the last is accepted.
 */
async function shapeFloorAfterFreeze(server: ChildProcess, start: () => Promise<void>, count: number) {
  server.kill('SIGSTOP');
  await sleep(FROZEN_S * 1000);
  server.kill('SIGCONT');
  const t0 = performance.now();
  await loop(CLIENTS, () => untilAccepted(start), { total: count });
  const seconds = (performance.now() - t0) / 1000;
  return { workflows: count, seconds_after_sigcont_until_every_one_started: round(seconds, 2), per_second: round(count / seconds) };
}

interface FrozenCase {
  /** One writer per entry, each with its own POST. */
  writers: Array<() => Promise<void>>;
  /** Each writer writes at most once per paceMs (undefined: without pause). */
  paceMs?: number;
  /** Kills the worker process once the oldest row has started and starts another (null: no kill). */
  replaceWorker: (() => Promise<void>) | null;
}

/** Writers through a SIGSTOP of the Temporal server. */
async function frozenPhase(server: ChildProcess, pool: Pool, client: Client, frozenCase: FrozenCase) {
  const t0 = performance.now();
  const at = (s: number) => t0 + s * 1000;
  let firstStartS = 0;
  let bareStartS = 0;
  let backlogAtSigcont = 0;
  let backlogAtKill = 0;
  let workerRestartS = 0;
  let drainedS = 0;
  const freezer = (async () => {
    await sleep(FROZEN_BEFORE_S * 1000);
    server.kill('SIGSTOP');
    say(`  SIGSTOP, ${await queueLength(pool)} rows queued`);
    await sleep(FROZEN_S * 1000);
    const head = await queueHead(pool);
    backlogAtSigcont = await queueLength(pool);
    const { rows } = await pool.query<{ now: Date }>(`SELECT clock_timestamp() AS now`);
    server.kill('SIGCONT');
    const drained = secondsUntilDrained(pool, rows[0]!.now);
    [firstStartS, bareStartS] = await Promise.all([secondsUntilHeadMoves(pool, head), secondsUntilBareStart(client)]);
    say(
      `  SIGCONT with ${backlogAtSigcont} rows queued; the oldest started after ${firstStartS.toFixed(2)} s, a bare start after ${bareStartS.toFixed(2)} s`,
    );
    if (frozenCase.replaceWorker) {
      const killedAt = performance.now();
      backlogAtKill = await queueLength(pool);
      await frozenCase.replaceWorker();
      workerRestartS = (performance.now() - killedAt) / 1000;
      say(`  worker SIGKILLed mid-drain with ${backlogAtKill} rows queued; its successor ran after ${workerRestartS.toFixed(2)} s`);
    }
    drainedS = await drained;
  })();
  const writes = await loop(frozenCase.writers.length, (writer) => frozenCase.writers[writer]!(), {
    until: () => performance.now() > at(FROZEN_BEFORE_S + FROZEN_S + FROZEN_AFTER_S),
    paceMs: frozenCase.paceMs,
  });
  await freezer;
  const window = (from: number, to: number) => writes.samples.filter((s) => s.atMs >= at(from) && s.atMs < at(to)).map((s) => s.ms);
  const before = window(0, FROZEN_BEFORE_S);
  const frozen = window(FROZEN_BEFORE_S, FROZEN_BEFORE_S + FROZEN_S);
  await secondsUntilDrained(pool);
  const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM transactions`);
  let workflows = -1;
  for (let attempt = 0; attempt < 100 && workflows !== rows[0]!.n; attempt += 1) {
    workflows = (await client.workflow.count(`WorkflowType = '${TRANSACTION_WORKFLOW_TYPE}'`)).count;
    if (workflows !== rows[0]!.n) await sleep(200);
  }
  return {
    writers: frozenCase.writers.length,
    writes_per_writer_per_minute: frozenCase.paceMs ? round(60_000 / frozenCase.paceMs) : 'unpaced',
    frozen_seconds: FROZEN_S,
    writes: writes.samples.length,
    write_errors: writes.errors,
    writes_while_frozen: frozen.length,
    p50_ms_before: round(percentile(before, 50)),
    p99_ms_before: round(percentile(before, 99)),
    p50_ms_frozen: round(percentile(frozen, 50)),
    p99_ms_frozen: round(percentile(frozen, 99)),
    max_ms_frozen: round(Math.max(0, ...frozen)),
    // The slowest writes of the whole phase: seconds from its start (SIGSTOP at FROZEN_BEFORE_S), writer, ms.
    slowest_writes: [...writes.samples]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 8)
      .map((s) => ({ at_s: round((s.atMs - t0) / 1000, 2), writer: s.client, ms: round(s.ms) })),
    backlog_at_sigcont: backlogAtSigcont,
    seconds_after_sigcont_until_a_bare_start: round(bareStartS, 2),
    seconds_after_sigcont_until_oldest_started: round(firstStartS, 2),
    seconds_after_sigcont_until_every_workflow_started: round(drainedS, 2),
    backlog_when_the_worker_was_killed: frozenCase.replaceWorker ? backlogAtKill : null,
    seconds_until_the_next_worker_ran: frozenCase.replaceWorker ? round(workerRestartS, 2) : null,
    backlog_started_per_second: round(backlogAtSigcont / drainedS),
    transactions_in_postgres: rows[0]!.n,
    transaction_workflows_in_temporal: workflows,
  };
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const cleanup: Array<() => unknown> = [];
  try {
    say(`intake bench: ${os.cpus().length} cores, ${INTENTS} intents and ${BARE_STARTS} bare starts from ${CLIENTS} clients`);
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-intake-'));
    cleanup.push(() => fs.rmSync(workDir, { recursive: true, force: true }));
    const temporal = await startScratchTemporal(CLI, path.join(workDir, 'temporal.log'), { dbFile: path.join(workDir, 'temporal.db') });
    cleanup.push(() => temporal.stop());
    const { server: dev, client } = temporal;
    const database = `ledger_intake_${Date.now()}_${randomString(6)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, 'x')}`;
    const scratch = await createScratchDatabase(PG_BASE, database);
    cleanup.push(() => scratch.drop());
    const pool = createPool(scratch.databaseUrl, 4);
    cleanup.push(() => pool.end());
    cleanup.push(() => closeConnections());
    const env = {
      DATABASE_URL: scratch.databaseUrl,
      TEMPORAL_ADDRESS: dev.address,
      TEMPORAL_TASK_QUEUE: 'ledger-intake',
      LOG_LEVEL: 'warn',
      SANDBOX_CONFIRM_SECONDS: String(PARK_SECONDS),
      WEBHOOK_DISPATCHER: 'off',
      TEMPORAL_METRICS_ADDRESS: 'off',
      WORKER_METRICS_PORT: '0',
    };
    const startWorker = (name: string) => startProcess(name, 'ops/bin/worker.ts', { ...env, LOG_LEVEL: 'info' }, /worker running/);
    let worker = await startWorker('worker');
    cleanup.push(() => stopProcess(worker));
    const replaceWorker = async () => {
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.kill('SIGKILL');
      await exited;
      worker = await startWorker('worker 2');
    };
    const org = await createOrganization(pool, { name: 'Bench operator', kycRequired: true, environment: 'sandbox' });
    await setRateLimits(pool, org.organization.id, { write: 1_000_000, read: 1_000_000 });
    const userId = await createTestUser(pool, org.organization.id, 'enabled');
    const { api, apiUrl } = await startApiProcess(env, cleanup);
    const noopConnection = await NativeConnection.connect({ address: dev.address });
    const noopWorker = await Worker.create({
      connection: noopConnection,
      namespace: 'default',
      taskQueue: 'bench-noop',
      workflowsPath: path.join(__dirname, 'noopWorkflow.ts'),
    });
    const noopRunning = noopWorker.run();
    cleanup.push(async () => {
      noopWorker.shutdown();
      await noopRunning;
      await noopConnection.close();
    });
    const shapes = await startShapeWorker(dev.address);
    cleanup.push(() => shapes.stop());
    const startShape = async () => {
      await client.workflow.start(
        'lifecycleShapeWorkflow',
        shapeStart(shapes.taskQueue, `shape-${randomString(16)}`, PARK_SECONDS, SHAPE_DATE),
      );
    };

    say(`phase 1: bare loop, ${BARE_STARTS} no-op workflow starts from ${CLIENTS} clients`);
    const bareLoop = () =>
      loop(
        CLIENTS,
        async () => {
          await client.workflow.start('noopWorkflow', { taskQueue: 'bench-noop', workflowId: `noop-${randomString(16)}` });
        },
        { total: BARE_STARTS },
      );
    const postmaster = await localPostmaster(pool);
    const box: BoxCpu = () =>
      cpuMeter({
        api: () => cpuSeconds(api.pid!),
        worker: () => cpuSeconds(worker.pid!),
        postgres: () => postgresCpuSeconds(postmaster),
        temporal: () => cpuSeconds(dev.process.pid!),
        bench: () => cpuSeconds(process.pid),
        shape_worker: () => cpuSeconds(shapes.pid),
      });
    const bareCpu = box();
    const bare = await bareLoop();
    const bareUsed = perItem(bareCpu(), bare.samples.length);
    say(`  ${round(bare.perSecond)} starts/s; CPU ms per start ${JSON.stringify(bareUsed)}`);

    say(`phase 1c: ${BARE_STARTS} workflows of the lifecycle's shape started from ${CLIENTS} clients, their worker running them`);
    const shapeCpu = box();
    const shapeT0 = performance.now();
    const shape = await loop(CLIENTS, startShape, { total: BARE_STARTS });
    const shapeUsed = perItem(shapeCpu(), shape.samples.length);
    // Their first steps lag their starts, as the lifecycles' lag the POSTs: phase 2 begins once they are done.
    await untilShapesSubmitted(shapes, BARE_STARTS);
    const shapeStepsS = (performance.now() - shapeT0) / 1000;
    say(
      `  ${round(shape.perSecond)} starts/s, every first step after ${round(shapeStepsS, 2)} s; CPU ms per start ${JSON.stringify(shapeUsed)}`,
    );

    say(`phase 2: ${INTENTS} POST /intent from ${CLIENTS} clients, the worker draining meanwhile`);
    const post = postIntent(apiUrl, org.key.api_key, userId);
    const measured = await intakePhase(pool, post, bare, box);
    const intake = { ...measured, ratio_to_shape_start_loop: round(measured.per_second / shape.perSecond, 2) };
    say(`  ${JSON.stringify(intake)}`);
    say(`phase 2b: ${INTENTS} POST /intent from ${CLIENTS} clients with no worker running, then a worker drains them`);
    await stopProcess(worker);
    const intakeAlone = await intakePhase(pool, post, bare, box, async () => {
      worker = await startWorker('worker');
    });
    say(`  ${JSON.stringify(intakeAlone)}`);
    const intakeResults = {
      bench: 'intake',
      cores: os.cpus().length,
      bare_noop_start: {
        count: bare.samples.length,
        per_second: round(bare.perSecond),
        p99_ms: p99Ms(bare.samples),
        cpu_ms_per_start: bareUsed,
      },
      lifecycle_shape_start: {
        count: shape.samples.length,
        per_second: round(shape.perSecond),
        p99_ms: p99Ms(shape.samples),
        cpu_ms_per_start: shapeUsed,
        seconds_until_every_first_step: round(shapeStepsS, 2),
      },
      post_intent: intake,
      post_intent_no_worker_running: intakeAlone,
    };
    if (!FROZEN_PHASES) {
      writeResults('intake', intakeResults);
      return;
    }
    say(
      `phase 3: ${FROZEN_WRITERS} writers, each an organization at ${PACED_PER_MINUTE} writes a minute (the seed's limit is 100), Temporal frozen for ${FROZEN_S} s after ${FROZEN_BEFORE_S} s`,
    );
    const pacedWriters = [];
    for (let i = 0; i < FROZEN_WRITERS; i += 1) {
      const each = await createOrganization(pool, { name: `Bench operator ${i}`, kycRequired: true, environment: 'sandbox' });
      pacedWriters.push(postIntent(apiUrl, each.key.api_key, await createTestUser(pool, each.organization.id, 'enabled')));
    }
    const paced = await frozenPhase(dev.process, pool, client, {
      writers: pacedWriters,
      paceMs: 60_000 / PACED_PER_MINUTE,
      replaceWorker: null,
    });
    say(`  ${JSON.stringify(paced)}`);
    say(
      `phase 3b: the floor of that drain: ${paced.backlog_at_sigcont} lifecycle shapes started from ${CLIENTS} clients at SIGCONT after a freeze of ${FROZEN_S} s`,
    );
    const pacedFloor = await shapeFloorAfterFreeze(dev.process, startShape, paced.backlog_at_sigcont);
    await untilShapesSubmitted(shapes, BARE_STARTS + paced.backlog_at_sigcont);
    say(`  ${JSON.stringify(pacedFloor)}`);
    say(`phase 4: ${FROZEN_WRITERS} writers without pause (limits lifted), Temporal frozen for ${FROZEN_S} s, a worker killed mid-drain`);
    const frozen = await frozenPhase(dev.process, pool, client, { writers: Array(FROZEN_WRITERS).fill(post), replaceWorker });
    say(`  ${JSON.stringify(frozen)}`);
    say('phase 5: the bare loop again, on the server now holding every lifecycle (the baseline of the drain rate)');
    const bareAfter = await bareLoop();
    const results = {
      ...intakeResults,
      bare_noop_start_after: {
        per_second: round(bareAfter.perSecond),
        p99_ms: p99Ms(bareAfter.samples),
      },
      frozen_temporal_paced: { ...paced, shape_floor: pacedFloor },
      frozen_temporal: frozen,
    };
    say(JSON.stringify(results, null, 2));
    writeResults('intake', results);
  } finally {
    for (const step of cleanup.reverse()) await Promise.resolve(step()).catch(() => undefined);
  }
}

main().catch((error: unknown) => {
  say(`intake bench failed: ${(error as Error).stack ?? String(error)}`);
  process.exit(1);
});
