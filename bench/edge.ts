/**
 * What the API edge costs on reads (issue 13, goal 4): GET /transaction/{id} through the full edge (auth,
 * allowlist, rate limit, then the read) beside GET /healthz served by the same process, at 64 connections, in
 * one run against an in-process server on a real Postgres. A third route, GET /bench/ping, is the same JSON
 * answer through the full edge with no database read, so the edge's own cost per request is
 * 1/rps(ping) - 1/rps(healthz): everything the edge adds to a request that the app's middleware already pays.
 * The measurements interleave (healthz, transaction, ping, then again) so drift on a shared box hits all alike;
 * each figure is the median of its rounds. The load generator (autocannon) runs as a process of its own, so
 * the CPU time this process spends per request is the server's; the edge's cost is also given that way.
 *
 *   npx tsx bench/edge.ts                                     # 3 rounds of 5 s per route
 *   BENCH_ROUNDS=5 BENCH_SECONDS=10 npx tsx bench/edge.ts
 *
 * Prints progress lines and the summary; writes the summary to bench/results/edge-<time>.json.
 * BENCH_DATABASE_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/postgres) must let us create a database.
 */
import { execFile } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type autocannon from 'autocannon';
import { loadConfig } from '../src/config';
import { createPool } from '../src/db/pool';
import { createApp, type ApiDeps } from '../src/http/app';
import { defineRoute, systemClock } from '../src/http/route';
import { allRoutes, appFeatures } from '../src/routes';
import { randomString } from '../src/ids';
import { createLogger } from '../src/logger';
import { z } from '../src/zod';
import { createScratchDatabase } from '../test/support/scratch';
import { transactionToRead } from './readFixture';
import { writeResults } from './results';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP_SECONDS = 2;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const ADMIN_URL = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
// Unique per run, so two runs (or a run beside the tests) never share or drop each other's database.
const DATABASE = `ledger_bench_edge_${randomString(8).toLowerCase()}`;
const REPO_ROOT = path.resolve(__dirname, '..');

/** Goal 4's thresholds, reported beside the figures. */
const GOALS = { transactionShareOfHealthzMin: 0.5, edgeCostUsMax: 100, transactionP99MsMax: 25 };

function log(message: string): void {
  process.stdout.write(`[bench:edge] ${message}\n`);
}

interface Measured {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  total: number;
  failures: number;
  /** CPU time this (server) process spent per request: the load generator runs in a process of its own. */
  serverCpuUs: number;
}

/** autocannon in its own process, so this process's CPU time is the server's alone. */
function autocannonProcess(url: string, headers: Record<string, string>, seconds: number): Promise<autocannon.Result> {
  const args = ['-c', String(CONNECTIONS), '-d', String(seconds), '-j'];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    execFile(path.join(REPO_ROOT, 'node_modules', '.bin', 'autocannon'), args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      if (error) reject(new Error(`autocannon failed: ${error.message}`));
      else resolve(JSON.parse(stdout) as autocannon.Result);
    });
  });
}

