/**
 * Lifecycle bench (issue 13, goal 1), on the Temporal server users run: a dev server keeping its state in a
 * SQLite file with `npm start`'s flags (ops/devServer.ts), not an in-memory one.
 *
 *   npx tsx bench/ledger.ts                        # 2,000 intents (npm run bench)
 *   BENCH_INTENTS=10000 npx tsx bench/ledger.ts    # the goal's size
 *
 * 1. Baseline: a bare loop starting a no-op workflow (bench/noopWorkflow.ts, run by its own worker) from 32
 *    concurrent clients, BENCH_BARE_STARTS (default 2,000) starts, on the same server.
 * 2. BENCH_INTENTS cash_in intents POSTed from 32 clients (each answer comes after its commit; a worker's drainer starts the workflow);
 *    the sandbox network confirms each after SANDBOX_CONFIRM_SECONDS=1 (a durable timer, as in the issue's
 *    measurement), and the clock stops when every transaction is `available` in Postgres.
 *    lifecycles/s = intents / (first POST → last one available). Goal: ≥ 0.5× the bare loop; POST /intent
 *    rate (intents / time to accept them all) ≥ 0.6× the bare loop.
 * 1b. The lifecycle's shape without the ledger (bench/lifecycleShapeWorkflow.ts): BENCH_INTENTS workflows with the
 *    lifecycle's search attributes, local submit step, 1 s confirmation timer, local available step and status
 *    upsert, started from 32 clients; the clock stops when every one has run its available step. Goal: the
 *    ledger's lifecycles/s ≥ 0.8× this (the ledger's own work within a quarter of Temporal's).
 * 3. The bare loop again, on the server now holding every lifecycle (for the drift, not the ratio).
 * The api and the worker run as their own processes (`npm run api`, `npm run worker`). Progress each second;
 * the figures go to stdout and bench/results/ledger-<time>.json. Postgres: BENCH_DATABASE_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres), in a database of its own that is dropped at the end.
 *
 * Topology and process counts (all three go into the JSON and the printed lines):
 *   BENCH_TEMPORAL=dev|cluster     the Temporal server (default dev; cluster: `npm run cluster`'s server on Postgres)
 *   BENCH_API_PROCESSES=N          api processes (default 1), each on its own port; the 32 clients send request i
 *                                  to api i mod N, round-robin, as a load balancer in front of them would
 *   BENCH_WORKER_PROCESSES=N       worker processes (default 1) polling the same task queue, metrics off
 * CPU seconds are summed over all processes of a kind (and listed per process).
 *   BENCH_TEMPORAL=cluster BENCH_API_PROCESSES=2 BENCH_WORKER_PROCESSES=2 npx tsx bench/ledger.ts
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { REPO_ROOT } from '../src/config';
import { createPool, type Pool } from '../src/db/pool';
import { randomString } from '../src/ids';
import { createOrganization, setRateLimits } from '../src/orgs/repo';
import { freePort } from '../test/support/ports';
import { createTestUser } from '../test/support/harness';
import { createScratchDatabase, startScratchTemporal, topologyFrom } from '../test/support/scratch';
import { shapeStart, startShapeWorker } from './lifecycleShape';
import { cpuSeconds, localPostmaster, postgresCpuSeconds, writeBytes } from './cpu';
import { postJson } from './http';
import { startProcess, stopProcess } from './processes';
import { writeResults } from './results';

const INTENTS = Number(process.env.BENCH_INTENTS ?? 2_000);
const BARE_STARTS = Number(process.env.BENCH_BARE_STARTS ?? 2_000);
const CLIENTS = 32;
const CONFIRM_SECONDS = 1;
/** How long the lifecycles may take to all reach `available` before the bench gives up. */
const DRAIN_LIMIT_S = Number(process.env.BENCH_DRAIN_LIMIT_SECONDS ?? 1_800);
const CLI = process.env.TEMPORAL_CLI_PATH ?? path.join(REPO_ROOT, '.tools', 'bin', 'temporal');
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** dev: `npm start`'s dev server on a SQLite file; cluster: `npm run cluster`'s server on Postgres. */
const TOPOLOGY = topologyFrom(process.env.BENCH_TEMPORAL);
const API_PROCESSES = Number(process.env.BENCH_API_PROCESSES ?? 1);
const WORKER_PROCESSES = Number(process.env.BENCH_WORKER_PROCESSES ?? 1);

