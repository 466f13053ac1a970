import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import express from 'express';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { consoleRouter, CONSOLE_DIST } from '../src/console/serve';
import { toApiError } from '../src/http/app';
import { randomString } from '../src/ids';
import { createKey, revokeKey } from '../src/orgs/repo';
import { apiClient, createTestOrg, eventually, startStack, type Stack, type TestOrg } from './support/harness';
import { launchChromium } from './support/chromium';
import { buildWindowFile } from '../src/ach/files';
import { createLogger } from '../src/logger';
import { addBankAccount, idempotencyKey, statusOf, userBody } from './support/payments';
import { bankFile, closeWindow, fileAndSettle, giveOperatorBankAccount, importInbound } from './support/bankReturns';
import { representTransfer } from '../src/ach/represent';
import { settlementDateOf } from '../src/easternDates';
import { Receiver } from './support/receiver';

/**
 * SPEC §23: the operator console in a real Chromium against the real stack (api, worker, Postgres, Temporal).
 * Every page is signed into, read and checked with axe-core; screenshots land in test-results/console/ when a
 * test fails (every page at 1280 and 390 px with CONSOLE_SCREENSHOTS=1).
 */

const REPO = path.resolve(__dirname, '..');
const SHOTS = path.join(REPO, 'test-results', 'console');
// What the functions passed to page.evaluate / waitForFunction see in the browser (this project compiles without DOM types).
declare const document: { querySelector(selector: string): unknown; querySelectorAll(selector: string): { length: number } };
declare const window: unknown;
declare const location: { hash: string };
declare const sessionStorage: { length: number };

const TEMPORAL_UI_URL = 'http://temporal-ui.invalid:8233';
const FIRST_LOAD_BYTES_MAX = 300 * 1024;

let stack: Stack;
let receiver: Receiver;
let context: BrowserContext;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let org: TestOrg;
let stranger: { userId: string; transactionId: string };
let seeded: { transactionIds: string[]; tagged: { id: string; orderId: string }; transferId: string; hookId: string; eventId: string };

type Call = ReturnType<typeof apiClient>;

async function cashIn(call: Call, userId: string, amount: number, metadata?: Record<string, string>): Promise<string> {
  const body = { direction: 'cash_in', user_id: userId, amount, currency: 'USD', ...(metadata ? { metadata } : {}) };
  const response = await call('POST', '/intent', body, idempotencyKey());
  if (response.status !== 200 || response.body.status !== 'approved') throw new Error(`intent not approved: ${response.text}`);
  return response.body.transactions[0].id as string;
}

/** 30 cash_in (one tagged with metadata), two confirmed and settled into a transfer, a webhook endpoint on a receiver. */
async function seed(call: Call): Promise<typeof seeded> {
  const user = await call(
    'POST',
    '/user',
    userBody((body) => (body.metadata = { segment: 'console' })),
  );
  const userId = user.body.id as string;
  const orderId = `ord-${randomString(10)}`;
  const transactionIds: string[] = [];
  for (let i = 0; i < 30; i += 1)
    transactionIds.push(await cashIn(call, userId, 1_000 + i * 101, i === 7 ? { order_id: orderId } : undefined));
  for (const id of transactionIds.slice(0, 2)) {
    expect((await call('POST', `/simulate/transaction/${id}/confirm`, {}, idempotencyKey())).status).toBe(200);
    await eventually(
      async () => ((await call('GET', `/transaction/${id}`)).body.status === 'available' ? true : undefined),
      30_000,
      `${id} available`,
    );
  }
  expect((await call('POST', '/simulate/settlement', {}, idempotencyKey())).status).toBe(200);
  const transferId = await eventually(
    async () => ((await call('GET', '/transfer')).body.data[0]?.id as string | undefined) ?? undefined,
    30_000,
    'the transfer',
  );
  const hook = await call('POST', '/webhook', { url: receiver.url });
  expect(hook.status).toBe(200);
  const events = await call('GET', `/event?object_id=${userId}`);
  return { transactionIds, tagged: { id: transactionIds[7]!, orderId }, transferId, hookId: hook.body.id, eventId: events.body.data[0].id };
}

