/**
 * What the SDK costs a caller per call (SPEC §22 goal: at most 1.2× bare fetch): GET /transaction/{id} against
 * one in-process API on a real Postgres, called one at a time by `ledger.transactions.retrieve(id)` and by a bare
 * `fetch` + `response.json()` with the same headers, in the same run. The calls run in a client process of their
 * own, so its CPU time per call is the client's alone (the server's is in this process). The two alternate call
 * by call (which goes first alternating too), so the shared box's noise hits both alike; every figure is the
 * median over all calls of one way: wall time per call (the server's answer included) and client CPU per call,
 * and their SDK/fetch ratios.
 *
 *   npm run bench -- sdk                                  # 3,000 calls each way
 *   BENCH_CALLS=10000 npx tsx bench/sdk.ts
 *
 * Prints progress lines and the summary; writes the summary to bench/results/sdk-<time>.json.
 * BENCH_DATABASE_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/postgres) must let us create a database.
 */
import { execFile } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Ledger } from '@payments-ledger/sdk';
import { loadConfig } from '../src/config';
import { createPool } from '../src/db/pool';
import { createApp } from '../src/http/app';
import { systemClock } from '../src/http/route';
import { randomString } from '../src/ids';
import { createLogger } from '../src/logger';
import { appFeatures } from '../src/routes';
import { createScratchDatabase } from '../test/support/scratch';
import { transactionToRead } from './readFixture';
import { writeResults } from './results';

const CALLS = Number(process.env.BENCH_CALLS ?? 3000);
const WARMUP_CALLS = 300;
const ADMIN_URL = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DATABASE = `ledger_bench_sdk_${randomString(8).toLowerCase()}`;
const GOAL_RATIO_MAX = 1.2;

interface Target {
  baseUrl: string;
  apiKey: string;
  transactionId: string;
}

/** One call: its wall time and the client's CPU time during it, in microseconds. */
interface Sample {
  wallUs: number;
  cpuUs: number;
}

function log(message: string): void {
  process.stdout.write(`[bench:sdk] ${message}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** One call; while it waits for the server this process is idle, so its CPU time is the client's work. */
async function measure(call: () => Promise<unknown>): Promise<Sample> {
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await call();
  const wallUs = (performance.now() - started) * 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return { wallUs, cpuUs: cpu.user + cpu.system };
}

/** The client process: both ways of calling, alternating call by call; prints its samples as one JSON line. */
async function client(target: Target): Promise<void> {
  const url = `${target.baseUrl}/transaction/${target.transactionId}`;
  const headers = { Authorization: `Bearer ${target.apiKey}`, Accept: 'application/json' };
  const ledger = new Ledger({ apiKey: target.apiKey, baseUrl: target.baseUrl });
  const ways = {
    fetch: async () => {
      const response = await fetch(url, { headers });
      if (response.status !== 200) throw new Error(`fetch answered ${response.status}`);
      return response.json();
    },
    sdk: () => ledger.transactions.retrieve(target.transactionId),
  };
  for (let i = 0; i < WARMUP_CALLS; i++) for (const way of Object.values(ways)) await way();
  const samples: Record<keyof typeof ways, Sample[]> = { fetch: [], sdk: [] };
  for (let i = 0; i < CALLS; i++) {
    const order: (keyof typeof ways)[] = i % 2 === 0 ? ['fetch', 'sdk'] : ['sdk', 'fetch'];
    for (const name of order) samples[name].push(await measure(ways[name]));
  }
  process.stdout.write(`${JSON.stringify(samples)}\n`);
}

function runClient(target: Target): Promise<Record<'fetch' | 'sdk', Sample[]>> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', __filename, 'client'],
      { env: { ...process.env, BENCH_SDK_TARGET: JSON.stringify(target) }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`client failed: ${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<'fetch' | 'sdk', Sample[]>);
      },
    );
  });
}

/** A served API on a scratch database, one organization and one real cash_in transaction to read. */
async function serve() {
  const scratch = await createScratchDatabase(ADMIN_URL, DATABASE);
  const config = loadConfig({ DATABASE_URL: scratch.databaseUrl, LOG_LEVEL: 'silent', PORT: '0' });
  const pool = createPool(scratch.databaseUrl, config.DATABASE_POOL_MAX);
  // A GET never touches Temporal: the client is lazy and never connects.
  const deps = {
    config,
    pool,
    log: createLogger('silent'),
    clock: systemClock,
    services: { taskQueue: 'bench' },
    readiness: {},
  };
  const { app, edge } = createApp(
    deps,
    appFeatures(deps.config, () => deps.clock.now()),
  );
  const { created, transactionId } = await transactionToRead(pool, deps, edge);
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  server.keepAliveTimeout = 65_000;
  const target: Target = {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    apiKey: created.key.api_key,
    transactionId,
  };
  const stop = async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await pool.end();
    await scratch.drop();
  };
  return { target, stop };
}

async function main(): Promise<void> {
  log(`creating database ${DATABASE}`);
  const { target, stop } = await serve();
  try {
    log(`GET /transaction/${target.transactionId}: ${WARMUP_CALLS} warm-up calls each, then ${CALLS} calls each way, alternating`);
    const samples = await runClient(target);
    const figure = (way: Sample[], key: keyof Sample) => Math.round(median(way.map((sample) => sample[key])));
    const fetchWall = figure(samples.fetch, 'wallUs');
    const sdkWall = figure(samples.sdk, 'wallUs');
    const fetchCpu = figure(samples.fetch, 'cpuUs');
    const sdkCpu = figure(samples.sdk, 'cpuUs');
    const summary = {
      bench: 'sdk',
      finished_at: new Date().toISOString(),
      endpoint: 'GET /transaction/{id}',
      calls_each_way: CALLS,
      fetch: { wall_us_per_call_median: fetchWall, client_cpu_us_per_call_median: fetchCpu },
      sdk: { wall_us_per_call_median: sdkWall, client_cpu_us_per_call_median: sdkCpu },
      wall_ratio: Number((sdkWall / fetchWall).toFixed(3)),
      client_cpu_ratio: Number((sdkCpu / fetchCpu).toFixed(3)),
      goal_ratio_max: GOAL_RATIO_MAX,
    };
    log(`results in ${writeResults('sdk', summary)}`);
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    await stop();
  }
}

if (process.argv[2] === 'client') void client(JSON.parse(process.env.BENCH_SDK_TARGET!) as Target);
else
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
