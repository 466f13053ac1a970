import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { withTransaction } from '../src/db/pool';
import { settlementDateOf } from '../src/easternDates';
import { createAccount } from '../src/orgs/repo';
import { addDays, isBusinessDay } from '../src/settlement/calendar';
import {
  accountSettlementWorkflowId,
  HAND_OFF_ON_SETTLEMENT_DATE_PATCH,
  memberNotificationWorkflowId,
  settlementProgressQuery,
} from '../src/settlement/workflowContract';
import { handOffTimeOf, transferDateOf, windowCloseDateOf } from '../src/settlement/dates';
import { settlementViolations } from '../src/settlement/invariants';
import { streamTransferCsv, TransferReportInvariantError, transferTotals } from '../src/settlement/report';
import { createWindowTransfer, getTransferRow } from '../src/settlement/repo';
import { apiClient, createTestOrg, createTestUser, eventually, startStack, type Stack } from './support/harness';
import { patchIdsOf } from './support/histories';
import { expectDocumented } from './support/openapi';
import { admin } from './support/payments';

/** Histories of the current shape (notification in its child workflow); test/histories/settlement holds the older one. */
const SETTLEMENT_HISTORIES_DIR = path.join(__dirname, 'histories', 'settlement-notify-in-child');

/** The API's clock: real time unless a test pins it to a moment. */
let pinnedNow: Date | null = null;
let stack: Stack;
beforeAll(async () => {
  // Funds confirm and transfers settle only on demand, so each test decides when the network answers.
  stack = await startStack({
    env: { SANDBOX_CONFIRM_SECONDS: '3600', SANDBOX_SETTLE_SECONDS: '3600' },
    clock: { now: () => pinnedNow ?? new Date() },
  });
});
afterAll(async () => {
  await stack.stop();
});
afterEach(() => {
  pinnedNow = null;
});

let keyCounter = 0;
const idemKey = () => `calendar-${Date.now()}-${keyCounter++}`;
type Call = ReturnType<typeof apiClient>;

async function setup() {
  const org = await createTestOrg(stack.pool, { write: 100_000, read: 100_000 });
  const userId = await createTestUser(stack.pool, org.organizationId);
  return { org, userId, call: apiClient(stack.url, org.apiKey) };
}

/** Runs `work` with the API's clock pinned to `at`. */
async function pinned<T>(at: Date, work: () => Promise<T>): Promise<T> {
  pinnedNow = at;
  try {
    return await work();
  } finally {
    pinnedNow = null;
  }
}

/** Records a transaction through POST /intent at `at` and returns its id. */
async function record(call: Call, userId: string, direction: 'cash_in' | 'cash_out', amount: number, at: Date, accountId?: string) {
  return pinned(at, async () => {
    const response = await call(
      'POST',
      '/intent',
      {
        direction,
        user_id: userId,
        amount,
        currency: 'USD',
        ...(accountId ? { account_id: accountId } : {}),
      },
      { 'X-Idempotency-Key': idemKey() },
    );
    expect(response.status).toBe(200);
    return response.body.transactions[0].id as string;
  });
}

/** Noon Eastern (EST or EDT alike: 16:00 or 17:00 UTC are both that calendar day) on `date`. */
const noonOf = (date: string) => new Date(`${date}T16:30:00Z`);

async function confirm(call: Call, transactionId: string) {
  expect((await call('POST', `/simulate/transaction/${transactionId}/confirm`, {}, { 'X-Idempotency-Key': idemKey() })).status).toBe(200);
  await eventually(
    async () => ((await call('GET', `/transaction/${transactionId}`)).body.status === 'available' ? true : undefined),
    30_000,
    `${transactionId} available`,
  );
}

async function closeWindow(call: Call, date: string, accountId?: string) {
  const response = await call(
    'POST',
    '/simulate/settlement',
    { date, ...(accountId ? { account_id: accountId } : {}) },
    { 'X-Idempotency-Key': idemKey() },
  );
  expect(response.status).toBe(200);
}

async function transferOfWindow(call: Call, windowDate: string, accountId?: string) {
  const query = `window_date=${windowDate}${accountId ? `&account_id=${accountId}` : ''}`;
  return eventually(
    async () => (await call('GET', `/transfer?${query}`)).body.data[0] as Record<string, any> | undefined,
    30_000,
    `the transfer of window ${windowDate}`,
  );
}