const say = (line: string) => process.stdout.write(`${line}\n`);
const round = (value: number, digits = 1) => Number(value.toFixed(digits));

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** CPU seconds and bytes written so far by a process (Linux /proc; zeros elsewhere). */
function processUsage(pid: number): { cpuSeconds: number; writeBytes: number } {
  return { cpuSeconds: cpuSeconds(pid) ?? 0, writeBytes: writeBytes(pid) };
}

/**
 * CPU seconds of the whole Postgres server the ledger runs on, when it runs on this machine: its postmaster
 * (with the children it already reaped) and every live child: backends, WAL writer, checkpointer, autovacuum.
 */
async function postgresUsage(pool: Pool): Promise<number | null> {
  return postgresCpuSeconds(await localPostmaster(pool));
}

/** Summed CPU seconds and bytes written of several processes, and each one's CPU seconds. */
function usageOf(pids: number[]): { cpuSeconds: number; writeBytes: number; each: number[] } {
  const each = pids.map(processUsage);
  return {
    cpuSeconds: each.reduce((sum, usage) => sum + usage.cpuSeconds, 0),
    writeBytes: each.reduce((sum, usage) => sum + usage.writeBytes, 0),
    each: each.map((usage) => usage.cpuSeconds),
  };
}

/** Runs `op(i)` for i in [0, total) from `clients` concurrent loops; a progress line each second. */
async function countedLoop(label: string, clients: number, total: number, op: (index: number) => Promise<void>) {
  const latenciesMs: number[] = [];
  let errors = 0;
  let next = 0;
  const started = performance.now();
  const progress = setInterval(() => {
    const elapsed = (performance.now() - started) / 1000;
    say(
      `  [${label}] ${elapsed.toFixed(0)}s  ${latenciesMs.length}/${total} done  ${(latenciesMs.length / elapsed).toFixed(0)}/s  errors ${errors}`,
    );
  }, 1000);
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < total) {
        const index = next++;
        const t0 = performance.now();
        try {
          await op(index);
          latenciesMs.push(performance.now() - t0);
        } catch (error) {
          errors += 1;
          if (errors <= 3) say(`  [${label}] error: ${(error as Error).message}`);
          if (errors > 100) throw new Error(`${label}: more than 100 errors`);
        }
      }
    }),
  );
  clearInterval(progress);
  const seconds = (performance.now() - started) / 1000;
  latenciesMs.sort((a, b) => a - b);
  return {
    count: latenciesMs.length,
    errors,
    seconds: round(seconds, 2),
    per_second: round(latenciesMs.length / seconds),
    p50_ms: round(percentile(latenciesMs, 50)),
    p99_ms: round(percentile(latenciesMs, 99)),
  };
}

/**
 * Phase 1b: BENCH_INTENTS lifecycle-shaped workflows from CLIENTS loops on `address`, run by a worker of their
 * own in this process; per second from the first start until every one has run its `available` step.
 */
