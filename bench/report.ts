/**
 * Transfer report bench (issue 16). Run: `npm run bench -- report` or `npx tsx bench/report.ts` (about a minute;
 * needs Postgres at BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres, and the Temporal
 * CLI at .tools/bin/temporal, which the api process connects to at start).
 *
 * Seeds a BENCH_REPORT_N (100,000) member transfer in a scratch database of its own (dropped at the end), starts
 * the api as its own process (ops/bin/api.ts, as deployed) and, BENCH_REPORT_RUNS (5) times each, alternating:
 *   - GET /transfer/{id}/report?format=csv through the api, read to the last byte;
 *   - the bare `COPY (SELECT …) TO STDOUT` of the same rows (the api's own statement), read to the last byte.
 * Reports the medians, their ratio (goal: ≤ 2×), and the api process's resident memory (VmRSS, sampled every
 * 10 ms) before and while it streams. Progress lines go to stdout, the numbers to bench/results/report-*.json.
 * BENCH_TEMPORAL=dev (default) or cluster: the Temporal server the api connects to (it plays no part in the figures).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { to as copyTo } from 'pg-copy-streams';
import { REPO_ROOT } from '../src/config';
import { createPool, withTransaction, type Pool } from '../src/db/pool';
import { createAccount, createOrganization } from '../src/orgs/repo';
import { transferCsvCopySql } from '../src/settlement/report';
import { createWindowTransfer } from '../src/settlement/repo';
import { createScratchDatabase, startScratchTemporal, topologyFrom } from '../test/support/scratch';
import { freePort } from '../test/support/ports';
import { exitOf } from '../ops/childProcess';
import { stopProcess } from './processes';
import { writeResults } from './results';

const N = Number(process.env.BENCH_REPORT_N ?? 100_000);
const RUNS = Number(process.env.BENCH_REPORT_RUNS ?? 5);
const CLI = process.env.TEMPORAL_CLI_PATH ?? path.join(REPO_ROOT, '.tools', 'bin', 'temporal');
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const WINDOW_DATE = '2026-11-25'; // closes on Thanksgiving: dated the Friday after
const RSS_SAMPLE_MS = 10;
const TOPOLOGY = topologyFrom(process.env.BENCH_TEMPORAL);

const say = (line: string) => process.stdout.write(`${line}\n`);
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const mib = (kib: number) => Number((kib / 1024).toFixed(1));

function rssKib(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

async function seed(pool: Pool): Promise<{ transferId: string; apiKey: string; organizationId: string }> {
  const created = await createOrganization(pool, { name: 'Report bench', kycRequired: false, environment: 'sandbox' });
  const account = await createAccount(pool, created.organization.id, 'Report bench account');
  // Bulk, like bench/settlement.ts: 2/3 cash_in (made available), 1/3 cash_out, every type represented.
  await pool.query(
    `INSERT INTO transactions (id, organization_id, account_id, direction, type, source_id, amount_cents, status, date, created_at, updated_at, workflow_started_at)
     SELECT 'txn_' || substr(md5(random()::text || g::text), 1, 24), $1, $2,
            CASE WHEN g % 3 = 0 THEN 'cash_out' ELSE 'cash_in' END,
            (ARRAY['intent', 'intent', 'refund', 'dispute'])[1 + g % 4], NULL, 1 + floor(random() * 100000)::bigint, 'pending', $3::date,
            $3::date + interval '12 hours' + g * interval '1 millisecond', now(), now()
       FROM generate_series(1, $4::int) g`,
    [created.organization.id, account.id, WINDOW_DATE, N],
  );
  await pool.query('ANALYZE transactions');
  await pool.query(`UPDATE transactions SET status = 'available', updated_at = now() WHERE account_id = $1 AND direction = 'cash_in'`, [
    account.id,
  ]);
  const built = await withTransaction(pool, (tx) =>
    createWindowTransfer(tx, { accountId: account.id, windowDate: WINDOW_DATE, transferDate: '2026-11-27', now: new Date() }),
  );
  await pool.query('ANALYZE transactions');
  return { transferId: built!.transfer.id, apiKey: created.key.api_key, organizationId: created.organization.id };
}

function startApiProcess(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'ops/bin/api.ts'], {
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr.on('data', (chunk: Buffer) => process.stderr.write(`[api] ${chunk.toString()}`));
  return new Promise((resolve, reject) => {
    let buffer = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const match = /"url":"([^"]+)"[^\n]*"msg":"api listening"/.exec(buffer);
      if (match) resolve({ child, url: match[1]! });
      buffer = buffer.slice(-10_000);
    });
    void exitOf(child).then(({ code }) => reject(new Error(`api exited (${code}) before listening`)));
  });
}

/** GET the CSV statement through the api, read to the last byte; RSS of the api sampled meanwhile. */
async function throughApi(url: string, apiKey: string, transferId: string, apiPid: number) {
  let peakRssKib = rssKib(apiPid);
  const sampler = setInterval(() => {
    peakRssKib = Math.max(peakRssKib, rssKib(apiPid));
  }, RSS_SAMPLE_MS);
  const started = process.hrtime.bigint();
  try {
    const response = await fetch(`${url}/transfer/${transferId}/report?format=csv`, { headers: { Authorization: `Bearer ${apiKey}` } });
    if (response.status !== 200) throw new Error(`report answered ${response.status}: ${await response.text()}`);
    let bytes = 0;
    let newlines = 0;
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.length;
      for (const byte of chunk) if (byte === 10) newlines += 1;
    }
    return { ms: Number(process.hrtime.bigint() - started) / 1e6, bytes, rows: newlines - 1, peakRssKib };
  } finally {
    clearInterval(sampler);
  }
}