async function submittedAt(transferId: string): Promise<Date | null> {
  const { rows } = await stack.pool.query(`SELECT submitted_at FROM transfers WHERE id = $1`, [transferId]);
  return rows[0].submitted_at;
}

/** Minimal RFC 4180 reader for the statements here (quoted fields, doubled quotes). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 1;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

const CSV_HEADER = ['id', 'direction', 'type', 'source_id', 'amount', 'created_at', 'date'];

async function settlementDone(accountId: string, windowDate: string) {
  return eventually(
    async () => {
      const handle = stack.temporal.workflow.getHandle(accountSettlementWorkflowId(accountId, windowDate));
      return (await handle.describe()).status.name === 'COMPLETED' ? handle.result() : undefined;
    },
    60_000,
    `settlement of ${accountId} window ${windowDate}`,
  );
}

/** Writes the workflow's history under test/histories/settlement once (RECORD_HISTORIES=1 rewrites it). */
async function saveHistoryOnce(name: string, workflowId: string) {
  const file = path.join(SETTLEMENT_HISTORIES_DIR, `${name}.json`);
  // Committed histories are the determinism guard's evidence: rewrite them only when asked to.
  if (fs.existsSync(file) && process.env.RECORD_HISTORIES !== '1') return;
  const history = await stack.temporal.workflow.getHandle(workflowId).fetchHistory();
  fs.mkdirSync(SETTLEMENT_HISTORIES_DIR, { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(history, null, 1)}\n`);
}

describe('SPEC §15 transfers on business days', () => {
  test('a window whose transfer date has passed hands its transfer to the rail at once; the network settles it on request', async () => {
    const { org, userId, call } = await setup();
    // Tuesday 2026-06-09, noon Eastern: window 06-09 closes at midnight opening Wednesday 06-10, a business day.
    const at = new Date('2026-06-09T16:00:00Z');
    const cashIn = await record(call, userId, 'cash_in', 2500, at);
    await record(call, userId, 'cash_out', 700, at);
    await confirm(call, cashIn);
    await closeWindow(call, '2026-06-09');
    const transfer = await transferOfWindow(call, '2026-06-09');
    expect(transfer).toMatchObject({
      amount: 1800,
      direction: 'disbursement',
      date: '2026-06-10',
      window_date: '2026-06-09',
      status: 'pending',
    });
    // Handed to the rail without waiting for anything (its date is long past).
    await eventually(async () => ((await submittedAt(transfer.id)) ? true : undefined), 30_000, 'the hand-off to the rail');
    expect((await call('POST', `/simulate/transfer/${transfer.id}/settle`, {}, { 'X-Idempotency-Key': idemKey() })).status).toBe(200);
    expect(await settlementDone(org.accountId, '2026-06-09')).toMatchObject({
      transferId: transfer.id,
      amountCents: 1800,
      transactionCount: 2,
    });
    expect((await call('GET', `/transfer/${transfer.id}`)).body.status).toBe('settled');
    await saveHistoryOnce('account_settlement_signal_settled', accountSettlementWorkflowId(org.accountId, '2026-06-09'));
    for (const kind of ['assigned', 'settled'] as const) {
      await saveHistoryOnce(`member_notification_${kind}`, memberNotificationWorkflowId(org.accountId, '2026-06-09', kind));
    }
  });

  test.each([
    ['closing on a Saturday (window Friday 2026-11-13)', '2026-11-13', '2026-11-14', '2026-11-16'],
    ['closing on Labor Day (window Sunday 2026-09-06)', '2026-09-06', '2026-09-07', '2026-09-08'],
    ['closing on Thanksgiving (window 2026-11-25)', '2026-11-25', '2026-11-26', '2026-11-27'],
    ['closing on a Friday (window Thursday 2026-11-12)', '2026-11-12', '2026-11-13', '2026-11-13'],
  ])('a window %s is built on its close day and dated the next business day', async (_name, windowDate, closeDay, expectedDate) => {
    const { org, userId, call } = await setup();
    expect(windowCloseDateOf(windowDate, '00:00')).toBe(closeDay);
    await record(call, userId, 'cash_out', 125, noonOf(windowDate));
    const closedFromMs = Date.now();
    await closeWindow(call, windowDate);
    const transfer = await transferOfWindow(call, windowDate);
    const builtByMs = Date.now();
    expect(transfer).toMatchObject({
      window_date: windowDate,
      date: expectedDate,
      amount: 125,
      direction: 'collection',
      transaction_count: 1,
    });
    // Built when the window closed (this test closes it late: between the close and the answer), whatever its
    // settlement date.
    expect(Date.parse(transfer.created_at)).toBeGreaterThanOrEqual(closedFromMs);
    expect(Date.parse(transfer.created_at)).toBeLessThanOrEqual(builtByMs);
    expect((await call('GET', `/transfer?date=${expectedDate}`)).body.data.map((t: { id: string }) => t.id)).toEqual([transfer.id]);
    // Its members carry the same settlement date in their TransferSummary.
    const [member] = (await call('GET', `/transfer/${transfer.id}`)).body.transactions.data;
    expect(member.transfer).toMatchObject({ id: transfer.id, date: expectedDate });
    expect(await settlementViolations(stack.pool, { accountIds: [org.accountId], windowDate })).toEqual([]);
  });

  test('a transfer dated after today waits in a durable timer until the start of its date (Eastern) before the rail gets it; the sandbox settles it early on request', async () => {
    const { org, userId, call } = await setup();
    // The first window from today on that closes on a non-business day: its transfer is dated days ahead.
    let windowDate = settlementDateOf(new Date(), '00:00');
    while (isBusinessDay(windowCloseDateOf(windowDate, '00:00'))) windowDate = addDays(windowDate, 1);
    const expectedDate = transferDateOf(windowDate, '00:00');
    const handOffAt = handOffTimeOf(expectedDate);
    expect(handOffAt.getTime()).toBeGreaterThan(Date.now());

    const cashIn = await record(call, userId, 'cash_in', 900, noonOf(windowDate));
    await record(call, userId, 'cash_out', 400, noonOf(windowDate));
    await confirm(call, cashIn);
    await closeWindow(call, windowDate);
    const transfer = await transferOfWindow(call, windowDate);
    expect(transfer).toMatchObject({ date: expectedDate, amount: 500, direction: 'disbursement', status: 'pending' });

    const handle = stack.temporal.workflow.getHandle(accountSettlementWorkflowId(org.accountId, windowDate));
    const progress = await eventually(
      async () => {
        const state = await handle.query(settlementProgressQuery);
        return state.phase === 'awaiting_date' ? state : undefined;
      },
      30_000,
      'the settlement waiting for its date',
    );
    expect(progress).toMatchObject({ transferId: transfer.id, handOffAt: handOffAt.toISOString() });
    // The timer runs out exactly at the start of the settlement date: its duration counts from the workflow's
    // time when it was set, the start of the workflow task that set it.
    const history = await handle.fetchHistory();
    const events = history.events ?? [];
    const timerAt = events.findIndex((event) => event.timerStartedEventAttributes);
    expect(events.filter((event) => event.timerStartedEventAttributes)).toHaveLength(1);
    const taskStarted = events
      .slice(0, timerAt)
      .reverse()
      .find((event) => event.workflowTaskStartedEventAttributes)!;
    const millisOf = (duration: { seconds?: unknown; nanos?: number | null }) =>
      Number(duration.seconds) * 1000 + Math.floor((duration.nanos ?? 0) / 1e6);
    const timeoutMs = millisOf(events[timerAt]!.timerStartedEventAttributes!.startToFireTimeout!);
    // Within the millisecond the workflow clock and the event time are each rounded to.
    expect(Math.abs(millisOf(taskStarted.eventTime!) + timeoutMs - handOffAt.getTime())).toBeLessThanOrEqual(1);
    expect(patchIdsOf(history).filter((id) => id === HAND_OFF_ON_SETTLEMENT_DATE_PATCH)).toHaveLength(1);
    // Held: not handed to the rail, still pending.
    expect(await submittedAt(transfer.id)).toBeNull();
    expect((await call('GET', `/transfer/${transfer.id}`)).body.status).toBe('pending');

    // The sandbox network settles it now: the hold ends, the rail gets it, everything settles.
    expect((await call('POST', `/simulate/transfer/${transfer.id}/settle`, {}, { 'X-Idempotency-Key': idemKey() })).status).toBe(200);
    expect(await settlementDone(org.accountId, windowDate)).toMatchObject({ transferId: transfer.id, amountCents: 500 });
    expect(await submittedAt(transfer.id)).not.toBeNull();
    expect((await call('GET', `/transfer/${transfer.id}`)).body).toMatchObject({ status: 'settled', date: expectedDate });
    expect(await settlementViolations(stack.pool, { accountIds: [org.accountId], windowDate })).toEqual([]);
  });
});

describe('SPEC §15 GET /transfer/{id}/report', () => {
  test('JSON: the transfer, totals by direction and by type over every member, members paged; CSV: the full statement; another organization gets 404', async () => {
    const { userId, call } = await setup();
    const windowDate = '2026-06-16';
    const at = noonOf(windowDate);
    const post = (pathName: string, body: unknown) =>
      pinned(at, async () => {
        const response = await call('POST', pathName, body, { 'X-Idempotency-Key': idemKey() });
        expect(response.status).toBe(200);
        return response.body;
      });
    const intentA = await post('/intent', { direction: 'cash_in', user_id: userId, amount: 1000, currency: 'USD' });
    const intentB = await post('/intent', { direction: 'cash_in', user_id: userId, amount: 500, currency: 'USD' });
    await post('/intent', { direction: 'cash_out', user_id: userId, amount: 300, currency: 'USD' });
    await confirm(call, intentA.transactions[0].id);
    await confirm(call, intentB.transactions[0].id);
    await post('/refund', { intent_id: intentA.id, amount: 200 });
    const dispute = await post('/simulate/dispute', { intent_id: intentB.id, code: 'R10' });
    const won = await post(`/simulate/dispute/${dispute.id}/resolve`, { result: 'won' });
    // Both dispute transactions carry the pinned clock's instant: find the returned funds by direction.
    await confirm(call, won.transactions.find((t: { direction: string }) => t.direction === 'cash_in').id);
    await closeWindow(call, windowDate);
    const transfer = await transferOfWindow(call, windowDate);
    expect(transfer).toMatchObject({ amount: 1000, direction: 'disbursement', transaction_count: 6 });

    const first = await call('GET', `/transfer/${transfer.id}/report?limit=4`);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toMatch(/^application\/json/);
    expect(Object.keys(first.body).sort()).toEqual(['totals', 'transactions', 'transfer']);
    expect(first.body.transfer).toEqual(transfer);
    expect(first.body.totals).toEqual({
      cash_in: { count: 3, amount: 2000 },
      cash_out: { count: 3, amount: 1000 },
      net: 1000,
      by_type: {
        intent: { cash_in: { count: 2, amount: 1500 }, cash_out: { count: 1, amount: 300 }, net: 1200 },
        refund: { cash_in: { count: 0, amount: 0 }, cash_out: { count: 1, amount: 200 }, net: -200 },
        dispute: { cash_in: { count: 1, amount: 500 }, cash_out: { count: 1, amount: 500 }, net: 0 },
      },
    });
    expect(first.body.transactions).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
    expect(first.body.transactions.data).toHaveLength(4);
    const second = await call('GET', `/transfer/${transfer.id}/report?limit=4&cursor=${first.body.transactions.next_cursor}`);
    expect(second.body.transactions).toMatchObject({ has_more: false, next_cursor: null });
    expect(second.body.totals).toEqual(first.body.totals);
    const members = [...first.body.transactions.data, ...second.body.transactions.data];
    expect(members).toHaveLength(6);
    expect(members.map((m: { id: string }) => m.id)).toEqual(
      (await call('GET', `/transfer/${transfer.id}?limit=100`)).body.transactions.data.map((m: { id: string }) => m.id),
    );
    expect((await call('GET', `/transfer/${transfer.id}/report?cursor=garbage`)).status).toBe(400);
    expect((await call('GET', `/transfer/${transfer.id}/report?format=xml`)).body.error).toMatchObject({
      code: 'validation_failed',
      details: [expect.objectContaining({ param: 'format' })],
    });

    const csv = await call('GET', `/transfer/${transfer.id}/report?format=csv`);
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('x-request-id')).toMatch(/^req_/);
    const rows = parseCsv(csv.text);
    expect(rows[0]).toEqual(CSV_HEADER);
    expect(rows).toHaveLength(7);
    // One row per member, oldest first, each exactly the member as the API shows it.
    const byId = new Map(members.map((m: Record<string, unknown>) => [m.id, m]));
    const oldestFirst = [...members].sort((a, b) =>
      a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1,
    );
    expect(rows.slice(1).map((r) => r[0])).toEqual(oldestFirst.map((m: { id: string }) => m.id));
    for (const row of rows.slice(1)) {
      const member = byId.get(row[0]) as Record<string, unknown>;
      expect(row).toEqual([
        member.id,
        member.direction,
        member.type,
        member.source_id ?? '',
        String(member.amount),
        member.created_at,
        member.date,
      ]);
    }
    const signedNet = rows.slice(1).reduce((sum, r) => sum + (r[1] === 'cash_in' ? 1 : -1) * Number(r[4]), 0);
    expect(signedNet).toBe(1000);

    // Another organization: 404 exactly like an unknown id, in either format.
    const other = await setup();
    for (const suffix of ['', '?format=csv']) {
      const foreign = await other.call('GET', `/transfer/${transfer.id}/report${suffix}`);
      expect(foreign.status).toBe(404);
      expect(foreign.body.error).toMatchObject({ code: 'not_found' });
      expect((await other.call('GET', `/transfer/transfer_doesNotExist0000000001/report${suffix}`)).body.error.code).toBe('not_found');
    }

    // Documented in OpenAPI with both media types.
    const document = (await call('GET', '/openapi.json')).body as {
      paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, unknown> }> }>>;
    };
    const documented = document.paths['/transfer/{id}/report']!.get!;
    expect(Object.keys(documented.responses['200']!.content).sort()).toEqual(['application/json', 'text/csv']);
    expectDocumented(document, [
      ['get', '/transfer/{id}/report', first],
      ['get', '/transfer/{id}/report', csv],
      ['get', '/transfer/{id}/report', await other.call('GET', `/transfer/${transfer.id}/report`)],
      ['get', '/transfer/{id}/report', await call('GET', `/transfer/${transfer.id}/report?cursor=garbage`)],
    ]);

    // The operator CLI reads the same report.
    const json = await admin(['--json', 'settlement', 'report', '--transfer', transfer.id]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ transfer: first.body.transfer, totals: first.body.totals });
    const cliCsv = await admin(['settlement', 'report', '--transfer', transfer.id, '--csv']);
    expect(cliCsv.code).toBe(0);
    expect(cliCsv.stdout).toBe(csv.text);
    const human = await admin(['settlement', 'report', '--transfer', transfer.id]);
    expect(human.stdout).toContain('net 1000');
    expect((await admin(['settlement', 'report', '--transfer', 'transfer_doesNotExist0000000001'])).code).toBe(1);
  });

  test('CSV is streamed from Postgres in chunks (no Content-Length) for a large transfer, every row accounted for; totals and row counts that disagree with the transfer are refused', async () => {
    const { org } = await setup();
    const account = await createAccount(stack.pool, org.organizationId, 'Statement');
    const windowDate = '2026-06-23';
    const n = 20_000;
    // Seeded in bulk: this tests the statement, not the lifecycle (no workflows: no lifecycle_queue rows for a drainer).
    await stack.pool.query(
      `INSERT INTO transactions (id, organization_id, account_id, direction, type, source_id, amount_cents, status, date, created_at, updated_at, workflow_started_at)
       SELECT 'txn_' || substr(md5(random()::text || g::text), 1, 24), $1, $2, CASE WHEN g % 3 = 0 THEN 'cash_out' ELSE 'cash_in' END, 'intent',
              NULL, g, 'pending', $3::date, '2026-06-23T12:00:00Z'::timestamptz + g * interval '1 millisecond', now(), now()
         FROM generate_series(1, $4::int) g`,
      [org.organizationId, account.id, windowDate, n],
    );
    // Fresh statistics, as autovacuum would have them: planned on stale ones, the ledger's statement triggers
    // over this many rows can take a minute.
    await stack.pool.query('ANALYZE transactions');
    await stack.pool.query(`UPDATE transactions SET status = 'available' WHERE account_id = $1 AND direction = 'cash_in'`, [account.id]);
    const built = await withTransaction(stack.pool, (tx) =>
      createWindowTransfer(tx, { accountId: account.id, windowDate, transferDate: '2026-06-24', now: new Date() }),
    );
    const row = built!.transfer;
    expect(row.transaction_count).toBe(n);

    const response = await fetch(`${stack.url}/transfer/${row.id}/report?format=csv`, {
      headers: { Authorization: `Bearer ${org.apiKey}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBeNull();
    expect(response.headers.get('transfer-encoding')).toBe('chunked');
    // Read as it arrives: the statement comes in many pieces.
    let chunks = 0;
    let text = '';
    const decoder = new TextDecoder();
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      chunks += 1;
      text += decoder.decode(chunk, { stream: true });
    }
    expect(chunks).toBeGreaterThan(1);
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toBe(CSV_HEADER.join(','));
    expect(lines).toHaveLength(n + 1);
    const net = lines.slice(1).reduce((sum, line) => {
      const cells = line.split(',');
      return sum + (cells[1] === 'cash_in' ? 1 : -1) * Number(cells[4]);
    }, 0);
    expect(net).toBe(row.direction === 'disbursement' ? row.amount_cents : -row.amount_cents);
    // Oldest first.
    expect(lines[1]!.split(',')[4]).toBe('1');
    expect(lines[n]!.split(',')[4]).toBe(String(n));

    // Where it is read, the report refuses a transfer its members disagree with (as a corrupted row would).
    const stored = (await getTransferRow(stack.pool, row.id))!;
    await expect(transferTotals(stack.pool, { ...stored, amount_cents: stored.amount_cents + 1 })).rejects.toThrow(
      TransferReportInvariantError,
    );
    await expect(transferTotals(stack.pool, { ...stored, transaction_count: n - 1 })).rejects.toThrow(TransferReportInvariantError);
    expect((await transferTotals(stack.pool, stored)).net).toBe(net);
    // A stream whose row count differs is never ended as if complete.
    const sink = new PassThrough();
    sink.resume();
    await expect(streamTransferCsv(stack.pool, { ...stored, transaction_count: n + 1 }, sink)).rejects.toThrow(
      TransferReportInvariantError,
    );
    expect(sink.writableEnded).toBe(false);
    // The pool is still healthy after the failed stream destroyed its connection.
    expect((await stack.pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
  }, 120_000);
});

