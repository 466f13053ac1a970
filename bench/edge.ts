/**
 * What the API edge costs per request: an authenticated GET through the full edge (auth + allowlist + rate
 * limit: one Postgres round trip) beside the same JSON from a plain Express route with the edge off, in one
 * run, against in-process servers on a real Postgres.
 *
 *   npx tsx bench/edge.ts                      # 10 s per side
 *   BENCH_SECONDS=5 BENCH_CONNECTIONS=20 npx tsx bench/edge.ts
 *
 * BENCH_DATABASE_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/postgres) must let us create a database.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@temporalio/client';
import autocannon from 'autocannon';
import express from 'express';
import { loadConfig } from '../src/config';
import { createPool } from '../src/db/pool';
import { createApp } from '../src/http/app';
import { defineRoute, systemClock } from '../src/http/route';
import { allRoutes } from '../src/http/routes';
import { z } from '../src/zod';
import { createLogger } from '../src/logger';
import { createOrganization, setRateLimits } from '../src/orgs/repo';
import { createScratchDatabase } from '../test/support/scratch';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = 2;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const ADMIN_URL = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
// Unique per run (two runs side by side must not drop each other's), dropped at the end.
const DATABASE = `ledger_bench_edge_${Date.now()}_${process.pid}`;

const PAYLOAD = { object: 'ping', ok: true, service: 'payments-ledger' };

function log(message: string): void {
  process.stdout.write(`[bench:edge] ${message}\n`);
}

async function listen(app: express.Express): Promise<{ url: string; close(): Promise<void> }> {
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  server.keepAliveTimeout = 65_000;
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

interface Measured {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  total: number;
}

async function load(url: string, headers: Record<string, string>, seconds: number): Promise<Measured> {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: seconds, headers, workers: 1 });
  return {
    rps: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    total: result.requests.total,
  };
}

async function main(): Promise<void> {
  log(`creating database ${DATABASE}`);
  const scratch = await createScratchDatabase(ADMIN_URL, DATABASE);
  const { databaseUrl } = scratch;
  log('migrated');

  const config = loadConfig({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', PORT: '0' });
  const pool = createPool(databaseUrl, 10);
  const created = await createOrganization(pool, { name: 'Bench operator', kycRequired: true, environment: 'sandbox' });
  // The read limit at its maximum, so the bench measures admission work and never 429s.
  await setRateLimits(pool, created.organization.id, { read: 1_000_000 });

  const ping = defineRoute({
    method: 'get', path: '/bench/ping', tag: 'Bench', summary: 'ping',
    response: { schema: z.object({}).passthrough(), description: 'pong' },
    async handler() {
      return { body: PAYLOAD };
    },
  });
  // A GET that never touches Temporal: the client is lazy and never connects.
  const edgeApp = createApp(
    { config, pool, log: createLogger('silent'), clock: systemClock, services: { temporal: new Client(), taskQueue: 'bench' }, readiness: {} },
    [...allRoutes, ping],
  );
  const plainApp = express();
  plainApp.disable('x-powered-by');
  plainApp.get('/bench/ping', (_req, res) => {
    res.json(PAYLOAD);
  });
  const edge = await listen(edgeApp);
  const plain = await listen(plainApp);
  const auth = { Authorization: `Bearer ${created.key.api_key}` };

  const check = await fetch(`${edge.url}/bench/ping`, { headers: auth });
  if (check.status !== 200) throw new Error(`edge route answered ${check.status}: ${await check.text()}`);
  log(`edge route ok (X-RateLimit-Limit ${check.headers.get('x-ratelimit-limit')}); ${CONNECTIONS} connections, ${SECONDS} s per side`);

  log(`warming up both servers (${WARMUP_SECONDS} s each)`);
  await load(`${plain.url}/bench/ping`, {}, WARMUP_SECONDS);
  await load(`${edge.url}/bench/ping`, auth, WARMUP_SECONDS);
  await load(`${edge.url}/healthz`, {}, WARMUP_SECONDS);

  log('measuring: edge off (plain Express route)');
  const off = await load(`${plain.url}/bench/ping`, {}, SECONDS);
  log(`  ${off.rps.toFixed(0)} req/s, p50 ${off.p50Ms} ms, p99 ${off.p99Ms} ms, ${off.total} requests, non-2xx ${off.non2xx}, errors ${off.errors}`);
  log('measuring: the app\'s middleware only (request id, logging, metrics) on GET /healthz, no edge checks');
  const middleware = await load(`${edge.url}/healthz`, {}, SECONDS);
  log(`  ${middleware.rps.toFixed(0)} req/s, p50 ${middleware.p50Ms} ms, p99 ${middleware.p99Ms} ms, ${middleware.total} requests, non-2xx ${middleware.non2xx}, errors ${middleware.errors}`);
  log('measuring: full edge (middleware + auth, allowlist and rate limit in one Postgres round trip + JSON reply)');
  const on = await load(`${edge.url}/bench/ping`, auth, SECONDS);
  log(`  ${on.rps.toFixed(0)} req/s, p50 ${on.p50Ms} ms, p99 ${on.p99Ms} ms, ${on.total} requests, non-2xx ${on.non2xx}, errors ${on.errors}`);

  const { rows } = await pool.query<{ used: number }>(
    `SELECT count(*)::int AS used FROM rate_limit_hits WHERE organization_id = $1 AND kind = 'read'`, [created.organization.id]);
  const costUs = (1 / on.rps - 1 / off.rps) * 1e6;
  const middlewareUs = (1 / middleware.rps - 1 / off.rps) * 1e6;
  log('result');
  process.stdout.write(`${JSON.stringify({
    connections: CONNECTIONS,
    seconds_per_side: SECONDS,
    edge_off_rps: Math.round(off.rps),
    edge_on_rps: Math.round(on.rps),
    edge_on_share_of_off: Number((on.rps / off.rps).toFixed(3)),
    app_middleware_only_rps: Math.round(middleware.rps),
    edge_cost_us_per_request: Math.round(costUs),
    of_which_middleware_us: Math.round(middlewareUs),
    of_which_admission_us: Math.round(costUs - middlewareUs),
    latency_ms: { off_p50: off.p50Ms, off_p99: off.p99Ms, middleware_p50: middleware.p50Ms, on_p50: on.p50Ms, on_p99: on.p99Ms },
    rate_limit_window_rows_at_end: rows[0]?.used ?? 0,
    failures: { off: off.non2xx + off.errors, middleware: middleware.non2xx + middleware.errors, on: on.non2xx + on.errors },
  }, null, 2)}\n`);
  log(`the edge costs ~${Math.round(costUs)} µs of server capacity per request (1/rps_on - 1/rps_off, 2 shared cores: app, Postgres and load generator)`);

  await edge.close();
  await plain.close();
  await pool.end();
  await scratch.drop();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