/** The bare COPY of the same rows, read to the last byte by this process. */
async function bareCopy(pool: Pool, transferId: string) {
  const client = await pool.connect();
  try {
    const started = process.hrtime.bigint();
    const stream = client.query(copyTo(transferCsvCopySql(client.escapeLiteral(transferId))));
    let bytes = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) bytes += chunk.length;
    return { ms: Number(process.hrtime.bigint() - started) / 1e6, bytes, rows: stream.rowCount };
  } finally {
    client.release();
  }
}

async function main(): Promise<void> {
  const database = `bench_report_${Date.now()}_${process.pid}`;
  say(`report bench: ${N} members, ${RUNS} runs each; scratch database ${database}`);
  const scratch = await createScratchDatabase(PG_BASE, database);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-report-'));
  const temporal = await startScratchTemporal(CLI, path.join(workDir, 'temporal.log'), { topology: TOPOLOGY, adminUrl: PG_BASE });
  const pool = createPool(scratch.databaseUrl, 4);
  let api: ChildProcess | undefined;
  try {
    let started = Date.now();
    const { transferId, apiKey } = await seed(pool);
    say(`seeded transfer ${transferId} (${N} members) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    started = Date.now();
    const running = await startApiProcess({
      DATABASE_URL: scratch.databaseUrl,
      TEMPORAL_ADDRESS: temporal.server.address,
      PORT: String(await freePort()),
      TEMPORAL_TASK_QUEUE: `bench-report-${process.pid}`,
    });
    api = running.child;
    say(`api process ${api.pid} listening at ${running.url} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    // One of each first, unmeasured: connections, plans and caches warm for both alike.
    const warmApi = await throughApi(running.url, apiKey, transferId, api.pid!);
    const warmCopy = await bareCopy(pool, transferId);
    if (warmApi.rows !== N || warmCopy.rows !== N || warmApi.bytes !== warmCopy.bytes) {
      throw new Error(`statements differ: api ${warmApi.rows} rows/${warmApi.bytes} B, COPY ${warmCopy.rows} rows/${warmCopy.bytes} B`);
    }
    const idleRssKib = rssKib(api.pid!);
    const apiRuns: Awaited<ReturnType<typeof throughApi>>[] = [];
    const copyRuns: Awaited<ReturnType<typeof bareCopy>>[] = [];
    for (let run = 1; run <= RUNS; run += 1) {
      const viaApi = await throughApi(running.url, apiKey, transferId, api.pid!);
      const viaCopy = await bareCopy(pool, transferId);
      apiRuns.push(viaApi);
      copyRuns.push(viaCopy);
      say(
        `  run ${run}/${RUNS}: api ${viaApi.ms.toFixed(0)} ms (${viaApi.rows} rows, ${(viaApi.bytes / 1e6).toFixed(1)} MB, api RSS peak ${mib(viaApi.peakRssKib)} MiB) | bare COPY ${viaCopy.ms.toFixed(0)} ms`,
      );
    }
    const apiMedianMs = median(apiRuns.map((r) => r.ms));
    const copyMedianMs = median(copyRuns.map((r) => r.ms));
    const ratio = apiMedianMs / copyMedianMs;
    const peakRssKib = Math.max(...apiRuns.map((r) => r.peakRssKib));
    const result = {
      bench: 'report',
      at: new Date().toISOString(),
      members: N,
      runs: RUNS,
      topology: TOPOLOGY,
      bytes: warmApi.bytes,
      api_csv_ms: apiRuns.map((r) => Number(r.ms.toFixed(1))),
      bare_copy_ms: copyRuns.map((r) => Number(r.ms.toFixed(1))),
      api_csv_median_ms: Number(apiMedianMs.toFixed(1)),
      bare_copy_median_ms: Number(copyMedianMs.toFixed(1)),
      ratio: Number(ratio.toFixed(2)),
      goal_ratio_max: 2,
      api_rss_idle_mib: mib(idleRssKib),
      api_rss_peak_while_streaming_mib: mib(peakRssKib),
      api_rss_growth_while_streaming_mib: mib(peakRssKib - idleRssKib),
      rss_sample_ms: RSS_SAMPLE_MS,
      host: { cpus: os.cpus().length, node: process.version },
    };
    say(
      `api CSV median ${result.api_csv_median_ms} ms, bare COPY median ${result.bare_copy_median_ms} ms: ratio ${result.ratio}× (goal ≤ 2×) ${ratio <= 2 ? 'MET' : 'MISSED'}`,
    );
    say(
      `api RSS ${result.api_rss_idle_mib} MiB idle, peak ${result.api_rss_peak_while_streaming_mib} MiB while streaming ${(warmApi.bytes / 1e6).toFixed(1)} MB`,
    );
    say(`wrote ${path.relative(REPO_ROOT, writeResults('report', result))}`);
  } finally {
    if (api) await stopProcess(api);
    await pool.end();
    await temporal.stop();
    await scratch.drop();
    say(`dropped ${database}`);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
