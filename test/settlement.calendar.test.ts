import fs from 'node:fs';
import path from 'node:path';
import { accountSettlementWorkflowId } from '../src/settlement/client';
import { apiClient, createTestOrg, createTestUser, eventually, startStack, type Stack } from './support/harness';

const SETTLEMENT_HISTORIES_DIR = path.join(__dirname, 'histories', 'settlement');

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

/** Records a transaction through POST /intent at `at` and returns its id. */
async function record(call: Call, userId: string, direction: 'cash_in' | 'cash_out', amount: number, at: Date) {
  pinnedNow = at;
  try {
    const response = await call('POST', '/intent', { direction, user_id: userId, amount, currency: 'USD' }, { 'X-Idempotency-Key': idemKey() });
    expect(response.status).toBe(200);
    return response.body.transactions[0].id as string;
  } finally {
    pinnedNow = null;
  }
}

async function confirm(call: Call, transactionId: string) {
  expect((await call('POST', `/simulate/transaction/${transactionId}/confirm`, {}, { 'X-Idempotency-Key': idemKey() })).status).toBe(200);
  await eventually(async () => ((await call('GET', `/transaction/${transactionId}`)).body.status === 'available' ? true : undefined),
    30_000, `${transactionId} available`);
}

async function closeWindow(call: Call, date: string) {
  const response = await call('POST', '/simulate/settlement', { date }, { 'X-Idempotency-Key': idemKey() });
  expect(response.status).toBe(200);
}

async function transferOfWindow(call: Call, windowDate: string) {
  return eventually(async () => (await call('GET', `/transfer?window_date=${windowDate}`)).body.data[0] as Record<string, any> | undefined, // eslint-disable-line @typescript-eslint/no-explicit-any
    30_000, `the transfer of window ${windowDate}`);
}

async function settlementDone(accountId: string, windowDate: string) {
  return eventually(async () => {
    const handle = stack.temporal.workflow.getHandle(accountSettlementWorkflowId(accountId, windowDate));
    return (await handle.describe()).status.name === 'COMPLETED' ? handle.result() : undefined;
  }, 60_000, `settlement of ${accountId} window ${windowDate}`);
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
    expect(transfer).toMatchObject({ amount: 1800, direction: 'disbursement', date: '2026-06-10', window_date: '2026-06-09', status: 'pending' });
    // Handed to the rail without waiting for anything (its date is long past).
    await eventually(async () => {
      const { rows } = await stack.pool.query(`SELECT submitted_at FROM transfers WHERE id = $1`, [transfer.id]);
      return rows[0].submitted_at ? true : undefined;
    }, 30_000, 'the hand-off to the rail');
    expect((await call('POST', `/simulate/transfer/${transfer.id}/settle`, {}, { 'X-Idempotency-Key': idemKey() })).status).toBe(200);
    expect(await settlementDone(org.accountId, '2026-06-09')).toMatchObject({ transferId: transfer.id, amountCents: 1800, transactionCount: 2 });
    expect((await call('GET', `/transfer/${transfer.id}`)).body.status).toBe('settled');
    await saveHistoryOnce('account_settlement_signal_settled', accountSettlementWorkflowId(org.accountId, '2026-06-09'));
  });
});
