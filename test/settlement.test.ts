import { startLifecycleDrainer } from '../src/ledger/lifecycleDrainer';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { runAdmin } from '../src/cli/admin';
import { withTransaction } from '../src/db/pool';
import { randomString } from '../src/ids';
import { createLogger } from '../src/logger';
import { settlementDateOf, windowBounds } from '../src/easternDates';
import { createAccount } from '../src/orgs/repo';
import {
  accountSettlementWorkflowId,
  SETTLEMENT_PHASES,
  settlementProgressQuery,
  settlementTaskQueue,
} from '../src/settlement/workflowContract';
import { transferDateOf, windowCloseDateOf, windowDateOfScheduledTime } from '../src/settlement/dates';
import { settlementViolations } from '../src/settlement/invariants';
import { createWindowTransfer } from '../src/settlement/repo';
import { ensureSettlementSchedule, settlementScheduleId } from '../src/settlement/schedule';
import { apiClient, createTestOrg, createTestUser, eventually, startStack, testInfra, type Stack } from './support/harness';
import { statusOf } from './support/payments';

const REPO_ROOT = path.resolve(__dirname, '..');
const TRANSFER_SUMMARY_KEYS = ['amount', 'created_at', 'currency', 'date', 'direction', 'id'];
const TRANSFER_KEYS = [
  'account_id',
  'amount',
  'created_at',
  'currency',
  'date',
  'direction',
  'id',
  'settled_at',
  'status',
  'transaction_count',
  'window_date',
];

/** The API's clock: real time unless a test pins it to a moment (DST boundaries). */
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
const idemKey = () => `settle-${Date.now()}-${keyCounter++}`;
type Call = ReturnType<typeof apiClient>;

async function setup(target: Stack = stack) {
  const org = await createTestOrg(target.pool, { write: 100_000, read: 100_000 });
  const userId = await createTestUser(target.pool, org.organizationId);
  return { org, userId, call: apiClient(target.url, org.apiKey) };
}

/** Records a transaction through POST /intent (at `at` when given) and returns its id. */
async function record(
  call: Call,
  userId: string,
  direction: 'cash_in' | 'cash_out',
  amount: number,
  options: { at?: Date; accountId?: string } = {},
) {
  pinnedNow = options.at ?? null;
  try {
    const response = await call(
      'POST',
      '/intent',
      {
        direction,
        user_id: userId,
        amount,
        currency: 'USD',
        ...(options.accountId ? { account_id: options.accountId } : {}),
      },
      { 'X-Idempotency-Key': idemKey() },
    );
    expect(response.status).toBe(200);
    return response.body.transactions[0].id as string;
  } finally {
    pinnedNow = null;
  }
}

/** Confirms a cash_in now (sandbox) and waits until it is available. */
async function confirm(call: Call, transactionId: string) {
  expect((await call('POST', `/simulate/transaction/${transactionId}/confirm`, {}, { 'X-Idempotency-Key': idemKey() })).status).toBe(200);
  return statusOf(call, transactionId, 'available');
}

async function closeWindow(call: Call, body: { date?: string; account_id?: string }) {
  const response = await call('POST', '/simulate/settlement', body, { 'X-Idempotency-Key': idemKey() });
  expect(response.status).toBe(200);
  return response.body;
}

async function transfersOf(call: Call, query: string) {
  return (await call('GET', `/transfer?${query}`)).body.data as Array<Record<string, any>>;
}

/** Waits for the account's settlement workflow of the window to finish (transfer built and settled, members told). */
async function settlementDone(accountId: string, windowDate: string, target: Stack = stack) {
  return eventually(
    async () => {
      const handle = target.temporal.workflow.getHandle(accountSettlementWorkflowId(accountId, windowDate));
      const described = await handle.describe();
      return described.status.name === 'COMPLETED' ? handle.result() : undefined;
    },
    60_000,
    `settlement of ${accountId} window ${windowDate}`,
  );
}

async function workflowCompleted(transactionId: string, target: Stack = stack) {
  return eventually(
    async () => {
      const described = await target.temporal.workflow.getHandle(transactionId).describe();
      return described.status.name === 'COMPLETED' ? described : undefined;
    },
    60_000,
    `the lifecycle workflow of ${transactionId} to complete`,
  );
}

const today = () => settlementDateOf(new Date(), '00:00');

