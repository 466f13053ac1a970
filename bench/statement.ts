/**
 * Statement CSV bench (SPEC §21). Run: `npm run bench -- statement` or `npx tsx bench/statement.ts`; Postgres at
 * BENCH_DATABASE_URL and the Temporal CLI at .tools/bin/temporal (the api process connects to it at start).
 *
 * Seeds one account with BENCH_STATEMENT_POSTINGS / 2 (500,000) entries, i.e. 1,000,000 postings, over 300
 * days (bench/journalSeed.ts), starts the api as its own process and, BENCH_STATEMENT_RUNS (5) times each,
 * alternating: GET /account/{id}/statement?format=csv over those days through the api, read to the last
 * byte, with the api's resident memory (VmRSS) sampled every 10 ms; and the bare COPY of the same rows (the
 * api's own statement) read by this process. Goal: the api ≤ 2× the bare COPY, with flat api memory.
 * Medians to stdout and bench/results/statement-*.json.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { to as copyTo } from 'pg-copy-streams';
import { REPO_ROOT } from '../src/config';
import { createPool, type Pool } from '../src/db/pool';
import { statementCsvCopySql } from '../src/journal/repo';
import { statementSpan } from '../src/journal/service';
import { freePort } from '../test/support/ports';
import { createScratchDatabase, startScratchTemporal, topologyFrom } from '../test/support/scratch';
import { SEED_END, seedJournal } from './journalSeed';
import { startProcess, stopProcess } from './processes';
import { writeResults } from './results';

const POSTINGS = Number(process.env.BENCH_STATEMENT_POSTINGS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_STATEMENT_RUNS ?? 5);
const DAYS = 300;
const CLI = process.env.TEMPORAL_CLI_PATH ?? path.join(REPO_ROOT, '.tools', 'bin', 'temporal');
const PG_BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const RSS_SAMPLE_MS = 10;

const say = (line: string) => process.stdout.write(`${line}\n`);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const mib = (kib: number) => Number((kib / 1024).toFixed(1));
const rssKib = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

/** The statement's days: every seeded entry, whatever the cutoff. */
const FROM = new Date(SEED_END.getTime() - (DAYS + 1) * 86_400_000).toISOString().slice(0, 10);
const TO = SEED_END.toISOString().slice(0, 10);

async function throughApi(url: string, input: { apiKey: string; accountId: string; apiPid: number }) {
  let peakRssKib = rssKib(input.apiPid);
  const sampler = setInterval(() => (peakRssKib = Math.max(peakRssKib, rssKib(input.apiPid))), RSS_SAMPLE_MS);
  const started = process.hrtime.bigint();
  try {
    const response = await fetch(`${url}/account/${input.accountId}/statement?from=${FROM}&to=${TO}&format=csv`, {
      headers: { Authorization: `Bearer ${input.apiKey}` },
    });
    if (response.status !== 200) throw new Error(`statement answered ${response.status}: ${await response.text()}`);
    let bytes = 0;
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
    return { ms: Number(process.hrtime.bigint() - started) / 1e6, bytes, peakRssKib };
  } finally {
    clearInterval(sampler);
  }
}

async function bareCopy(pool: Pool, accountId: string) {
  const client = await pool.connect();
  try {
    const span = statementSpan('00:00', { from: FROM, to: TO });
    const started = process.hrtime.bigint();
    const sql = statementCsvCopySql({
      accountId: client.escapeLiteral(accountId),
      start: client.escapeLiteral(span.start.toISOString()),
      end: client.escapeLiteral(span.end.toISOString()),
    });
    const stream = client.query(copyTo(sql));
    let bytes = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) bytes += chunk.length;
    return { ms: Number(process.hrtime.bigint() - started) / 1e6, bytes, rows: stream.rowCount };
  } finally {
    client.release();
  }
}

async function main(): Promise<void> {
  const database = `bench_statement_${Date.now()}_${process.pid}`;
  say(`statement bench: ${POSTINGS} postings, ${RUNS} runs each; scratch database ${database}`);
  const scratch = await createScratchDatabase(PG_BASE, database);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-statement-'));
  const temporal = await startScratchTemporal(CLI, path.join(workDir, 'temporal.log'), {
    topology: topologyFrom(process.env.BENCH_TEMPORAL),
    adminUrl: PG_BASE,
  });
  const pool = createPool(scratch.databaseUrl, 2);
  let api: ChildProcess | undefined;
  try {
    const seeded = await seedJournal(pool, { entries: POSTINGS / 2, days: DAYS, say });
    const port = await freePort();
    api = await startProcess(
      'api',
      'ops/bin/api.ts',
      {
        DATABASE_URL: scratch.databaseUrl,
        TEMPORAL_ADDRESS: temporal.server.address,
        PORT: String(port),
        LOG_LEVEL: 'info',
        TEMPORAL_TASK_QUEUE: `bench-statement-${process.pid}`,
      },
      /api listening/,
    );
    const url = `http://127.0.0.1:${port}`;
    const target = { apiKey: seeded.apiKey, accountId: seeded.accountId, apiPid: api.pid! };
    const warmApi = await throughApi(url, target);
    const warmCopy = await bareCopy(pool, seeded.accountId);
    if (warmCopy.rows !== POSTINGS || warmApi.bytes !== warmCopy.bytes)
      throw new Error(`statements differ: api ${warmApi.bytes} B, COPY ${warmCopy.rows} rows/${warmCopy.bytes} B`);
    const idleRssKib = rssKib(api.pid!);
    const apiRuns: Array<Awaited<ReturnType<typeof throughApi>>> = [];
    const copyRuns: Array<Awaited<ReturnType<typeof bareCopy>>> = [];
    for (let run = 1; run <= RUNS; run += 1) {
      apiRuns.push(await throughApi(url, target));
      copyRuns.push(await bareCopy(pool, seeded.accountId));
      say(
        `  run ${run}/${RUNS}: api ${apiRuns.at(-1)!.ms.toFixed(0)} ms (RSS peak ${mib(apiRuns.at(-1)!.peakRssKib)} MiB) | bare COPY ${copyRuns.at(-1)!.ms.toFixed(0)} ms`,
      );
    }
    const apiMs = median(apiRuns.map((r) => r.ms));
    const copyMs = median(copyRuns.map((r) => r.ms));
    const peakRssKib = Math.max(...apiRuns.map((r) => r.peakRssKib));
    const result = {
      bench: 'statement',
      postings: POSTINGS,
      bytes: warmApi.bytes,
      api_csv_median_ms: Math.round(apiMs),
      bare_copy_median_ms: Math.round(copyMs),
      ratio: Number((apiMs / copyMs).toFixed(2)),
      goal_ratio_max: 2,
      api_rss_idle_mib: mib(idleRssKib),
      api_rss_peak_while_streaming_mib: mib(peakRssKib),
      rss_sample_ms: RSS_SAMPLE_MS,
    };
    say(
      `statement CSV median ${result.api_csv_median_ms} ms, bare COPY ${result.bare_copy_median_ms} ms: ${result.ratio}× (goal ≤ 2×) ${result.ratio <= 2 ? 'MET' : 'MISSED'}; api RSS ${result.api_rss_idle_mib} MiB idle, peak ${result.api_rss_peak_while_streaming_mib} MiB while streaming ${(warmApi.bytes / 1e6).toFixed(1)} MB`,
    );
    say(`summary: ${writeResults('statement', result)}`);
  } finally {
    if (api) await stopProcess(api);
    await pool.end();
    await temporal.stop();
    await scratch.drop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
