/**
 * How fast the operator console's overview becomes usable (SPEC §23 goal: at most 2× the API reference page,
 * /docs): one in-process API on a real Postgres, one organization with a transaction, one Chromium (the system's,
 * test/support/chromium.ts). Each run opens both pages in fresh browser contexts (cold cache), alternating which
 * goes first, and reads the page's own clock (performance.now(), from navigation start) when it is usable:
 *   - /docs: Swagger UI has rendered the operations (`.opblock`);
 *   - /console: signed in (the key already in the tab's sessionStorage), the overview shows the balances
 *     (`balances_ms`), and nothing on it is loading any more: the open window and the 30-day chart drawn
 *     (`interactive_ms`, the figure the goal compares).
 * Medians over the runs.
 *
 *   npm run bench -- console                # 5 runs
 *   BENCH_CONSOLE_RUNS=9 npx tsx bench/console.ts
 *
 * Prints progress lines and the summary; writes the summary to bench/results/console-<time>.json.
 * BENCH_DATABASE_ADMIN_URL (default postgres://postgres@127.0.0.1:5432/postgres) must let us create a database.
 */
import { execFileSync } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client } from '@temporalio/client';
import { chromium, type Browser } from 'playwright-core';
import { loadConfig } from '../src/config';
import { createPool } from '../src/db/pool';
import { createApp } from '../src/http/app';
import { systemClock } from '../src/http/route';
import { randomString } from '../src/ids';
import { createLogger } from '../src/logger';
import { allRoutes } from '../src/routes';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../test/support/chromium';
import { createScratchDatabase } from '../test/support/scratch';
import { transactionToRead } from './readFixture';
import { writeResults } from './results';

const RUNS = Math.max(3, Number(process.env.BENCH_CONSOLE_RUNS ?? 5));
const ADMIN_URL = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DATABASE = `ledger_bench_console_${randomString(8).toLowerCase()}`;
const GOAL_RATIO_MAX = 2;
const PAGE_TIMEOUT_MS = 60_000;

// What the functions passed to the page see (this project compiles without DOM types).
declare const document: { querySelector(selector: string): unknown };
declare const performance: { now(): number };
declare const sessionStorage: { setItem(key: string, value: string): void };

function log(message: string): void {
  process.stdout.write(`[bench:console] ${message}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** A served API (no Temporal: the pages only read) on a scratch database, with an organization to sign in as. */
async function serve() {
  const scratch = await createScratchDatabase(ADMIN_URL, DATABASE);
  const config = loadConfig({ DATABASE_URL: scratch.databaseUrl, LOG_LEVEL: 'silent', PORT: '0' });
  const pool = createPool(scratch.databaseUrl, config.DATABASE_POOL_MAX);
  const deps = {
    config,
    pool,
    log: createLogger('silent'),
    clock: systemClock,
    services: { temporal: new Client(), taskQueue: 'bench' },
    readiness: {},
  };
  const { app, edge } = createApp(deps, allRoutes);
  const { created } = await transactionToRead(pool, deps, edge);
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const session = {
    apiKey: created.key.api_key,
    organizationName: created.organization.name,
    organizationId: created.organization.id,
    environment: 'sandbox',
  };
  const stop = async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await pool.end();
    await scratch.drop();
  };
  return { baseUrl, session, stop };
}

async function docsMs(browser: Browser, baseUrl: string): Promise<number> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${baseUrl}/docs/`);
    const at = await page.waitForFunction(() => (document.querySelector('.opblock') ? performance.now() : 0), undefined, {
      timeout: PAGE_TIMEOUT_MS,
      polling: 'raf',
    });
    return await at.jsonValue();
  } finally {
    await context.close();
  }
}

async function consoleMs(browser: Browser, baseUrl: string, session: object): Promise<{ balances: number; interactive: number }> {
  const context = await browser.newContext();
  try {
    // Signed in already, as a person who signed in a moment ago in this tab.
    await context.addInitScript((value: string) => sessionStorage.setItem('ledger-console.session', value), JSON.stringify(session));
    const page = await context.newPage();
    await page.goto(`${baseUrl}/console#/overview`);
    const balances = await page.waitForFunction(
      () => (document.querySelector('[data-ready=overview]') ? performance.now() : 0),
      undefined,
      {
        timeout: PAGE_TIMEOUT_MS,
        polling: 'raf',
      },
    );
    const interactive = await page.waitForFunction(
      () => (document.querySelector('.chart svg') && !document.querySelector('.loading') ? performance.now() : 0),
      undefined,
      { timeout: PAGE_TIMEOUT_MS, polling: 'raf' },
    );
    return { balances: await balances.jsonValue(), interactive: await interactive.jsonValue() };
  } finally {
    await context.close();
  }
}

async function main(): Promise<void> {
  // The page as `npm ci` builds it (built here only when missing or older than its sources).
  execFileSync(process.execPath, [path.resolve(__dirname, '..', 'console', 'scripts', 'build.js'), '--if-stale'], { stdio: 'inherit' });
  log(`creating database ${DATABASE}`);
  const { baseUrl, session, stop } = await serve();
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
  try {
    // One unmeasured round warms the server's code paths (and the OS's file cache) for both pages.
    await docsMs(browser, baseUrl);
    await consoleMs(browser, baseUrl, session);
    const docs: number[] = [];
    const overview: { balances: number; interactive: number }[] = [];
    for (let run = 0; run < RUNS; run += 1) {
      if (run % 2 === 0) {
        docs.push(await docsMs(browser, baseUrl));
        overview.push(await consoleMs(browser, baseUrl, session));
      } else {
        overview.push(await consoleMs(browser, baseUrl, session));
        docs.push(await docsMs(browser, baseUrl));
      }
      log(
        `run ${run + 1}/${RUNS}: /docs ${docs.at(-1)!.toFixed(0)} ms, overview balances ${overview.at(-1)!.balances.toFixed(0)} ms, interactive ${overview.at(-1)!.interactive.toFixed(0)} ms`,
      );
    }
    const docsMedian = median(docs);
    const interactiveMedian = median(overview.map((sample) => sample.interactive));
    const summary = {
      bench: 'console',
      finished_at: new Date().toISOString(),
      runs: RUNS,
      docs: { usable_ms_median: Math.round(docsMedian), samples_ms: docs.map(Math.round) },
      console_overview: {
        balances_ms_median: Math.round(median(overview.map((sample) => sample.balances))),
        interactive_ms_median: Math.round(interactiveMedian),
        samples_ms: overview.map((sample) => Math.round(sample.interactive)),
      },
      ratio: Number((interactiveMedian / docsMedian).toFixed(3)),
      goal_ratio_max: GOAL_RATIO_MAX,
    };
    log(`results in ${writeResults('console', summary)}`);
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    await browser.close();
    await stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