describe('SPEC §10 settlement windows and transfers', () => {
  test('more cash_in than cash_out nets to one disbursement; cash_out goes in_transfer with its TransferSummary, cash_in stays available with transfer null; settling settles all', async () => {
    const { org, userId, call } = await setup();
    const in1 = await record(call, userId, 'cash_in', 1000);
    const in2 = await record(call, userId, 'cash_in', 500);
    const out1 = await record(call, userId, 'cash_out', 300);
    await confirm(call, in1);
    await confirm(call, in2);
    const windowDate = today();

    const run = await closeWindow(call, {});
    expect(run).toMatchObject({ window_date: windowDate, account_id: null, status: 'started' });
    const [transfer] = await eventually(
      async () => {
        const found = await transfersOf(call, `window_date=${windowDate}`);
        return found.length > 0 ? found : undefined;
      },
      30_000,
      'the transfer',
    );
    expect(Object.keys(transfer!).sort()).toEqual(TRANSFER_KEYS);
    expect(transfer).toMatchObject({
      amount: 1200,
      currency: 'USD',
      direction: 'disbursement',
      status: 'pending',
      account_id: org.accountId,
      window_date: windowDate,
      date: transferDateOf(windowDate, '00:00'),
      transaction_count: 3,
      settled_at: null,
    });
    expect(transfer!.id).toMatch(/^transfer_[A-Za-z0-9]{16,}$/);
    const summary = {
      id: transfer!.id,
      amount: 1200,
      currency: 'USD',
      direction: 'disbursement',
      created_at: transfer!.created_at,
      date: transfer!.date,
    };

    const out = await statusOf(call, out1, 'in_transfer');
    expect(Object.keys(out.transfer).sort()).toEqual(TRANSFER_SUMMARY_KEYS);
    expect(out.transfer).toEqual(summary);
    expect((await call('GET', `/transaction/${in1}`)).body).toMatchObject({ status: 'available', transfer: null });
    expect((await call('GET', `/account/${org.accountId}`)).body.balances).toEqual({ pending: 0, available: 0, in_transfer: 1200 });

    // The transfer with its transactions, paged.
    const first = await call('GET', `/transfer/${transfer!.id}?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ ...transfer, transactions: { has_more: true } });
    const second = await call('GET', `/transfer/${transfer!.id}?limit=2&cursor=${first.body.transactions.next_cursor}`);
    expect(second.body.transactions.has_more).toBe(false);
    const members = [...first.body.transactions.data, ...second.body.transactions.data].map((t: { id: string }) => t.id);
    expect(members.sort()).toEqual([in1, in2, out1].sort());

    // The network settles it: the transfer and every member become settled, with the summary.
    expect((await call('POST', `/simulate/transfer/${transfer!.id}/settle`, {}, { 'X-Idempotency-Key': idemKey() })).status).toBe(200);
    const result = await settlementDone(org.accountId, windowDate);
    expect(result).toMatchObject({ transferId: transfer!.id, amountCents: 1200, direction: 'disbursement', transactionCount: 3 });
    const settled = (await call('GET', `/transfer/${transfer!.id}`)).body;
    expect(settled.status).toBe('settled');
    expect(settled.settled_at).toEqual(expect.any(String));
    for (const id of [in1, in2, out1]) {
      const txn = (await call('GET', `/transaction/${id}`)).body;
      expect(txn).toMatchObject({ status: 'settled', transfer: summary });
      // Every member's lifecycle workflow reached its end.
      await workflowCompleted(id);
      expect(await stack.temporal.workflow.getHandle(id).result()).toBe('settled');
    }
    expect((await call('GET', `/account/${org.accountId}`)).body.balances).toEqual({ pending: 0, available: 0, in_transfer: 0 });
    expect(await settlementViolations(stack.pool, { accountIds: [org.accountId], windowDate })).toEqual([]);
    const again = await call('POST', `/simulate/transfer/${transfer!.id}/settle`, {}, { 'X-Idempotency-Key': idemKey() });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('invalid_state');
  });

  test('more cash_out than cash_in nets to a collection; an exact 0 is a 0 disbursement that settles without the network; nothing eligible makes no transfer', async () => {
    const { org, userId, call } = await setup();
    const zero = await createAccount(stack.pool, org.organizationId, 'Zero');
    const idle = await createAccount(stack.pool, org.organizationId, 'Idle');
    const in1 = await record(call, userId, 'cash_in', 200, { accountId: org.accountId });
    await record(call, userId, 'cash_out', 500, { accountId: org.accountId });
    const in2 = await record(call, userId, 'cash_in', 400, { accountId: zero.id });
    await record(call, userId, 'cash_out', 150, { accountId: zero.id });
    await record(call, userId, 'cash_out', 250, { accountId: zero.id });
    await confirm(call, in1);
    await confirm(call, in2);
    const windowDate = today();
    await closeWindow(call, { date: windowDate });

    const collection = await eventually(
      async () => (await transfersOf(call, `account_id=${org.accountId}&window_date=${windowDate}`))[0],
      30_000,
    );
    expect(collection).toMatchObject({ amount: 300, direction: 'collection', status: 'pending', transaction_count: 2 });
    // A 0 transfer settles at once, though the network would take an hour here.
    const settledZero = await settlementDone(zero.id, windowDate);
    expect(settledZero).toMatchObject({ amountCents: 0, direction: 'disbursement', transactionCount: 3 });
    const [zeroTransfer] = await transfersOf(call, `account_id=${zero.id}`);
    expect(zeroTransfer).toMatchObject({ amount: 0, direction: 'disbursement', status: 'settled', transaction_count: 3 });
    const { rows } = await stack.pool.query(`SELECT submitted_at FROM transfers WHERE id = $1`, [zeroTransfer!.id]);
    expect(rows[0].submitted_at).toBeNull(); // never handed to the rail: no money moves
    expect(await transfersOf(call, `account_id=${idle.id}`)).toEqual([]);
    // Filters.
    expect((await transfersOf(call, 'direction=collection')).map((t) => t.id)).toEqual([collection.id]);
    expect((await transfersOf(call, 'status=settled')).map((t) => t.id)).toEqual([zeroTransfer!.id]);
    expect(await transfersOf(call, `date=${transferDateOf(windowDate, '00:00')}`)).toHaveLength(2);
    expect(await transfersOf(call, 'window_date=2000-01-01')).toEqual([]);
    const paged = await call('GET', '/transfer?limit=1');
    expect(paged.body).toMatchObject({ has_more: true, data: [expect.objectContaining({ id: expect.any(String) })] });
    const rest = await call('GET', `/transfer?limit=1&cursor=${paged.body.next_cursor}`);
    expect(rest.body.has_more).toBe(false);
    expect([paged.body.data[0].id, rest.body.data[0].id].sort()).toEqual([collection.id, zeroTransfer!.id].sort());
    // Another organization sees none of it.
    const other = await setup();
    expect((await other.call('GET', `/transfer/${collection.id}`)).status).toBe(404);
    expect(await transfersOf(other.call, '')).toEqual([]);
  });

  test('a cash_in still pending at the close waits for a later window', async () => {
    const { org, userId, call } = await setup();
    const pendingIn = await record(call, userId, 'cash_in', 700);
    const out = await record(call, userId, 'cash_out', 100);
    const windowDate = today();
    await closeWindow(call, { date: windowDate });
    await eventually(async () => (await transfersOf(call, `window_date=${windowDate}`))[0], 30_000);
    const [first] = await transfersOf(call, `window_date=${windowDate}`);
    expect(first).toMatchObject({ amount: 100, direction: 'collection', transaction_count: 1 });
    expect((await call('GET', `/transaction/${pendingIn}`)).body).toMatchObject({ status: 'pending', transfer: null });
    await statusOf(call, out, 'in_transfer');

    await confirm(call, pendingIn);
    const next = new Date(`${windowDate}T12:00:00Z`);
    next.setUTCDate(next.getUTCDate() + 1);
    const nextWindow = next.toISOString().slice(0, 10);
    await closeWindow(call, { date: nextWindow });
    const [second] = await eventually(async () => {
      const found = await transfersOf(call, `window_date=${nextWindow}`);
      return found.length ? found : undefined;
    }, 30_000);
    expect(second).toMatchObject({ amount: 700, direction: 'disbursement', transaction_count: 1, account_id: org.accountId });
    const members = (await call('GET', `/transfer/${second!.id}`)).body.transactions.data.map((t: { id: string }) => t.id);
    expect(members).toEqual([pendingIn]);
  });

  test.each([
    [
      'spring forward (2026-03-08, 23 h)',
      '2026-03-08',
      ['2026-03-08T04:59:59Z', '2026-03-08T05:00:00Z', '2026-03-09T03:59:59Z', '2026-03-09T04:00:00Z'],
    ],
    [
      'fall back (2026-11-01, 25 h)',
      '2026-11-01',
      ['2026-11-01T03:59:59Z', '2026-11-01T04:00:00Z', '2026-11-02T04:59:59Z', '2026-11-02T05:00:00Z'],
    ],
  ])(
    'window %s holds exactly its Eastern day: 23:59:59 before it and 00:00:00 after it belong to the neighbours',
    async (_name, day, instants) => {
      const { userId, call } = await setup();
      // Amounts name the instants: 1 = 23:59:59 the day before, 10 = 00:00:00, 100 = 23:59:59, 1000 = 00:00:00 the day after.
      const ids: string[] = [];
      for (const [index, at] of instants.entries()) ids.push(await record(call, userId, 'cash_out', 10 ** index, { at: new Date(at) }));
      const dates = await Promise.all(ids.map(async (id) => (await call('GET', `/transaction/${id}`)).body.date));
      const before = new Date(`${day}T12:00:00Z`);
      before.setUTCDate(before.getUTCDate() - 1);
      const after = new Date(`${day}T12:00:00Z`);
      after.setUTCDate(after.getUTCDate() + 1);
      const [dayBefore, dayAfter] = [before.toISOString().slice(0, 10), after.toISOString().slice(0, 10)];
      expect(dates).toEqual([dayBefore, day, day, dayAfter]);

      for (const window of [dayBefore, day, dayAfter]) {
        await closeWindow(call, { date: window });
        await eventually(async () => (await transfersOf(call, `window_date=${window}`))[0], 30_000, `window ${window}`);
      }
      const amounts = Object.fromEntries((await transfersOf(call, '')).map((t) => [t.window_date, t.amount]));
      expect(amounts).toEqual({ [dayBefore]: 1, [day]: 110, [dayAfter]: 1000 });
    },
  );

  test('SETTLEMENT_CUTOFF 17:00: window D is the 24 h ending 17:00 Eastern on D, its transfer is dated D, the schedule fires at 17:00 New York', async () => {
    let cutoffNow: Date | null = null;
    const cutoffStack = await startStack({
      env: { SETTLEMENT_CUTOFF: '17:00', SANDBOX_CONFIRM_SECONDS: '3600', SANDBOX_SETTLE_SECONDS: '3600' },
      clock: { now: () => cutoffNow ?? new Date() },
    });
    try {
      const { org, userId, call } = await setup(cutoffStack);
      const at = async (iso: string, amount: number) => {
        cutoffNow = new Date(iso);
        try {
          const response = await call(
            'POST',
            '/intent',
            { direction: 'cash_out', user_id: userId, amount, currency: 'USD' },
            { 'X-Idempotency-Key': idemKey() },
          );
          return response.body.transactions[0];
        } finally {
          cutoffNow = null;
        }
      };
      const early = await at('2026-06-09T21:00:00Z', 1); // 17:00:00 EDT on the 9th: opens window 06-10
      const late = await at('2026-06-10T20:59:59Z', 10); // 16:59:59 EDT on the 10th: still window 06-10
      const next = await at('2026-06-10T21:00:00Z', 100); // 17:00:00 EDT on the 10th: window 06-11
      expect([early.date, late.date, next.date]).toEqual(['2026-06-10', '2026-06-10', '2026-06-11']);
      await call('POST', '/simulate/settlement', { date: '2026-06-10' }, { 'X-Idempotency-Key': idemKey() });
      const [transfer] = await eventually(async () => {
        const found = (await call('GET', '/transfer?window_date=2026-06-10')).body.data;
        return found.length ? found : undefined;
      }, 30_000);
      expect(transfer).toMatchObject({
        amount: 11,
        direction: 'collection',
        window_date: '2026-06-10',
        date: '2026-06-10',
        transaction_count: 2,
      });

      const scheduleId = `test-cutoff-${randomString(8)}`;
      await ensureSettlementSchedule(cutoffStack.temporal, {
        taskQueue: cutoffStack.config.TEMPORAL_TASK_QUEUE,
        cutoff: cutoffStack.config.SETTLEMENT_CUTOFF,
        scheduleId,
        scope: { organizationId: org.organizationId },
      });
      const handle = cutoffStack.temporal.schedule.getHandle(scheduleId);
      try {
        const described = await handle.describe();
        expect(described.spec.timezone).toBe('America/New_York');
        expect(described.spec.calendars).toEqual([
          expect.objectContaining({ hour: [{ start: 17, end: 17, step: 1 }], minute: [{ start: 0, end: 0, step: 1 }] }),
        ]);
        // The next firing is 17:00 on the New York clock whatever the season.
        for (const next of described.info.nextActionTimes.slice(0, 3)) {
          expect(
            new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', hour: '2-digit', minute: '2-digit', hour12: false }).format(
              next,
            ),
          ).toBe('17:00');
        }
      } finally {
        await handle.delete();
      }
    } finally {
      await cutoffStack.stop();
    }
  });

  test('the window of a schedule firing comes from its nominal time: 00:00 closes the day before, a daytime cutoff its own day, both firings of a repeated hour the same day', () => {
    expect(windowDateOfScheduledTime(new Date('2026-03-09T04:00:00Z'), '00:00')).toBe('2026-03-08'); // 00:00 EDT
    expect(windowDateOfScheduledTime(new Date('2026-11-02T05:00:00Z'), '00:00')).toBe('2026-11-01'); // 00:00 EST
    expect(windowDateOfScheduledTime(new Date('2026-06-10T21:00:00Z'), '17:00')).toBe('2026-06-10');
    expect(windowDateOfScheduledTime(new Date('2026-11-01T05:30:00Z'), '01:30')).toBe('2026-11-01'); // 01:30 EDT
    expect(windowDateOfScheduledTime(new Date('2026-11-01T06:30:00Z'), '01:30')).toBe('2026-11-01'); // 01:30 EST, again
    expect(transferDateOf('2026-03-08', '00:00')).toBe('2026-03-09');
    expect(windowCloseDateOf('2026-03-08', '17:00')).toBe('2026-03-08');
    expect(transferDateOf('2026-03-08', '17:00')).toBe('2026-03-09'); // closes on a Sunday: dated Monday (SPEC §15)
  });

  test('the schedule is created idempotently (America/New_York, BUFFER_ALL, 7-day catch-up) and a backfilled firing closes the window of its nominal time, not of the clock', async () => {
    const { org, userId, call } = await setup();
    await record(call, userId, 'cash_out', 4200, { at: new Date('2026-03-08T15:00:00Z') });
    const scheduleId = `test-schedule-${randomString(8)}`;
    const options = {
      taskQueue: stack.config.TEMPORAL_TASK_QUEUE,
      cutoff: '00:00',
      scheduleId,
      scope: { organizationId: org.organizationId },
    };
    expect((await ensureSettlementSchedule(stack.temporal, options)).created).toBe(true);
    expect((await ensureSettlementSchedule(stack.temporal, options)).created).toBe(false);
    const handle = stack.temporal.schedule.getHandle(scheduleId);
    try {
      const described = await handle.describe();
      expect(described.spec.timezone).toBe('America/New_York');
      expect(described.policies.overlap).toBe('BUFFER_ALL');
      expect(described.policies.catchupWindow).toBe(7 * 24 * 3600 * 1000);
      // Settlement runs on its own task queue, so a window never waits behind a backlog of lifecycle tasks.
      expect(described.action).toMatchObject({
        type: 'startWorkflow',
        workflowType: 'settlementWindowWorkflow',
        taskQueue: settlementTaskQueue(stack.config.TEMPORAL_TASK_QUEUE),
      });
      // Midnight opening 2026-03-09 (EDT, the day after spring forward) closes 2026-03-08, months ago.
      await handle.backfill({ start: new Date('2026-03-09T03:59:00Z'), end: new Date('2026-03-09T04:01:00Z') });
      const [transfer] = await eventually(
        async () => {
          const found = await transfersOf(call, '');
          return found.length ? found : undefined;
        },
        30_000,
        'the backfilled window',
      );
      expect(transfer).toMatchObject({ window_date: '2026-03-08', date: '2026-03-09', amount: 4200, direction: 'collection' });
    } finally {
      await handle.delete();
    }
    expect(settlementScheduleId('ledger')).toBe('settlement-windows-ledger');
  });

  test('re-running a window (API, CLI, concurrent activities) creates no second transfer; the database refuses a second transfer, a second membership and a wrong net', async () => {
    const { org, userId, call } = await setup();
    const inId = await record(call, userId, 'cash_in', 900);
    const outId = await record(call, userId, 'cash_out', 400);
    await confirm(call, inId);
    const windowDate = today();
    // Concurrent closes of the same window and account, straight through the activity: one transfer.
    const built = await Promise.all(
      [1, 2, 3].map(() =>
        withTransaction(stack.pool, (tx) =>
          createWindowTransfer(tx, {
            accountId: org.accountId,
            windowDate,
            transferDate: transferDateOf(windowDate, '00:00'),
            now: new Date(),
          }),
        ),
      ),
    );
    expect(new Set(built.map((b) => b!.transfer.id)).size).toBe(1);
    expect(built.filter((b) => b!.created)).toHaveLength(1);
    const transferId = built[0]!.transfer.id;

    // The API and the CLI close it again: still that one transfer, and its workflow carries it to the end.
    await closeWindow(call, { date: windowDate, account_id: org.accountId });
    await closeWindow(call, { date: windowDate, account_id: org.accountId });
    const envKeys = ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_TASK_QUEUE'] as const;
    const saved = envKeys.map((key) => process.env[key]);
    const printed: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    Object.assign(process.env, {
      DATABASE_URL: testInfra().databaseUrl,
      TEMPORAL_ADDRESS: testInfra().temporalAddress,
      TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
    });
    process.stdout.write = (chunk: string) => {
      printed.push(String(chunk));
      return true;
    };
    let code: number;
    try {
      code = await runAdmin(['--json', 'settlement', 'run', '--date', windowDate, '--account', org.accountId]);
    } finally {
      process.stdout.write = write;
      envKeys.forEach((key, index) => {
        if (saved[index] === undefined) delete process.env[key];
        else process.env[key] = saved[index];
      });
    }
    expect(code).toBe(0);
    const answer = JSON.parse(printed.join('').trim().split('\n').pop()!);
    expect(answer).toMatchObject({
      window_date: windowDate,
      transfers: [expect.objectContaining({ id: transferId, amount: 500, direction: 'disbursement' })],
    });
    expect((await transfersOf(call, `window_date=${windowDate}`)).map((t) => t.id)).toEqual([transferId]);
    await statusOf(call, outId, 'in_transfer');

    const refused = async (sql: string, params: unknown[]) => {
      await expect(withTransaction(stack.pool, (tx) => tx.query(sql, params))).rejects.toThrow();
    };
    // One transfer per (account, window).
    await refused(
      `INSERT INTO transfers (id, organization_id, account_id, amount_cents, direction, status, window_date, date, transaction_count, created_at)
       VALUES ('transfer_second0000000000000001', $1, $2, 0, 'disbursement', 'pending', $3, $3, 0, now())`,
      [org.organizationId, org.accountId, windowDate],
    );
    // A member never moves to another transfer, nor joins a transfer that is already built.
    const other = await record(call, userId, 'cash_out', 50);
    await refused(`UPDATE transactions SET transfer_id = $2, status = 'in_transfer' WHERE id = $1`, [other, transferId]);
    await refused(`UPDATE transactions SET transfer_id = NULL WHERE id = $1`, [outId]);
    // A transfer whose amount is not the net of its members cannot commit.
    await refused(
      `WITH t AS (INSERT INTO transfers (id, organization_id, account_id, amount_cents, direction, status, window_date, date, transaction_count, created_at)
                  VALUES ('transfer_wrongNet000000000000001', $1, $2, 0, 'disbursement', 'pending', '2001-01-01', '2001-01-02', 0, now()) RETURNING id)
       SELECT 1`,
      [org.organizationId, org.accountId],
    );
    await expect(
      withTransaction(stack.pool, async (tx) => {
        await tx.query(
          `INSERT INTO transfers (id, organization_id, account_id, amount_cents, direction, status, window_date, date, transaction_count, created_at)
         VALUES ('transfer_wrongNet000000000000002', $1, $2, 0, 'disbursement', 'pending', '2001-01-01', '2001-01-02', 0, now())`,
          [org.organizationId, org.accountId],
        );
        await tx.query(`UPDATE transactions SET transfer_id = 'transfer_wrongNet000000000000002', status = 'in_transfer' WHERE id = $1`, [
          other,
        ]);
        await tx.query(
          `UPDATE transfers SET amount_cents = 49, direction = 'collection', transaction_count = 1 WHERE id = 'transfer_wrongNet000000000000002'`,
        );
      }),
    ).rejects.toThrow(/not the net/);
    // Amount and members are fixed once built; settled is final; transfers are never deleted.
    await refused(`UPDATE transfers SET amount_cents = amount_cents + 1 WHERE id = $1`, [transferId]);
    await refused(`DELETE FROM transfers WHERE id = $1`, [transferId]);
  });
});

describe('SPEC §10 settlement has a task queue of its own', () => {
  test('a window closes, settles and tells its members while no lifecycle task is served at all', async () => {
    // No worker on the lifecycle queue: every transaction workflow this stack starts waits unserved, the
    // worst lifecycle backlog there is. Only settlement's queue is polled.
    // The API's clock as the suite pins it: the members are recorded in a past window, whose transfer goes to
    // the rail at once (one closing today would wait for its business day: SPEC §15).
    const backlog = await startStack({
      worker: false,
      env: { SANDBOX_SETTLE_SECONDS: '0' },
      clock: { now: () => pinnedNow ?? new Date() },
    });
    const infra = testInfra();
    const connection = await NativeConnection.connect({ address: infra.temporalAddress });
    const settlementOnly = await Worker.create({
      connection,
      namespace: backlog.config.TEMPORAL_NAMESPACE,
      taskQueue: settlementTaskQueue(backlog.config.TEMPORAL_TASK_QUEUE),
      workflowBundle: { codePath: infra.workflowBundlePath },
      activities: createActivities({ config: backlog.config, pool: backlog.pool, log: createLogger('silent'), temporal: backlog.temporal }),
    });
    const running = settlementOnly.run();
    // The lifecycle queue's drainer (a worker's sidecar) alone: the workflows start, and wait unserved.
    const drainer = startLifecycleDrainer({
      pool: backlog.pool,
      client: backlog.temporal,
      taskQueue: backlog.config.TEMPORAL_TASK_QUEUE,
      log: createLogger('silent'),
    });
    try {
      const { org, userId, call } = await setup(backlog);
      const windowDate = '2026-06-09';
      const at = new Date(`${windowDate}T16:30:00Z`);
      const outIds = [await record(call, userId, 'cash_out', 250, { at }), await record(call, userId, 'cash_out', 150, { at })];
      await closeWindow(call, { date: windowDate, account_id: org.accountId });
      const result = await settlementDone(org.accountId, windowDate, backlog);
      expect(result).toMatchObject({ amountCents: 400, direction: 'collection', transactionCount: 2 });
      for (const id of outIds) {
        expect((await call('GET', `/transaction/${id}`)).body.status).toBe('settled');
        // The members' own workflows have not run a single task: the settlement never waited for them.
        const described = await eventually(async () => {
          const each = await backlog.temporal.workflow.getHandle(id).describe();
          return each.status.name === 'RUNNING' ? each : undefined;
        });
        expect(described.historyLength).toBeLessThanOrEqual(5);
      }
    } finally {
      await drainer.stop();
      settlementOnly.shutdown();
      await running;
      await connection.close();
      await backlog.stop();
    }
  });
});

describe('SPEC §10 settlement survives killed workers', () => {
  /** A worker PROCESS (ops/bin/worker.ts) on the given task queue; killed with SIGKILL, never asked to stop. */
  function spawnWorker(taskQueue: string, env: Record<string, string>): { child: ChildProcess; ready: Promise<void> } {
    const infra = testInfra();
    const child = spawn(path.join(REPO_ROOT, 'node_modules/.bin/tsx'), ['ops/bin/worker.ts'], {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        DATABASE_URL: infra.databaseUrl,
        TEMPORAL_ADDRESS: infra.temporalAddress,
        TEMPORAL_TASK_QUEUE: taskQueue,
        LEDGER_WORKFLOW_BUNDLE: infra.workflowBundlePath,
        LOG_LEVEL: 'info',
        // Other suites' events are not this worker's to take (it is killed mid-run).
        WEBHOOK_DISPATCHER: 'off',
        // Several workers run at once here: no metrics ports to collide on.
        TEMPORAL_METRICS_ADDRESS: 'off',
        WORKER_METRICS_PORT: '0',
        ...env,
      },
      // Piped, not inherited: a worker outliving the run must not hold jest's output open. Its own process
      // group: tsx runs the worker in a child node process, and SIGKILL must reach that one too.
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(`[worker ${child.pid}] ${chunk.toString()}`));
    const ready = new Promise<void>((resolve) => {
      let seen = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        seen = (seen + chunk.toString()).slice(-10_000);
        if (seen.includes('worker running')) resolve();
      });
      child.once('exit', () => resolve());
    });
    spawned.add(child);
    return { child, ready };
  }

  const spawned = new Set<ChildProcess>();
  afterAll(async () => {
    for (const child of spawned) await killed(child);
  });

  /** SIGKILL to the worker's process group (tsx and the node process running the worker), by its id. */
  async function killed(child: ChildProcess) {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
    await exited;
  }

  test('SIGKILLing the worker process at random points during a settlement and restarting it ends with every invariant intact', async () => {
    const taskQueue = `chaos-${randomString(10)}`;
    const workerEnv = { SANDBOX_CONFIRM_SECONDS: '0', SANDBOX_SETTLE_SECONDS: '2' };
    // Recorded in a past window whose settlement date has passed, so the network's 2 s settle starts at once
    // (a window closing today would be held until its business day: SPEC §15).
    const windowDate = '2026-06-09';
    let recordingAt: Date | null = null;
    const api = await startStack({
      worker: false,
      env: { TEMPORAL_TASK_QUEUE: taskQueue, ...workerEnv },
      clock: { now: () => recordingAt ?? new Date() },
    });
    let { child: worker, ready } = spawnWorker(taskQueue, workerEnv);
    await ready;
    // Seeded randomness, printed, so a failing schedule of kills can be replayed.
    const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 100_000);
    let state = seed;
    const random = () => {
      state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
      return state / 2_147_483_648;
    };
    process.stderr.write(`[chaos] seed ${seed}\n`);
    try {
      // The worker process puts the settlement schedule in place at start.
      const schedule = api.temporal.schedule.getHandle(settlementScheduleId(taskQueue));
      const described = await eventually(() => schedule.describe(), 60_000, 'the schedule of the spawned worker');
      expect(described.spec.timezone).toBe('America/New_York');
      expect(described.policies.overlap).toBe('BUFFER_ALL');

      const { org, userId, call } = await setup(api);
      const second = await createAccount(api.pool, org.organizationId, 'Chaos second');
      const ids: string[] = [];
      recordingAt = new Date(`${windowDate}T16:30:00Z`);
      for (let i = 0; i < 60; i += 1) {
        const direction = i % 3 === 2 ? 'cash_out' : 'cash_in';
        const response = await call(
          'POST',
          '/intent',
          {
            direction,
            user_id: userId,
            amount: 100 + i * 7,
            currency: 'USD',
            account_id: i % 2 ? second.id : org.accountId,
          },
          { 'X-Idempotency-Key': idemKey() },
        );
        ids.push(response.body.transactions[0].id);
      }
      recordingAt = null;
      // Every cash_in confirmed (the sandbox confirms at once here) before the window closes.
      await eventually(
        async () => {
          const { rows } = await api.pool.query(
            `SELECT count(*)::int AS n FROM transactions WHERE id = ANY($1) AND status = 'pending' AND direction = 'cash_in'`,
            [ids],
          );
          return rows[0].n === 0 ? true : undefined;
        },
        60_000,
        'cash_in confirmed',
      );
      expect((await call('POST', '/simulate/settlement', { date: windowDate }, { 'X-Idempotency-Key': idemKey() })).status).toBe(200);

      // Kill points spread over the settlement: each round picks a phase (building the transfers, telling
      // members, waiting for the network, settling, telling members again), waits until a settlement
      // workflow reaches it, waits a random moment more and kills the worker; the next worker takes over.
      const order: string[] = ['not started', ...SETTLEMENT_PHASES];
      // A query needs a running worker; the deadline keeps it from waiting for one.
      const phaseOf = (accountId: string) =>
        api.temporal
          .withDeadline(Date.now() + 2_000, () =>
            api.temporal.workflow.getHandle(accountSettlementWorkflowId(accountId, windowDate)).query(settlementProgressQuery),
          )
          .then((progress) => progress.phase as string)
          .catch(() => 'not started');
      let reached = 0;
      for (let round = 0; round < 4 && reached < order.length - 1; round += 1) {
        const target = Math.min(order.length - 2, reached + Math.floor(random() * 3));
        await eventually(
          async () => {
            const phases = await Promise.all([org.accountId, second.id].map(phaseOf));
            reached = Math.max(...phases.map((phase) => order.indexOf(phase)));
            return reached >= target ? true : undefined;
          },
          120_000,
          `a settlement reaching ${order[target]}`,
        );
        const delayMs = Math.floor(random() * 400);
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        process.stderr.write(`[chaos] round ${round}: SIGKILL ${delayMs} ms after reaching ${order[reached]}\n`);
        await killed(worker);
        ({ child: worker, ready } = spawnWorker(taskQueue, workerEnv));
        await ready;
      }

      for (const accountId of [org.accountId, second.id]) {
        await eventually(
          async () => {
            const described = await api.temporal.workflow.getHandle(accountSettlementWorkflowId(accountId, windowDate)).describe();
            return described.status.name === 'COMPLETED' ? true : undefined;
          },
          150_000,
          `settlement of ${accountId}`,
        );
      }
      for (const id of ids) {
        await eventually(
          async () => {
            const d = await api.temporal.workflow.getHandle(id).describe();
            return d.status.name === 'COMPLETED' ? true : undefined;
          },
          120_000,
          `lifecycle of ${id}`,
        );
      }
      expect(await settlementViolations(api.pool, { accountIds: [org.accountId, second.id], windowDate })).toEqual([]);
      // The window's close took each account's journal snapshot at the window's end, which the violations above
      // checked against the journal (every close snapshots every account, so other suites' closes add their own).
      const { rows: snapshots } = await api.pool.query(
        `SELECT DISTINCT account_id FROM journal_snapshots WHERE account_id = ANY($1) AND at = $2 ORDER BY account_id`,
        [[org.accountId, second.id], windowBounds(windowDate, api.config.SETTLEMENT_CUTOFF).end],
      );
      expect(snapshots).toHaveLength(2);
      const { rows } = await api.pool.query(`SELECT count(*)::int AS n FROM transactions WHERE id = ANY($1) AND status = 'settled'`, [ids]);
      expect(rows[0].n).toBe(ids.length);
      const transfers = await transfersOf(call, `window_date=${windowDate}`);
      expect(transfers).toHaveLength(2);
    } finally {
      await killed(worker);
      await api.temporal.schedule
        .getHandle(settlementScheduleId(taskQueue))
        .delete()
        .catch(() => undefined);
      await api.stop();
    }
  }, 400_000);
});
