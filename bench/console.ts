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
 * Then paging (SPEC §23: the transactions list pages through 100,000 without loading them all): a second
 * organization with BENCH_CONSOLE_TRANSACTIONS (100,000) transactions, recorded in bulk by the ledger's own
 * insert; its transactions page is opened and "Load more" pressed until PAGING_PAGES pages show, timing each page
 * and counting the list requests the page sent and the rows each asked for; the first organization's page (one
 * transaction) is timed beside it.
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
import { chromium, type Browser } from 'playwright-core';
import { loadConfig } from '../src/config';
import { createPool, withTransaction, type Pool } from '../src/db/pool';
import { createApp } from '../src/http/app';
import { systemClock } from '../src/http/route';
import { randomString } from '../src/ids';
import { insertTransactions } from '../src/ledger/transactions';
import { createLogger } from '../src/logger';
import { createOrganization, setRateLimits } from '../src/orgs/repo';
import { appFeatures } from '../src/routes';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../test/support/chromium';
import { createScratchDatabase } from '../test/support/scratch';
import { transactionToRead } from './readFixture';
import { writeResults } from './results';

const RUNS = Math.max(3, Number(process.env.BENCH_CONSOLE_RUNS ?? 5));
const ADMIN_URL = process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DATABASE = `ledger_bench_console_${randomString(8).toLowerCase()}`;
const GOAL_RATIO_MAX = 2;
const PAGE_TIMEOUT_MS = 60_000;
const PAGING_TRANSACTIONS = Number(process.env.BENCH_CONSOLE_TRANSACTIONS ?? 100_000);
const PAGING_PAGES = 4;
const SEED_BATCH = 5_000;

// What the functions passed to the page see (this project compiles without DOM types).
declare const document: { querySelector(selector: string): unknown; querySelectorAll(selector: string): { length: number } };
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
    services: { taskQueue: 'bench' },
    readiness: {},
  };
  const { app, edge } = createApp(
    deps,
    appFeatures(deps.config, () => deps.clock.now()),
  );
  const { created } = await transactionToRead(pool, deps, edge);
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sessionOf = (organization: { id: string; name: string }, apiKey: string) => ({
    apiKey,
    organizationName: organization.name,
    organizationId: organization.id,
    environment: 'sandbox',
  });
  const session = sessionOf(created.organization, created.key.api_key);
  const many = await createOrganization(pool, { name: 'Bench operator with many', kycRequired: true, environment: 'sandbox' });
  await setRateLimits(pool, many.organization.id, { read: 1_000_000 });
  const seededAt = performance.now();
  await seedTransactions(pool, many.organization.id, many.account.id);
  log(`seeded ${PAGING_TRANSACTIONS} transactions in ${((performance.now() - seededAt) / 1000).toFixed(1)} s`);
  const manySession = sessionOf(many.organization, many.key.api_key);
  const stop = async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await pool.end();
    await scratch.drop();
  };
  return { baseUrl, session, manySession, stop };
}

/** PAGING_TRANSACTIONS cash_in transactions of one account, a second apart, in statements of SEED_BATCH. */
async function seedTransactions(pool: Pool, organizationId: string, accountId: string): Promise<void> {
  const start = Date.now() - PAGING_TRANSACTIONS * 1000;
  for (let from = 0; from < PAGING_TRANSACTIONS; from += SEED_BATCH) {
    const inputs = Array.from({ length: Math.min(SEED_BATCH, PAGING_TRANSACTIONS - from) }, (_, i) => {
      const createdAt = new Date(start + (from + i) * 1000);
      return {
        organizationId,
        accountId,
        direction: 'cash_in' as const,
        type: 'intent' as const,
        sourceId: null,
        amountCents: 100 + ((from + i) % 900),
        date: createdAt.toISOString().slice(0, 10),
        createdAt,
        taskQueue: 'bench',
      };
    });
    await withTransaction(pool, (db) => insertTransactions(db, inputs));
  }
}

/**
 * The transactions page of `session`'s organization: ms (page clock) until each of `pages` pages of rows shows,
 * pressing "Load more" between them, and how many list requests of 25 rows the page sent.
 */
async function pagingMs(browser: Browser, baseUrl: string, session: object, pages: number) {
  const context = await browser.newContext();
  try {
    await context.addInitScript((value: string) => sessionStorage.setItem('ledger-console.session', value), JSON.stringify(session));
    const page = await context.newPage();
    let listRequests = 0;
    page.on('request', (request) => {
      const url = new URL(request.url());
      // The page's own list, 25 rows a request (the overview reads the open window 100 at a time).
      if (url.pathname === '/transaction' && url.searchParams.get('limit') === '25') listRequests += 1;
    });
    await page.goto(`${baseUrl}/console#/transactions`);
    const shownMs: number[] = [];
    for (let n = 1; n <= pages; n += 1) {
      if (n > 1) await page.getByRole('button', { name: 'Load more' }).click();
      const at = await page.waitForFunction(
        (rows: number) => (document.querySelectorAll('tbody tr').length >= rows ? performance.now() : 0),
        // More rows than the pages before showed (rows render at once, a page at a time).
        (n - 1) * 25 + 1,
        { timeout: PAGE_TIMEOUT_MS, polling: 'raf' },
      );
      shownMs.push(await at.jsonValue());
    }
    return {
      shownMs,
      rows: await page.locator('tbody tr').count(),
      listRequests,
    };
  } finally {
    await context.close();
  }
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
  const { baseUrl, session, manySession, stop } = await serve();
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
    const small = await pagingMs(browser, baseUrl, session, 1);
    const many = await pagingMs(browser, baseUrl, manySession, PAGING_PAGES);
    log(
      `paging: one transaction, first page at ${small.shownMs[0]!.toFixed(0)} ms; ${PAGING_TRANSACTIONS} transactions, pages at ${many.shownMs.map((ms) => ms.toFixed(0)).join(', ')} ms, ${many.rows} rows shown from ${many.listRequests} list requests`,
    );
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
      paging: {
        transactions: PAGING_TRANSACTIONS,
        first_page_ms_with_one_transaction: Math.round(small.shownMs[0]!),
        pages_shown_at_ms: many.shownMs.map(Math.round),
        rows_shown: many.rows,
        list_requests: many.listRequests,
      },
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
