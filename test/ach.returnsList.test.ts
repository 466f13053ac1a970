/**
 * SPEC §25 as the API lists it: GET /ach/returns (each return and notification of change as applied, with what it
 * did) and GET /ach/exceptions (what was kept but not applied), cursor-paged like every list, each organization
 * seeing its own, and everyone the items that matched no organization. Real Postgres and Temporal; the bank's
 * files are written by moov-io/ach's achcli.
 */
import { randomString } from '../src/ids';
import { apiClient, createTestOrg, createTestUser, startStack, type Stack, type TestOrg } from './support/harness';
import { addBankAccount, idempotencyKey, statusOf } from './support/payments';
import { bankFile, fileAndSettle, importInbound } from './support/bankReturns';

type Call = ReturnType<typeof apiClient>;

const SANDBOX_ODFI = '011000015';
const number = () => `9${randomString(12).replace(/[^0-9]/g, '7')}`.slice(0, 12);

let stack: Stack;
let org: TestOrg;
let other: TestOrg;
let call: Call;
let otherCall: Call;
const sent: Record<
  'r01' | 'r10' | 'r03' | 'c01' | 'other',
  { transactionId: string; bankAccountId: string; userId: string; trace: string }
> = {} as never;
let unknownTrace: string;
let garbageName: string;

async function deposit(caller: Call, orgId: string, amount: number) {
  const userId = await createTestUser(stack.pool, orgId);
  const { intent, bankAccountId } = await addBankAccount(caller, userId, { account_number: number() }, amount);
  return { transactionId: intent.transactions[0].id as string, bankAccountId, userId, trace: '' };
}

async function traceOf(transactionId: string): Promise<string> {
  const { rows } = await stack.pool.query<{ trace_number: string }>('SELECT trace_number FROM ach_entries WHERE transaction_id = $1', [
    transactionId,
  ]);
  return rows[0]!.trace_number;
}