async function load(url: string, headers: Record<string, string>, seconds: number): Promise<Measured> {
  const cpuBefore = process.cpuUsage();
  const result = await autocannonProcess(url, headers, seconds);
  const cpu = process.cpuUsage(cpuBefore);
  return {
    rps: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    total: result.requests.total,
    failures: result.non2xx + result.errors,
    serverCpuUs: (cpu.user + cpu.system) / Math.max(1, result.requests.total),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function summarize(rounds: Measured[]) {
  return {
    rps: Math.round(median(rounds.map((m) => m.rps))),
    p50_ms: median(rounds.map((m) => m.p50Ms)),
    p99_ms: median(rounds.map((m) => m.p99Ms)),
    server_cpu_us_per_request: Math.round(median(rounds.map((m) => m.serverCpuUs))),
    requests: rounds.reduce((sum, m) => sum + m.total, 0),
    failures: rounds.reduce((sum, m) => sum + m.failures, 0),
    rounds_rps: rounds.map((m) => Math.round(m.rps)),
  };
}

async function main(): Promise<void> {
  log(`creating database ${DATABASE}`);
  const scratch = await createScratchDatabase(ADMIN_URL, DATABASE);
  const { databaseUrl } = scratch;
  log('migrated');
  const config = loadConfig({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', PORT: '0' });
  const pool = createPool(databaseUrl, config.DATABASE_POOL_MAX);
  const logger = createLogger('silent');
  // A GET never touches Temporal: the client is lazy and never connects.
  const deps: ApiDeps = {
    config,
    pool,
    log: logger,
    clock: systemClock,
    services: { taskQueue: 'bench' },
    readiness: {},
  };
  const ping = defineRoute({
    method: 'get',
    path: '/bench/ping',
    tag: 'Bench',
    summary: 'ping',
    response: { schema: z.object({ status: z.string() }), description: 'pong' },
    async handler() {
      return { body: { status: 'ok' } };
    },
  });
  const { app, edge } = createApp(
    deps,
    appFeatures(deps.config, () => deps.clock.now(), [...allRoutes, ping]),
  );
  const { created, transactionId } = await transactionToRead(pool, deps, edge);

  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  server.keepAliveTimeout = 65_000;
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const auth = { Authorization: `Bearer ${created.key.api_key}` };
  const targets = {
    healthz: { url: `${base}/healthz`, headers: {} },
    transaction: { url: `${base}/transaction/${transactionId}`, headers: auth },
    edge_ping: { url: `${base}/bench/ping`, headers: auth },
  };

  for (const [name, target] of Object.entries(targets)) {
    const check = await fetch(target.url, { headers: target.headers });
    if (check.status !== 200) throw new Error(`${name} answered ${check.status}: ${await check.text()}`);
  }
  log(`routes answer 200 (transaction ${transactionId}); ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s per route`);
  log(`warming up (${WARMUP_SECONDS} s per route)`);
  for (const target of Object.values(targets)) await load(target.url, target.headers, WARMUP_SECONDS);

  const rounds: Record<keyof typeof targets, Measured[]> = { healthz: [], transaction: [], edge_ping: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, target] of Object.entries(targets) as [keyof typeof targets, (typeof targets)[keyof typeof targets]][]) {
      const measured = await load(target.url, target.headers, SECONDS);
      rounds[name].push(measured);
      log(
        `round ${round}/${ROUNDS} ${name.padEnd(11)} ${measured.rps.toFixed(0).padStart(6)} req/s  p50 ${measured.p50Ms} ms  p99 ${measured.p99Ms} ms  server CPU ${measured.serverCpuUs.toFixed(0)} us/request  failures ${measured.failures}`,
      );
    }
  }

  const healthz = summarize(rounds.healthz);
  const transaction = summarize(rounds.transaction);
  const edgePing = summarize(rounds.edge_ping);
  const transactionShare = Number((transaction.rps / healthz.rps).toFixed(3));
  const edgeCostUs = Math.round((1 / edgePing.rps - 1 / healthz.rps) * 1e6);
  // The same difference in the server's own CPU time: what the edge costs, less the noise of a shared box.
  const edgeCpuUs = edgePing.server_cpu_us_per_request - healthz.server_cpu_us_per_request;
  const { rows } = await pool.query<{ leases: number; slots: number }>(
    `SELECT count(*)::int AS leases, coalesce(sum(slots), 0)::int AS slots FROM rate_limit_leases WHERE organization_id = $1`,
    [created.organization.id],
  );
  const admitted = transaction.requests + edgePing.requests;
  const summary = {
    bench: 'edge',
    finished_at: new Date().toISOString(),
    connections: CONNECTIONS,
    rounds: ROUNDS,
    seconds_per_round: SECONDS,
    healthz,
    transaction,
    edge_ping: edgePing,
    transaction_share_of_healthz: transactionShare,
    edge_cost_us_per_request: edgeCostUs,
    edge_cost_server_cpu_us_per_request: edgeCpuUs,
    key_cache: edge.keys.stats(),
    rate_limit_leases: { rows: rows[0]!.leases, slots_counted: rows[0]!.slots, requests_through_edge: admitted },
    goals: {
      transaction_share_of_healthz: {
        min: GOALS.transactionShareOfHealthzMin,
        met: transactionShare >= GOALS.transactionShareOfHealthzMin,
      },
      edge_cost_us_per_request: { max: GOALS.edgeCostUsMax, met: edgeCostUs <= GOALS.edgeCostUsMax },
      edge_cost_server_cpu_us_per_request: { max: GOALS.edgeCostUsMax, met: edgeCpuUs <= GOALS.edgeCostUsMax },
      transaction_p99_ms: { max: GOALS.transactionP99MsMax, met: transaction.p99_ms <= GOALS.transactionP99MsMax },
    },
  };
  log('result');
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  log(
    `GET /transaction/{id}: ${transaction.rps} req/s = ${transactionShare}x GET /healthz (${healthz.rps} req/s), p99 ${transaction.p99_ms} ms; the edge costs ~${edgeCostUs} us per request by throughput, ${edgeCpuUs} us of server CPU`,
  );
  log(`summary: ${writeResults('edge', summary)}`);

  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
  await edge.close();
  await pool.end();
  await scratch.drop();
  log(`dropped ${DATABASE}`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