beforeAll(async () => {
  execFileSync(process.execPath, [path.join(REPO, 'console', 'scripts', 'build.js'), '--if-stale'], { stdio: 'inherit' });
  receiver = await Receiver.start();
  stack = await startStack({
    env: {
      TEMPORAL_UI_URL,
      WEBHOOK_SECRET_KEY: Buffer.alloc(32, 5).toString('base64'),
      WEBHOOK_DISPATCHER: 'on',
      WEBHOOK_DISPATCH_INTERVAL_MS: '50',
      WEBHOOK_RETRY_INITIAL_MS: '100',
      WEBHOOK_RETRY_MAX_MS: '400',
      SANDBOX_CONFIRM_SECONDS: '3600',
      SANDBOX_SETTLE_SECONDS: '3600',
    },
  });
  org = await createTestOrg(stack.pool, { kycRequired: false });
  seeded = await seed(apiClient(stack.url, org.apiKey));
  const other = await createTestOrg(stack.pool, { kycRequired: false });
  const otherCall = apiClient(stack.url, other.apiKey);
  const otherUser = (await otherCall('POST', '/user', userBody())).body.id as string;
  stranger = { userId: otherUser, transactionId: await cashIn(otherCall, otherUser, 500) };
  // axe-core goes in as a script tag, which the page's own CSP (self only) would refuse; the CSP is proven in a
  // browser of its own below.
  browser = await launchChromium({ bypassCSP: true, acceptDownloads: true });
  context = browser.context;
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
  await receiver?.close();
});

async function shoot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SHOTS, { recursive: true });
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: path.join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** Runs `body` on a fresh tab; a failure leaves screenshots of the tab at both widths. */
async function inTab(name: string, body: (page: Page) => Promise<void>): Promise<void> {
  const page = await context.newPage();
  try {
    await body(page);
  } catch (error) {
    await shoot(page, `failed-${name}`).catch(() => undefined);
    throw error;
  } finally {
    await page.close();
  }
}