beforeAll(async () => {
  stack = await startStack({ env: { SANDBOX_CONFIRM_SECONDS: '3600', SANDBOX_SETTLE_SECONDS: '3600' } });
  org = await createTestOrg(stack.pool, { write: 5000, read: 5000 });
  other = await createTestOrg(stack.pool, { write: 5000, read: 5000 });
  call = apiClient(stack.url, org.apiKey);
  otherCall = apiClient(stack.url, other.apiKey);
  sent.r01 = await deposit(call, org.organizationId, 2_500);
  sent.r10 = await deposit(call, org.organizationId, 2_600);
  sent.r03 = await deposit(call, org.organizationId, 2_700);
  sent.c01 = await deposit(call, org.organizationId, 2_800);
  sent.other = await deposit(otherCall, other.organizationId, 2_900);
  expect(await fileAndSettle(stack.pool, stack.config)).not.toBeNull();
  for (const item of Object.values(sent)) {
    item.trace = await traceOf(item.transactionId);
    await statusOf(item === sent.other ? otherCall : call, item.transactionId, 'available');
  }
  for (const [item, code, caller] of [
    [sent.r01, 'R01', call],
    [sent.r10, 'R10', call],
    [sent.r03, 'R03', call],
    [sent.other, 'R01', otherCall],
  ] as const) {
    const returned = await caller('POST', '/simulate/ach/return', { transaction_id: item.transactionId, code }, idempotencyKey());
    expect(returned.status).toBe(200);
  }
  // The bank's own file: C01 corrects an account, C09 is not a change SPEC §25 applies (an exception of ours), and
  // a return of a trace number no entry has (an exception of no one's); then a file that does not parse.
  unknownTrace = `${SANDBOX_ODFI.slice(0, 8)}9${String(Date.now() % 1_000_000).padStart(6, '0')}`;
  const file = await bankFile(SANDBOX_ODFI, [
    { trace: unknownTrace, code: 'R01', amount: 100 },
    { trace: sent.c01.trace, code: 'C01', corrected: `55${number()}` },
    { trace: sent.r01.trace, code: 'C09', corrected: 'ID 1234' },
  ]);
  const ingested = await importInbound(stack.pool, stack.config, `RET-${randomString(6)}.ach`, file);
  expect(ingested.file).toMatchObject({ status: 'applied', returns_count: 0, changes_count: 1, exceptions_count: 2 });
  // A file header whose record size reads "ABC": the parser quotes it; a list every organization reads leaves it out.
  const header = `1${randomString(20).padEnd(33, '0')}ABC`.padEnd(94, '0');
  garbageName = `BAD-${randomString(6)}.ach`;
  const garbage = await importInbound(stack.pool, stack.config, garbageName, `${header}\n`);
  expect(garbage.file.status).toBe('rejected');
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

describe('SPEC §25 GET /ach/returns: each return and notification of change, as applied', () => {
  test('newest first, each with its code, title, entry and what it did', async () => {
    const list = await call('GET', '/ach/returns');
    expect(list.status).toBe(200);
    expect(list.body.has_more).toBe(false);
    expect(list.body.data.map((r: { code: string }) => r.code)).toEqual(['C01', 'R03', 'R10', 'R01']);
    const [c01, r03, r10, r01] = list.body.data;
    const dispute = await call('GET', `/dispute/${r01.dispute_id}`);
    expect(dispute.body).toMatchObject({ code: 'R01', status: 'lost', amount: 2_500 });
    expect(r01).toMatchObject({
      id: expect.stringMatching(/^achr_/),
      type: 'return',
      reason: 'Insufficient Funds',
      entry: {
        trace_number: sent.r01.trace,
        sec_code: 'PPD',
        transaction_code: 27,
        amount: 2_500,
        transaction_id: sent.r01.transactionId,
        transfer_id: null,
      },
      inbound_file: { source: 'sandbox' },
      applied: ['dispute_lost'],
      dispute_transaction_id: dispute.body.transactions[0].id,
      bank_account_id: sent.r01.bankAccountId,
      user_id: sent.r01.userId,
      exception_id: null,
    });
    expect(r10).toMatchObject({ applied: ['dispute_lost', 'user_suspended'], user_id: sent.r10.userId });
    expect((await call('GET', `/user/${sent.r10.userId}`)).body.status).toBe('suspended');
    expect(r03).toMatchObject({ applied: ['dispute_lost', 'bank_account_disabled'], bank_account_id: sent.r03.bankAccountId });
    expect(c01).toMatchObject({
      type: 'notification_of_change',
      reason: 'Incorrect DFI Account Number',
      applied: ['bank_account_corrected'],
      dispute_id: null,
      inbound_file: { source: 'cli', file_name: expect.stringMatching(/^RET-/) },
    });
  });

  test('a page at a time: the next page is asked with the last one’s cursor; another organization’s id is no cursor', async () => {
    const first = await call('GET', '/ach/returns?limit=3');
    expect(first.body).toMatchObject({ has_more: true, next_cursor: first.body.data[2].id });
    const second = await call('GET', `/ach/returns?limit=3&cursor=${first.body.next_cursor}`);
    expect(second.body).toMatchObject({ has_more: false, next_cursor: null });
    expect(second.body.data.map((r: { code: string }) => r.code)).toEqual(['R01']);
    const theirs = (await otherCall('GET', '/ach/returns')).body.data;
    expect(theirs.map((r: { entry: { transaction_id: string } }) => r.entry.transaction_id)).toEqual([sent.other.transactionId]);
    const foreign = await call('GET', `/ach/returns?cursor=${theirs[0].id}`);
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.details[0].param).toBe('cursor');
  });

  test('type filters returns from notifications of change; an unknown type is a 400 naming it', async () => {
    const changes = await call('GET', '/ach/returns?type=notification_of_change');
    expect(changes.body.data.map((r: { code: string }) => r.code)).toEqual(['C01']);
    const returns = await call('GET', '/ach/returns?type=return');
    expect(returns.body.data.map((r: { code: string }) => r.code)).toEqual(['R03', 'R10', 'R01']);
    const bad = await call('GET', '/ach/returns?type=refund');
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].param).toBe('type');
  });

  test("a returned payment's ACH entry says returned, with the code and its title", async () => {
    const entry = await call('GET', `/transaction/${sent.r01.transactionId}/ach`);
    expect(entry.body).toMatchObject({ status: 'returned', return: { code: 'R01', reason: 'Insufficient Funds' } });
    expect((await call('GET', `/transaction/${sent.c01.transactionId}/ach`)).body.return).toBeNull();
  });
});