describe('SPEC §15 operator CLI: calendar', () => {
  test('--json prints exactly { business_days, holidays: [{ date, name }] }; without it a listing; bad dates are usage errors (exit 2)', async () => {
    const json = await admin(['--json', 'calendar', '--from', '2027-06-28', '--to', '2027-07-06']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      business_days: ['2027-06-28', '2027-06-29', '2027-06-30', '2027-07-01', '2027-07-02', '2027-07-06'],
      holidays: [{ date: '2027-07-05', name: 'Independence Day (observed)' }],
    });
    const everyDay = await admin(['--json', 'calendar', '--from', '2027-07-03', '--to', '2027-07-05', '--calendar', 'every_day']);
    expect(JSON.parse(everyDay.stdout)).toEqual({ business_days: ['2027-07-03', '2027-07-04', '2027-07-05'], holidays: [] });
    const human = await admin(['calendar', '--from', '2026-11-25', '--to', '2026-11-27']);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('2026-11-26 Thu  Thanksgiving Day');
    expect(human.stdout).toContain('2 business day(s), 1 holiday(s)');
    for (const args of [
      ['--from', '2026-02-30', '--to', '2026-03-01'],
      ['--from', '2026-03-01', '--to', 'tomorrow'],
      ['--from', '2026-03-02', '--to', '2026-03-01'],
      ['--from', '2026-03-01'],
    ]) {
      const bad = await admin(['calendar', ...args]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/error: .+/);
    }
  });
});