async function lifecycleShape(address: string, client: Client) {
  const shapes = await startShapeWorker(address);
  try {
    const started = performance.now();
    const starts = await countedLoop('shape start', CLIENTS, INTENTS, async (index) => {
      await client.workflow.start(
        'lifecycleShapeWorkflow',
        shapeStart(shapes.taskQueue, `shape-${index}-${randomString(8)}`, CONFIRM_SECONDS, '2026-01-01'),
      );
    });
    const deadline = performance.now() + DRAIN_LIMIT_S * 1000;
    while (shapes.available() < starts.count) {
      if (performance.now() > deadline)
        throw new Error(`only ${shapes.available()}/${starts.count} shapes available after ${DRAIN_LIMIT_S} s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const seconds = (performance.now() - started) / 1000;
    return { starts, seconds_until_all_available: round(seconds, 2), per_second: round(starts.count / seconds) };
  } finally {
    await shapes.stop();
  }
}

function bareLoop(client: Client, label: string) {
  return countedLoop(label, CLIENTS, BARE_STARTS, async () => {
    await client.workflow.start('noopWorkflow', { taskQueue: 'bench-noop', workflowId: `noop-${randomString(16)}` });
  });
}

/** Runs the teardown steps, newest first, each one awaited; a failing step does not stop the others. */
async function teardown(steps: Array<() => unknown>): Promise<void> {
  for (const step of steps.reverse()) {
    try {
      await step();
    } catch (error) {
      say(`cleanup: ${(error as Error).message}`);
    }
  }
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const cleanup: Array<() => unknown> = [];
  try {
    if (!(API_PROCESSES >= 1 && WORKER_PROCESSES >= 1)) throw new Error('BENCH_API_PROCESSES and BENCH_WORKER_PROCESSES must be ≥ 1');
    say(
      `lifecycle bench: ${os.cpus().length} cores, ${INTENTS} intents, ${CLIENTS} clients, bare loop ${BARE_STARTS} starts; ` +
        `Temporal ${TOPOLOGY}, ${API_PROCESSES} api process(es), ${WORKER_PROCESSES} worker process(es)`,
    );
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-bench-'));
    cleanup.push(() => fs.rmSync(workDir, { recursive: true, force: true }));
    const serverLog = path.join(workDir, 'temporal.log');
    const dbFile = path.join(workDir, 'temporal.db');
    const temporal = await startScratchTemporal(CLI, serverLog, { dbFile, topology: TOPOLOGY, adminUrl: PG_BASE });
    cleanup.push(() => temporal.stop());
    const { server: dev, client } = temporal;
    const database = `ledger_bench_${Date.now()}_${randomString(6)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, 'x')}`;
    const scratch = await createScratchDatabase(PG_BASE, database);
    cleanup.push(() => scratch.drop());
    say(
      `Temporal ${TOPOLOGY === 'dev' ? "dev server (SQLite file, npm start's pragmas)" : 'server on Postgres (npm run cluster)'} ${dev.address}, Postgres database ${database}`,
    );

    const pool = createPool(scratch.databaseUrl, 4);
    cleanup.push(() => pool.end());
    const org = await createOrganization(pool, { name: 'Bench operator', kycRequired: true, environment: 'sandbox' });
    await setRateLimits(pool, org.organization.id, { write: 1_000_000, read: 1_000_000 });
    const userId = await createTestUser(pool, org.organization.id, 'enabled');

    const env = {
      DATABASE_URL: scratch.databaseUrl,
      TEMPORAL_ADDRESS: dev.address,
      TEMPORAL_TASK_QUEUE: 'ledger-bench',
      LOG_LEVEL: 'warn',
      LEDGER_ENVIRONMENT: 'sandbox',
      SANDBOX_CONFIRM_SECONDS: String(CONFIRM_SECONDS),
      WEBHOOK_DISPATCHER: 'off',
      TEMPORAL_METRICS_ADDRESS: 'off',
      WORKER_METRICS_PORT: '0',
    };
    say(`starting ${WORKER_PROCESSES} worker and ${API_PROCESSES} api process(es)...`);
    const workers: ChildProcess[] = [];
    // One after the other: each bundles the workflow code at start, and the first applies the migrations.
    for (let i = 0; i < WORKER_PROCESSES; i += 1) {
      const worker = await startProcess(`worker ${i + 1}`, 'ops/bin/worker.ts', { ...env, LOG_LEVEL: 'info' }, /worker running/);
      cleanup.push(() => stopProcess(worker));
      workers.push(worker);
    }
    const apis: ChildProcess[] = [];
    const apiUrls: string[] = [];
    for (let i = 0; i < API_PROCESSES; i += 1) {
      const apiPort = await freePort();
      // At LOG_LEVEL warn (no line per request, as a loaded api would run): ready when /healthz answers.
      const api = await startProcess(`api ${i + 1}`, 'ops/bin/api.ts', { ...env, PORT: String(apiPort) }, null);
      cleanup.push(() => stopProcess(api));
      apis.push(api);
      const apiUrl = `http://127.0.0.1:${apiPort}`;
      apiUrls.push(apiUrl);
      for (let attempt = 0; ; attempt += 1) {
        try {
          if ((await fetch(`${apiUrl}/healthz`)).ok) break;
        } catch {
          if (attempt > 600) throw new Error(`api ${i + 1} did not answer /healthz in 60 s`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    }
    const workerPids = workers.map((child) => child.pid!);
    const apiPids = apis.map((child) => child.pid!);

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

    // --- 1: the baseline -----------------------------------------------------------------------------------
    say(`phase 1: bare loop starting a no-op workflow, ${CLIENTS} concurrent, ${BARE_STARTS} starts`);
    const bareCpuBefore = { server: processUsage(dev.process.pid!), bench: process.cpuUsage() };
    const bare = await bareLoop(client, 'no-op start');
    const bareCpu = {
      temporal_server: round(processUsage(dev.process.pid!).cpuSeconds - bareCpuBefore.server.cpuSeconds),
      bench_clients_and_noop_worker: round((({ user, system }) => user + system)(process.cpuUsage(bareCpuBefore.bench)) / 1e6),
    };

    say(`phase 1b: ${INTENTS} workflows of the lifecycle's shape (no ledger), ${CLIENTS} concurrent, until each is available`);
    const shape = await lifecycleShape(dev.address, client);

    // --- 2: intents until every one is available -------------------------------------------------------------
    say(`phase 2: ${INTENTS} POST /intent (cash_in) from ${CLIENTS} clients, until every transaction is available`);
    const cpuBefore = {
      server: processUsage(dev.process.pid!),
      worker: usageOf(workerPids),
      api: usageOf(apiPids),
      bench: process.cpuUsage(),
      postgres: await postgresUsage(pool),
    };
    const headers = { Authorization: `Bearer ${org.key.api_key}`, 'Content-Type': 'application/json' };
    const started = performance.now();
    let available = 0;
    const countAvailable = async () => {
      const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM transactions WHERE status = 'available'`);
      available = rows[0]!.n;
      return available;
    };
    const watcher = setInterval(() => {
      countAvailable().then(
        (n) => say(`  [lifecycles] ${((performance.now() - started) / 1000).toFixed(0)}s  ${n}/${INTENTS} available`),
        () => undefined,
      );
    }, 1000);
    let lifecycleSeconds = NaN;
    let posts;
    try {
      posts = await countedLoop('POST /intent', CLIENTS, INTENTS, async (index) => {
        const answer = await postJson(
          `${apiUrls[index % apiUrls.length]}/intent`,
          { ...headers, 'X-Idempotency-Key': randomString(24) },
          { direction: 'cash_in', user_id: userId, amount: 1250, currency: 'USD' },
        );
        const body = JSON.parse(answer.text) as { status?: string };
        if (answer.status !== 200 || body.status !== 'approved')
          throw new Error(`POST /intent ${answer.status} ${answer.text.slice(0, 200)}`);
      });
      const drainDeadline = performance.now() + DRAIN_LIMIT_S * 1000;
      while ((await countAvailable()) < posts.count) {
        if (performance.now() > drainDeadline) throw new Error(`only ${available}/${posts.count} available after ${DRAIN_LIMIT_S} s`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      lifecycleSeconds = (performance.now() - started) / 1000;
    } finally {
      clearInterval(watcher);
    }
    const cpuAfter = {
      server: processUsage(dev.process.pid!),
      worker: usageOf(workerPids),
      api: usageOf(apiPids),
      bench: process.cpuUsage(cpuBefore.bench),
      postgres: await postgresUsage(pool),
    };
    const { rows: awaiting } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM lifecycle_queue WHERE kind = 'start'`);
    const { rows: sample } = await pool.query<{ id: string }>(`SELECT id FROM transactions ORDER BY created_at DESC LIMIT 1`);
    const sampleHistory = await client.workflow.getHandle(sample[0]!.id).fetchHistory();

    // --- 3: the baseline again, for the drift ----------------------------------------------------------------
    say(`phase 3: bare loop again (the server now holds ${posts.count} open lifecycles)`);
    const bareAfter = await bareLoop(client, 'no-op start (after)');

    const lifecyclesPerSecond = posts.count / lifecycleSeconds;
    const serverLogText = fs.readFileSync(temporal.logFile, 'utf8');
    const results = {
      bench: 'ledger',
      at: new Date().toISOString(),
      cores: os.cpus().length,
      intents: INTENTS,
      clients: CLIENTS,
      confirm: `SANDBOX_CONFIRM_SECONDS=${CONFIRM_SECONDS}`,
      temporal:
        TOPOLOGY === 'dev' ? 'dev server, SQLite file (npm start flags)' : 'server 1.29.1 on Postgres, 4 history shards (npm run cluster)',
      topology: TOPOLOGY,
      api_processes: API_PROCESSES,
      worker_processes: WORKER_PROCESSES,
      bare_noop_start: bare,
      post_intent: posts,
      lifecycles: { seconds_until_all_available: round(lifecycleSeconds, 2), per_second: round(lifecyclesPerSecond) },
      lifecycle_vs_bare: round(lifecyclesPerSecond / bare.per_second, 3),
      lifecycle_shape: shape,
      lifecycle_vs_shape: round(lifecyclesPerSecond / shape.per_second, 3),
      post_intent_vs_bare: round(posts.per_second / bare.per_second, 3),
      bare_noop_start_after: bareAfter,
      goals: {
        lifecycle_at_least_half_of_bare: lifecyclesPerSecond / bare.per_second >= 0.5,
        post_intent_at_least_0_6_of_bare: posts.per_second / bare.per_second >= 0.6,
        lifecycle_at_least_0_8_of_shape: lifecyclesPerSecond / shape.per_second >= 0.8,
      },
      history_events_per_lifecycle_to_available: sampleHistory.events?.length ?? null,
      lifecycle_starts_queued_at_end: awaiting[0]!.n,
      temporal_server_during_phase_2: {
        written_mb: round((cpuAfter.server.writeBytes - cpuBefore.server.writeBytes) / 1e6),
        context_deadline_exceeded_lines: serverLogText.split('context deadline exceeded').length - 1,
      },
      cpu_seconds_during_phase_1: bareCpu,
      cpu_seconds_during_phase_2: {
        temporal_server: round(cpuAfter.server.cpuSeconds - cpuBefore.server.cpuSeconds),
        worker: round(cpuAfter.worker.cpuSeconds - cpuBefore.worker.cpuSeconds),
        api: round(cpuAfter.api.cpuSeconds - cpuBefore.api.cpuSeconds),
        bench_clients: round((cpuAfter.bench.user + cpuAfter.bench.system) / 1e6),
        // The whole local server (null if remote): the ledger's statements, and Temporal's on the cluster topology.
        postgres: cpuAfter.postgres === null || cpuBefore.postgres === null ? null : round(cpuAfter.postgres - cpuBefore.postgres),
        worker_each: cpuAfter.worker.each.map((seconds, i) => round(seconds - cpuBefore.worker.each[i]!)),
        api_each: cpuAfter.api.each.map((seconds, i) => round(seconds - cpuBefore.api.each[i]!)),
      },
      load_average: os.loadavg().map((value) => round(value, 2)),
    };
    const perLifecycleMs = (cpuSeconds: number) => round((cpuSeconds * 1000) / posts.count);
    const phase2 = results.cpu_seconds_during_phase_2;
    const cpuMsPerLifecycle = {
      temporal_server: perLifecycleMs(phase2.temporal_server),
      worker: perLifecycleMs(phase2.worker),
      api: perLifecycleMs(phase2.api),
      postgres: phase2.postgres === null ? null : perLifecycleMs(phase2.postgres),
    };
    Object.assign(results, { cpu_ms_per_lifecycle_during_phase_2: cpuMsPerLifecycle });
    say('');
    say(`Temporal ${TOPOLOGY}, ${API_PROCESSES} api process(es), ${WORKER_PROCESSES} worker process(es)`);
    say(`bare no-op start       ${bare.per_second}/s  p50 ${bare.p50_ms} ms  p99 ${bare.p99_ms} ms`);
    say(
      `POST /intent           ${posts.per_second}/s  p50 ${posts.p50_ms} ms  p99 ${posts.p99_ms} ms  (${posts.count} ok, ${posts.errors} errors)  = ${results.post_intent_vs_bare}× bare (goal ≥ 0.6)`,
    );
    say(
      `lifecycles → available ${results.lifecycles.per_second}/s  (all ${posts.count} in ${results.lifecycles.seconds_until_all_available} s)  = ${results.lifecycle_vs_bare}× bare (goal ≥ 0.5)`,
    );
    say(
      `lifecycle shape        ${shape.per_second}/s  (all ${shape.starts.count} in ${shape.seconds_until_all_available} s); ledger = ${results.lifecycle_vs_shape}× shape (goal ≥ 0.8)`,
    );
    say(`bare no-op start after ${bareAfter.per_second}/s`);
    say(`history events of one lifecycle at available: ${results.history_events_per_lifecycle_to_available}`);
    say(
      `Temporal server in phase 2: ${results.temporal_server_during_phase_2.written_mb} MB written, ${results.temporal_server_during_phase_2.context_deadline_exceeded_lines} 'context deadline exceeded' log lines`,
    );
    say(
      `CPU seconds in phase 1: ${JSON.stringify(bareCpu)}; in phase 2: ${JSON.stringify(results.cpu_seconds_during_phase_2)}; load average ${results.load_average.join(' ')}`,
    );
    say(`CPU ms per lifecycle in phase 2 (all processes of a kind): ${JSON.stringify(cpuMsPerLifecycle)}`);
    say(`results: ${writeResults('ledger', results)}`);
  } finally {
    await teardown(cleanup);
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