describe('SPEC §25 GET /ach/exceptions: kept, never dropped', () => {
  test("an organization sees its own and the items that matched no one's entry; never another's", async () => {
    const mine = await call('GET', '/ach/exceptions?limit=100');
    expect(mine.status).toBe(200);
    const c09 = mine.body.data.find((x: { code: string | null }) => x.code === 'C09');
    expect(c09).toMatchObject({
      kind: 'not_applicable',
      matched: true,
      trace_number: sent.r01.trace,
      transaction_id: sent.r01.transactionId,
      reason: 'Incorrect Individual Identification Number',
      inbound_file: { status: 'applied', line: expect.any(Number) },
    });
    const unknown = mine.body.data.find((x: { trace_number: string | null }) => x.trace_number === unknownTrace);
    expect(unknown).toMatchObject({ kind: 'unknown_trace', matched: false, code: 'R01', transaction_id: null, transfer_id: null });
    const unparseable = mine.body.data.find(
      (x: { kind: string; inbound_file: { file_name: string } }) =>
        x.kind === 'unparseable_file' && x.inbound_file.file_name === garbageName,
    );
    expect(unparseable.detail).toContain('record size');
    expect(unparseable.detail).toContain('(a value left out)');
    expect(unparseable.detail).not.toContain('ABC');
    expect(unparseable).toMatchObject({
      matched: false,
      code: null,
      inbound_file: { status: 'rejected', file_name: expect.stringMatching(/^BAD-/) },
    });
    const theirs = (await otherCall('GET', '/ach/exceptions?limit=100')).body.data as { id: string }[];
    expect(theirs.map((x) => x.id)).toEqual(expect.arrayContaining([unknown.id, unparseable.id]));
    expect(theirs.map((x) => x.id)).not.toContain(c09.id);
  });

  test('kind filters; the cursor may be an item of no organization; a bad kind is a 400', async () => {
    const unknown = await otherCall('GET', '/ach/exceptions?kind=unknown_trace&limit=100');
    expect(unknown.body.data.length).toBeGreaterThan(0);
    expect(unknown.body.data.every((x: { kind: string }) => x.kind === 'unknown_trace')).toBe(true);
    const first = await otherCall('GET', '/ach/exceptions?limit=1');
    expect(first.body.data[0].matched).toBe(false);
    const next = await otherCall('GET', `/ach/exceptions?limit=100&cursor=${first.body.data[0].id}`);
    expect(next.status).toBe(200);
    expect(next.body.data.map((x: { id: string }) => x.id)).not.toContain(first.body.data[0].id);
    const bad = await call('GET', '/ach/exceptions?kind=lost');
    expect(bad.status).toBe(400);
  });
});

describe('SPEC §25 GET /ach/return_rates over the same returns', () => {
  test('four debits, one unauthorized and one administrative return: each rate beside its threshold', async () => {
    const rates = await call('GET', '/ach/return_rates');
    expect(rates.body).toEqual({
      window_days: 60,
      debits: 4,
      unauthorized: { count: 1, rate: 0.25, threshold: 0.005 },
      administrative: { count: 1, rate: 0.25, threshold: 0.03 },
      overall: { count: 3, rate: 0.75, threshold: 0.15 },
    });
  });
});