async function signIn(page: Page, apiKey: string = org.apiKey): Promise<void> {
  await page.goto(`${stack.url}/console`);
  await page.getByLabel('API key').fill(apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
}

/** Waits until nothing on the page is loading. */
async function settled(page: Page): Promise<void> {
  await page.waitForFunction(() => document.querySelector('h1') !== null && document.querySelector('.loading') === null, undefined, {
    timeout: 30_000,
  });
}

async function visit(page: Page, hash: string): Promise<void> {
  await page.goto(`${stack.url}/console#/${hash}`);
  await settled(page);
}

/** axe-core over the whole page: no serious or critical violation. */
async function accessible(page: Page, name: string): Promise<void> {
  await page.addScriptTag({ path: require.resolve('axe-core') });
  const violations = await page.evaluate(async () => {
    const axe = (window as { axe: { run: (context: unknown, options: object) => Promise<any> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return (result.violations as any[])
      .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
      .map((violation) => ({
        id: violation.id,
        impact: violation.impact,
        nodes: violation.nodes.slice(0, 3).map((node: any) => node.target.join(' ')),
      }));
  });
  expect({ page: name, violations }).toEqual({ page: name, violations: [] });
  if (process.env.CONSOLE_SCREENSHOTS) await shoot(page, name);
}

describe('SPEC §23 operator console: served by the api', () => {
  test('the page and its assets carry a self-only CSP and cache headers; config.json names the Temporal UI and the open window', async () => {
    const page = await fetch(`${stack.url}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const html = await page.text();
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const script = await fetch(`${stack.url}${asset}`);
    expect(script.status).toBe(200);
    expect(script.headers.get('cache-control')).toContain('immutable');
    const config = (await (await fetch(`${stack.url}/console/config.json`)).json()) as any;
    expect(config).toMatchObject({ temporal_ui_url: TEMPORAL_UI_URL, temporal_namespace: 'default', environment: 'sandbox' });
    expect(config.open_window.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect((await fetch(`${stack.url}/console`, { method: 'POST' })).status).not.toBe(200);
  });

  test('without a built page /console answers 503 with the error object, naming the command that builds it', async () => {
    const app = express();
    app.use(
      '/console',
      consoleRouter(stack.config, () => new Date(), path.join(REPO, 'test-results', 'no-console-here')),
    );
    app.use((error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      const apiError = toApiError(error);
      res.status(apiError.status).json(apiError.toBody('req_test'));
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const answer = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/console`);
      expect(answer.status).toBe(503);
      expect(((await answer.json()) as any).error).toMatchObject({
        code: 'unavailable',
        message: expect.stringContaining('npm run console:build'),
      });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test("the overview's first load is at most 300 KB of JavaScript and CSS, gzipped", () => {
    const html = fs.readFileSync(path.join(CONSOLE_DIST, 'index.html'), 'utf8');
    const files = [...html.matchAll(/(?:src|href)="\/console\/(assets\/[^"]+\.(?:js|css))"/g)].map((match) => match[1]!);
    expect(files.length).toBeGreaterThanOrEqual(2);
    const gzipped = files.reduce(
      (sum, file) => sum + zlib.gzipSync(fs.readFileSync(path.join(CONSOLE_DIST, file)), { level: 9 }).length,
      0,
    );
    expect(gzipped).toBeLessThanOrEqual(FIRST_LOAD_BYTES_MAX);
  });

  test('under its own CSP (no bypass) the page signs in and renders without a policy violation', async () => {
    const strict = await launchChromium();
    try {
      const page = await strict.context.newPage();
      const violations: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) violations.push(message.text());
      });
      await signIn(page);
      await visit(page, 'overview');
      await page.locator('.chart svg').waitFor();
      expect(violations).toEqual([]);
    } finally {
      await strict.close();
    }
  }, 60_000);
});

describe('SPEC §23 operator console: pages', () => {
  test('sign in, then the overview: balances, the open window by status, its close and transfer date, a 30-day chart', async () => {
    await inTab('overview', async (page) => {
      await page.goto(`${stack.url}/console`);
      await accessible(page, 'signin');
      await signIn(page);
      await visit(page, 'overview');
      await page.locator('.chart svg').waitFor();
      await settled(page);
      const text = await page.locator('main').innerText();
      expect(text).toContain('Balances now');
      expect(text).toMatch(/Open window \d{4}-\d{2}-\d{2}/);
      expect(text).toContain('Its transfer date');
      expect(text).toMatch(/cash in\s+pending\s+28/);
      expect(await page.locator('.chart rect.in').count()).toBe(30);
      await accessible(page, 'overview');
      // The keyboard reaches everything: the skip link first, then the pages, each a real link.
      await page.locator('body').focus();
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => (document as any).activeElement.textContent)).toBe('Skip to content');
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => (document as any).activeElement.textContent)).toBe('Overview');
      await page.keyboard.press('Tab');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => location.hash === '#/transactions');
    });
  }, 120_000);

  test('transactions page with cursors: the second page loads with the first page’s cursor, the first is not fetched again', async () => {
    await inTab('transactions', async (page) => {
      await signIn(page);
      const lists: string[] = [];
      page.on('request', (request) => {
        const url = new URL(request.url());
        // The transactions page's own list (the overview, shown at sign-in, reads the open window 100 at a time).
        if (url.pathname === '/transaction' && url.searchParams.get('limit') === '25') lists.push(url.search);
      });
      await visit(page, 'transactions');
      expect(await page.locator('tbody tr').count()).toBe(25);
      await page.getByRole('button', { name: 'Load more' }).click();
      await page.waitForFunction(() => document.querySelectorAll('tbody tr').length > 25);
      expect(await page.locator('tbody tr').count()).toBe(30);
      expect(lists).toHaveLength(2);
      expect(lists[0]).not.toContain('cursor=');
      expect(lists[1]).toContain('cursor=');
      await accessible(page, 'transactions');
    });
  }, 120_000);

  test('a metadata search finds the one transaction whose intent carries it; its detail shows timeline, entries, source, workflow link', async () => {
    await inTab('transaction-detail', async (page) => {
      await signIn(page);
      await visit(page, 'transactions');
      await page.getByLabel('Key', { exact: true }).fill('order_id');
      await page.getByLabel('Value', { exact: true }).fill(seeded.tagged.orderId);
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForFunction(() => location.hash.includes('metadata'));
      await settled(page);
      // The hash changes before the list re-renders for it: wait for the filtered list itself, not just a page
      // without a loading line (which the unfiltered list, or a render before the fetch starts, also is).
      await page.locator('.paging', { hasText: '1 shown' }).waitFor({ timeout: 30_000 });
      const rows = page.locator('tbody tr');
      expect(await rows.count()).toBe(1);
      await rows.first().getByRole('link').click();
      await page.waitForFunction(() => location.hash.startsWith('#/transactions/txn_'));
      await settled(page);
      const text = await page.locator('main').innerText();
      expect(text).toContain(seeded.tagged.id);
      expect(text).toContain('transaction.created');
      expect(text).toContain('cash in recorded');
      expect(text).toContain(seeded.tagged.orderId);
      const link = page.getByRole('link', { name: 'Open in the Temporal UI' });
      expect(await link.getAttribute('href')).toBe(`${TEMPORAL_UI_URL}/namespaces/default/workflows/${seeded.tagged.id}`);
      await accessible(page, 'transaction-detail');
    });
  }, 120_000);

  test('transfers: the list, a transfer with its report and members, and its CSV downloaded', async () => {
    await inTab('transfers', async (page) => {
      await signIn(page);
      await visit(page, 'transfers');
      expect(await page.locator('tbody tr').count()).toBeGreaterThanOrEqual(1);
      await accessible(page, 'transfers');
      await visit(page, `transfers/${seeded.transferId}`);
      expect(await page.locator('main').innerText()).toContain('Report');
      // The seeded organization has no operator bank account: its transfers move no CCD entry.
      await page.getByRole('region', { name: 'ACH entry' }).getByText('No ACH entry.').waitFor();
      expect(await page.getByRole('region', { name: 'ACH entry' }).innerText()).toContain('No ACH entry.');
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('button', { name: 'Download report (CSV)' }).click(),
      ]);
      const csv = fs.readFileSync(await download.path(), 'utf8');
      const lines = csv.trim().split('\n');
      expect(lines[0]).toContain('id');
      expect(
        lines
          .slice(1)
          .map((line) => line.split(',')[0])
          .sort(),
      ).toEqual(seeded.transactionIds.slice(0, 2).sort());
      await accessible(page, 'transfer-detail');
    });
  }, 120_000);

  test('users, statement, events and webhooks pages read; an event is resent to an endpoint and a replay runs to its end', async () => {
    await inTab('others', async (page) => {
      await signIn(page);
      await visit(page, 'users');
      expect(await page.locator('tbody tr').count()).toBe(1);
      await accessible(page, 'users');
      await visit(page, 'statement');
      expect(await page.locator('main').innerText()).toContain('cash in recorded');
      await accessible(page, 'statement');
      await visit(page, 'events');
      expect(await page.locator('tbody tr').count()).toBeGreaterThan(1);
      await accessible(page, 'events');
      await visit(page, `events/${seeded.eventId}`);
      await page.getByRole('button', { name: 'Resend' }).click();
      await page.getByText(/Resent: delivery whd_/).waitFor();
      await accessible(page, 'event-detail');
      await visit(page, 'webhooks');
      await accessible(page, 'webhooks');
      await visit(page, `webhooks/${seeded.hookId}`);
      // An hour ago on the browser's clock, as a datetime-local field takes it.
      const from = await page.evaluate(() => {
        const at = new Date(Date.now() - 3_600_000);
        return new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 19);
      });
      await page.getByLabel('From (your time)').fill(from);
      await page.getByRole('button', { name: 'Start replay' }).click();
      await page.locator('.replay .badge-completed').waitFor({ timeout: 60_000 });
      expect(await page.locator('.replay').innerText()).toMatch(/(\d+) of \1 events sent/);
      await accessible(page, 'webhook-detail');
    });
  }, 180_000);

  test("SPEC §26: a user's page shows its limits, each period's use and the pending raises", async () => {
    // An organization of its own, so the other tests' user counts stay as they are.
    const own = await createTestOrg(stack.pool, { kycRequired: false });
    const call = apiClient(stack.url, own.apiKey);
    const userId = (await call('POST', '/user', userBody())).body.id as string;
    expect((await call('PUT', `/user/${userId}/limits`, { cash_in: { day: 50_000, month: 200_000 } })).status).toBe(200);
    expect((await call('PUT', `/user/${userId}/limits`, { cash_in: { day: 75_000 } })).body.pending).toHaveLength(1);
    await cashIn(call, userId, 12_345);
    await inTab('user-limits', async (page) => {
      await signIn(page, own.apiKey);
      await visit(page, `users/${userId}`);
      const limits = page.getByRole('region', { name: 'Limits and use of each period' });
      const dayRow = limits.locator('tbody tr').first();
      expect(await dayRow.innerText()).toMatch(/cash in\s+day\s+\$500\.00\s+\$123\.45\s+\$376\.55/);
      expect(await limits.locator('tbody tr').count()).toBe(6);
      const pending = page.getByRole('region', { name: 'Pending raises' });
      expect(await pending.innerText()).toMatch(/cash in\s+day\s+\$750\.00/);
      await accessible(page, 'user-limits');
      await shoot(page, 'user-limits');
    });
  }, 60_000);

  test("SPEC §24: a deposit's detail shows its ACH entry (trace, status, amount); a payment without one reads No ACH entry", async () => {
    // An organization of its own, so the other tests' user and transaction counts stay as they are.
    const own = await createTestOrg(stack.pool, { kycRequired: false });
    const call = apiClient(stack.url, own.apiKey);
    const userId = (await call('POST', '/user', userBody())).body.id as string;
    const accountNumber = `9${Date.now() % 1_000_000_000_000}`;
    const { intent } = await addBankAccount(call, userId, { account_number: accountNumber }, 4_321);
    const withEntry = intent.transactions[0].id as string;
    // The entry is queued as the deposit is recorded; filing it (as the ACH window would) gives it a trace number.
    expect(
      await buildWindowFile(stack.pool, stack.config, createLogger('silent'), `console-${randomString(8)}`, new Date()),
    ).not.toBeNull();
    const ach = await call('GET', `/transaction/${withEntry}/ach`);
    expect(ach.body).toMatchObject({ status: 'in_file', amount: 4_321, trace_number: expect.stringMatching(/^\d{15}$/) });
    // A user without a bank account: the deposit moves by no ACH entry (the first user's later deposits would).
    const without = await cashIn(call, (await call('POST', '/user', userBody())).body.id as string, 700);
    expect((await call('GET', `/transaction/${without}/ach`)).status).toBe(404);
    await inTab('transaction-ach', async (page) => {
      await signIn(page, own.apiKey);
      await visit(page, `transactions/${withEntry}`);
      const section = page.getByRole('region', { name: 'ACH entry' });
      // The section loads after the page: wait for its answer, not its "Loading" line.
      await section.getByText('Trace number').waitFor();
      const text = await section.innerText();
      expect(text).toMatch(new RegExp(`Trace number\\s+${ach.body.trace_number}`));
      expect(text).toMatch(/Status\s+in file/);
      expect(text).toMatch(/Amount\s+\$43\.21/);
      expect(text).toMatch(/SEC code\s+PPD/);
      expect(text).toContain(ach.body.file_id);
      expect(await page.locator('main').innerText()).not.toContain(accountNumber);
      await accessible(page, 'transaction-ach');
      await shoot(page, 'transaction-ach');
      await visit(page, `transactions/${without}`);
      await page.getByRole('region', { name: 'ACH entry' }).getByText('No ACH entry.').waitFor();
      expect(await page.getByRole('region', { name: 'ACH entry' }).innerText()).toContain('No ACH entry.');
      expect(await page.locator('.error').count()).toBe(0);
      await accessible(page, 'transaction-no-ach');
    });
  }, 90_000);

  test('SPEC §25: the ACH returns page shows the return rates against their thresholds, each return and NOC with what it did, and the exceptions', async () => {
    const own = await createTestOrg(stack.pool, { kycRequired: false });
    const call = apiClient(stack.url, own.apiKey);
    const deposit = async (amount: number) => {
      const userId = (await call('POST', '/user', userBody())).body.id as string;
      const accountNumber = `8${Date.now() % 1_000_000_000}${randomString(4).replace(/[^0-9]/g, '4')}`;
      const { intent } = await addBankAccount(call, userId, { account_number: accountNumber }, amount);
      return { userId, accountNumber, transactionId: intent.transactions[0].id as string };
    };
    const r01 = await deposit(2_500);
    const r10 = await deposit(2_600);
    const c01 = await deposit(2_700);
    expect(await fileAndSettle(stack.pool, stack.config)).not.toBeNull();
    for (const [sent, code] of [
      [r01, 'R01'],
      [r10, 'R10'],
    ] as const) {
      await statusOf(call, sent.transactionId, 'available');
      expect((await call('POST', '/simulate/ach/return', { transaction_id: sent.transactionId, code }, idempotencyKey())).status).toBe(200);
    }
    // The bank's own file (written by moov-io/ach): a NOC correcting c01's account and a return nobody's entry matches.
    const c01Trace = (await call('GET', `/transaction/${c01.transactionId}/ach`)).body.trace_number as string;
    const unknownTrace = `011000019${String(Date.now() % 1_000_000).padStart(6, '0')}`;
    const corrected = `66${Date.now() % 1_000_000_000}`;
    const file = await bankFile('011000015', [
      { trace: unknownTrace, code: 'R02', amount: 100 },
      { trace: c01Trace, code: 'C01', corrected },
    ]);
    expect((await importInbound(stack.pool, stack.config, `RET-${randomString(6)}.ach`, file)).file.changes_count).toBe(1);

    await inTab('ach-returns', async (page) => {
      await signIn(page, own.apiKey);
      await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'ACH returns' }).click();
      await page.getByRole('heading', { name: 'ACH returns', level: 1 }).waitFor();
      await settled(page);
      const rates = page.getByRole('region', { name: 'Return rates by kind' });
      const rateText = await rates.innerText();
      // 3 debits; R10 is unauthorized (1/3 against 0.5 %), no administrative return, 2 of 3 overall (against 15 %).
      expect(rateText).toMatch(/Unauthorized[^\n]*\s+1\s+33\.33 %\s+0\.50 %[\s\S]*?over threshold/);
      expect(rateText).toMatch(/Administrative[^\n]*\s+0\s+0\.00 %\s+3\.00 %[\s\S]*?within threshold/);
      expect(rateText).toMatch(/Overall[^\n]*\s+2\s+66\.67 %\s+15\.00 %[\s\S]*?over threshold/);
      expect(await page.getByRole('main').innerText()).toContain('Debit entries of the last 60 days: 3');
      const returns = page.getByRole('region', { name: 'Returns list' });
      const rows = returns.getByRole('row');
      expect(await rows.count()).toBe(4); // the head and three
      expect(await rows.nth(1).innerText()).toMatch(
        /C01[\s\S]*Incorrect DFI Account Number[\s\S]*NOC[\s\S]*\$27\.00[\s\S]*Bank account corrected/,
      );
      expect(await rows.nth(2).innerText()).toMatch(/R10[\s\S]*return[\s\S]*\$26\.00[\s\S]*Dispute lost[\s\S]*User suspended/);
      expect(await rows.nth(3).innerText()).toMatch(/R01[\s\S]*Insufficient Funds[\s\S]*\$25\.00[\s\S]*Dispute lost/);
      expect(await rows.nth(3).getByRole('link', { name: r01.transactionId }).getAttribute('href')).toBe(
        `#/transactions/${r01.transactionId}`,
      );
      expect(await rows.nth(2).getByRole('link', { name: r10.userId }).getAttribute('href')).toBe(`#/users/${r10.userId}`);
      const exceptions = page.getByRole('region', { name: 'Exceptions list' });
      const unknown = exceptions.getByRole('row').filter({ hasText: unknownTrace });
      expect(await unknown.innerText()).toMatch(/unknown trace[\s\S]*R02[\s\S]*matched no entry[\s\S]*RET-/);
      const main = await page.getByRole('main').innerText();
      for (const sent of [r01, r10, c01]) expect(main).not.toContain(sent.accountNumber);
      expect(main).not.toContain(corrected);
      await accessible(page, 'ach-returns');
      await shoot(page, 'ach-returns');

      // One list's filter leaves the other list as it was.
      await page.getByLabel('type', { exact: true }).selectOption('notification_of_change');
      await page.getByRole('button', { name: 'Search' }).first().click();
      await page.waitForFunction(() => location.hash === '#/returns?type=notification_of_change');
      await settled(page);
      // The hash changes before the list re-renders for it (as the transactions filter above): wait for the
      // unfiltered rows to go and the filtered one to come; a filter that kept them fails here.
      const returnRows = page.getByRole('region', { name: 'Returns list' }).getByRole('row');
      await returnRows.nth(2).waitFor({ state: 'detached', timeout: 30_000 });
      await returnRows.nth(1).waitFor({ timeout: 30_000 });
      expect(await returnRows.count()).toBe(2);
      expect(await page.getByRole('region', { name: 'Returns list' }).innerText()).toContain('C01');
      expect(await page.getByRole('region', { name: 'Exceptions list' }).innerText()).toContain(unknownTrace);

      // The returned deposit's own page says so.
      await visit(page, `transactions/${r01.transactionId}`);
      const entry = page.getByRole('region', { name: 'ACH entry' });
      await entry.getByText('Trace number').waitFor();
      expect(await entry.innerText()).toMatch(/Status\s+returned[\s\S]*Return\s+R01: Insufficient Funds/);
      await accessible(page, 'transaction-returned');
      await shoot(page, 'transaction-returned');
    });
  }, 120_000);

  test("SPEC §25: a returned transfer's exception says it waits for the operator, then what the operator did", async () => {
    // An organization of its own whose settlement account has an operator bank account: its transfer is a CCD entry.
    const own = await createTestOrg(stack.pool, { kycRequired: false });
    const call = apiClient(stack.url, own.apiKey);
    const operatorNumber = `7${Date.now() % 1_000_000_000}`;
    await giveOperatorBankAccount(stack, own.accountId, operatorNumber);
    const userId = (await call('POST', '/user', userBody())).body.id as string;
    const deposit = await cashIn(call, userId, 4_200);
    expect((await call('POST', `/simulate/transaction/${deposit}/confirm`, {}, idempotencyKey())).status).toBe(200);
    await statusOf(call, deposit, 'available');
    const transfer = await closeWindow(stack, own, settlementDateOf(new Date(), stack.config.SETTLEMENT_CUTOFF));
    expect(transfer).toMatchObject({ direction: 'disbursement', amount_cents: '4200' });
    expect(await fileAndSettle(stack.pool, stack.config)).not.toBeNull();
    const { rows } = await stack.pool.query<{ trace_number: string }>('SELECT trace_number FROM ach_entries WHERE transfer_id = $1', [
      transfer.id,
    ]);
    const trace = rows[0]!.trace_number;
    // The bank returns the operator's credit (a file moov-io/ach writes): an exception waiting for the operator.
    const file = await bankFile('011000015', [
      { trace, code: 'R03', amount: 4_200, credit: true, sec: 'CCD', accountNumber: operatorNumber },
    ]);
    expect((await importInbound(stack.pool, stack.config, `CCD-${randomString(6)}.ach`, file)).file.returns_count).toBe(1);

    await inTab('ach-exception-operator', async (page) => {
      await signIn(page, own.apiKey);
      await visit(page, 'returns?kind=transfer_returned');
      await settled(page);
      const row = () => page.getByRole('region', { name: 'Exceptions list' }).getByRole('row').filter({ hasText: trace });
      expect(await row().innerText()).toMatch(/transfer returned[\s\S]*R03[\s\S]*an operator acts[\s\S]*awaiting operator/);
      await accessible(page, 'ach-exception-awaiting');
      await shoot(page, 'ach-exception-awaiting');

      // The operator presents it again (`ach transfer represent`): the row says so, with the new entry.
      const again = await representTransfer(stack.pool, transfer.id, new Date());
      await page.reload();
      await settled(page);
      await row().getByText('Presented again as').waitFor();
      expect(await row().innerText()).toContain(`Presented again as ${again.entry_id}`);
      expect(await row().innerText()).not.toContain('awaiting operator');
      await accessible(page, 'ach-exception-presented');
      await shoot(page, 'ach-exception-presented');
    });
  }, 120_000);

  test("another organization's ids read as not found, with the API's request id", async () => {
    await inTab('not-found', async (page) => {
      await signIn(page);
      for (const hash of [`users/${stranger.userId}`, `transactions/${stranger.transactionId}`]) {
        await visit(page, hash);
        const alert = page.getByRole('alert');
        expect(await alert.innerText()).toContain('Not found');
        expect(await alert.locator('.request-id').innerText()).toMatch(/^req_/);
      }
      await accessible(page, 'not-found');
    });
  }, 60_000);

  test('an organization whose IP allowlist leaves this address out still signs in (by a read) and reads', async () => {
    const walled = await createTestOrg(stack.pool, { kycRequired: false, allowlist: ['203.0.113.0/24'] });
    await inTab('allowlist', async (page) => {
      await signIn(page, walled.apiKey);
      await visit(page, 'overview');
      expect(await page.locator('main').innerText()).toContain('Balances now');
      await visit(page, 'events/evt_00000000000000000000000000000000');
      expect(await page.getByRole('alert').innerText()).toContain('Not found');
    });
  }, 60_000);

  test('a revoked key signs the console out, back to sign-in with a message', async () => {
    const issued = await createKey(stack.pool, org.organizationId, 'sandbox');
    await inTab('revoked', async (page) => {
      await signIn(page, issued.api_key);
      await visit(page, 'users');
      await revokeKey(stack.pool, issued.id);
      // The api may answer from its key cache until it hears of the revocation: ask again until it refuses.
      await eventually(
        async () => {
          await page.goto(`${stack.url}/console#/transactions?n=${randomString(6)}`);
          await page.waitForFunction(() => document.querySelector('.loading') === null);
          return (await page.getByLabel('API key').count()) === 1 ? true : undefined;
        },
        20_000,
        'the console to sign out',
      );
      expect(await page.getByRole('status').innerText()).toMatch(/Signed out: the API refused the key/);
      expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    });
  }, 60_000);
});
