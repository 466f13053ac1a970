import fs from 'node:fs';
import path from 'node:path';
import { runAdmin } from '../src/cli/admin';
import { withTransaction } from '../src/db/pool';
import { createLedgerActivities } from '../activities/ledger';
import { createLogger } from '../src/logger';
import { settlementDateOf } from '../src/easternDates';
import fc from 'fast-check';
import {
  getAccount,
  intentPartiesFromOpening,
  intentPartiesOpeningSql,
  lookupIntentParties,
  recomputeBalances,
  type IntentPartiesRequest,
} from '../src/ledger/accounts';
import { applyTransition, insertTransaction, statusHistory } from '../src/ledger/transactions';
import { awaitingWorkflowSince } from '../src/ledger/lifecycleQueue';
import { createAccount } from '../src/orgs/repo';
import { createWindowTransfer, settleTransfer } from '../src/settlement/repo';
import {
  AccountIdKey,
  OrganizationIdKey,
  SettlementDateKey,
  TransactionDirectionKey,
  TransactionStatusKey,
} from '../src/platform/searchAttributes';
import { transactionStatusQuery, transferAssignedSignal, transferSettledSignal } from '../src/ledger/workflowContract';
import type { WorkflowHandle } from '@temporalio/client';
import { sweepLifecycles } from '../src/ledger/lifecycle';
import { apiClient, createTestOrg, createTestUser, eventually, startStack, type Stack, type TestOrg } from './support/harness';
import { addBankAccount, statusOf, workflowRunning } from './support/payments';
import { expectDocumented } from './support/openapi';

const HISTORIES_DIR = path.join(__dirname, 'histories');

/** A task queue no drainer serves: rows queued for it stay queued (tests of the database alone). */
const UNDRAINED_TASK_QUEUE = 'test-undrained';
let stack: Stack;
beforeAll(async () => {
  // Confirmation only on demand here, so every test decides when funds arrive.
  stack = await startStack({ env: { SANDBOX_CONFIRM_SECONDS: '3600' } });
});
afterAll(async () => {
  await stack.stop();
});

let keyCounter = 0;
const idemKey = () => `test-${Date.now()}-${keyCounter++}`;

async function setup(options: { userStatus?: 'created' | 'enabled' | 'suspended' | 'disabled' } = {}) {
  const org = await createTestOrg(stack.pool);
  const userId = await createTestUser(stack.pool, org.organizationId, options.userStatus ?? 'enabled');
  return { org, userId, call: apiClient(stack.url, org.apiKey) };
}

async function createIntent(org: TestOrg, body: Record<string, unknown>, key = idemKey()) {
  return apiClient(stack.url, org.apiKey)('POST', '/intent', { currency: 'USD', ...body }, { 'X-Idempotency-Key': key });
}

async function saveHistoryOnce(name: string, workflowId: string) {
  const file = path.join(HISTORIES_DIR, `${name}.json`);
  // Committed histories are the determinism guard's evidence: rewrite them only when asked to.
  if (fs.existsSync(file) && process.env.RECORD_HISTORIES !== '1') return;
  const history = await stack.temporal.workflow.getHandle(workflowId).fetchHistory();
  fs.mkdirSync(HISTORIES_DIR, { recursive: true });
  // The protobuf message's own JSON (proto3 JSON: camelCase, enums by name, int64 as strings) reads back with historyFromJSON.
  fs.writeFileSync(file, `${JSON.stringify(history, null, 1)}\n`);
}

/** What the settlement feature does to a window (src/settlement/repo.ts): batch its transactions into one transfer. */
async function batchWindow(accountId: string, windowDate: string): Promise<string> {
  const built = await withTransaction(stack.pool, (tx) =>
    createWindowTransfer(tx, { accountId, windowDate, transferDate: windowDate, now: new Date() }),
  );
  return built!.transfer.id;
}

/** ... and the network settling that transfer. */
async function settleBatch(transferId: string): Promise<void> {
  await withTransaction(stack.pool, (tx) => settleTransfer(tx, transferId, new Date()));
}

/** What a lifecycle's history holds: activity tasks, local activity markers, and whether LIFECYCLE_V2 ran. */
function lifecycleShape(history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>>) {
  const events = history.events ?? [];
  const markers = events.map((event) => event.markerRecordedEventAttributes?.markerName).filter((name) => name);
  return {
    activityTasks: events.filter((event) => event.activityTaskScheduledEventAttributes).length,
    localActivityMarkers: markers.filter((name) => name === 'core_local_activity').length,
    patched: markers.includes('core_patch'),
  };
}

const TRANSACTION_KEYS = [
  'account_id',
  'amount',
  'created_at',
  'currency',
  'date',
  'direction',
  'id',
  'source_id',
  'status',
  'transfer',
  'type',
];

describe('SPEC §7 accounts', () => {
  test('GET /account lists the settlement account with pending, available and in_transfer balances in cents', async () => {
    const { org, userId, call } = await setup();
    const empty = await call('GET', '/account');
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({
      data: [
        expect.objectContaining({
          id: org.accountId,
          type: 'settlement',
          currency: 'USD',
          balances: { pending: 0, available: 0, in_transfer: 0 },
        }),
      ],
      has_more: false,
      next_cursor: null,
    });
    await createIntent(org, { direction: 'cash_in', user_id: userId, amount: 1000 });
    await createIntent(org, { direction: 'cash_out', user_id: userId, amount: 300 });
    const account = await call('GET', `/account/${org.accountId}`);
    expect(account.body.balances).toEqual({ pending: 1000, available: -300, in_transfer: 0 });
  });

  test('account_id is optional with one account, required (400 account_required) with several, unknown → 400 resource_missing', async () => {
    const { org, userId } = await setup();
    const one = await createIntent(org, { direction: 'cash_in', user_id: userId, amount: 100 });
    expect(one.status).toBe(200);
    expect(one.body.account_id).toBe(org.accountId);
    const second = await createAccount(stack.pool, org.organizationId, 'Second');
    const several = await createIntent(org, { direction: 'cash_in', user_id: userId, amount: 100 });
    expect(several.status).toBe(400);
    expect(several.body.error).toMatchObject({ code: 'account_required', param: 'account_id' });
    const named = await createIntent(org, { direction: 'cash_in', user_id: userId, amount: 100, account_id: second.id });
    expect(named.body.account_id).toBe(second.id);
    const unknown = await createIntent(org, {
      direction: 'cash_in',
      user_id: userId,
      amount: 100,
      account_id: 'account_doesNotExist123456789',
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ code: 'resource_missing', param: 'account_id' });
  });

  test("another organization's account is 404", async () => {
    const a = await setup();
    const b = await setup();
    const response = await a.call('GET', `/account/${b.org.accountId}`);
    expect(response.status).toBe(404);
  });
});

describe('SPEC §7 balance invariant', () => {
  test('after any sequence of recordings, confirmations, batchings and settlements the maintained balances equal the formula', async () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant('record' as const),
        direction: fc.constantFrom('cash_in' as const, 'cash_out' as const),
        amount: fc.integer({ min: 0, max: 100_000 }),
      }),
      fc.record({ kind: fc.constantFrom('confirm' as const, 'batch' as const, 'settle' as const), pick: fc.nat() }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
        const org = await createTestOrg(stack.pool);
        const ids: Array<{ id: string; direction: 'cash_in' | 'cash_out' }> = [];
        const transfers: string[] = [];
        let windows = 0;
        for (const step of ops) {
          await withTransaction(stack.pool, async (tx) => {
            const now = new Date();
            if (step.kind === 'record') {
              const row = await insertTransaction(tx, {
                organizationId: org.organizationId,
                accountId: org.accountId,
                direction: step.direction,
                type: 'intent',
                sourceId: null,
                amountCents: step.amount,
                date: settlementDateOf(now, '00:00'),
                createdAt: now,
                // No workflow here: this property is about the database alone, and no drainer serves this queue.
                taskQueue: UNDRAINED_TASK_QUEUE,
              });
              ids.push({ id: row.id, direction: step.direction });
              return;
            }
            if (step.kind === 'confirm') {
              const target = ids[step.pick % Math.max(1, ids.length)];
              if (!target || target.direction !== 'cash_in') return;
              const { rows } = await tx.query(`SELECT status FROM transactions WHERE id = $1`, [target.id]);
              if (rows[0].status === 'pending') await applyTransition(tx, { transactionId: target.id, toStatus: 'available', now });
            } else if (step.kind === 'batch') {
              // What settlement does (src/settlement/repo.ts): a window's eligible transactions into one transfer.
              windows += 1;
              const windowDate = new Date(Date.parse(`${settlementDateOf(now, '00:00')}T12:00:00Z`) + windows * 86_400_000)
                .toISOString()
                .slice(0, 10);
              const built = await createWindowTransfer(tx, { accountId: org.accountId, windowDate, transferDate: windowDate, now });
              if (built) transfers.push(built.transfer.id);
            } else {
              const transferId = transfers[step.pick % Math.max(1, transfers.length)];
              if (transferId) await settleTransfer(tx, transferId, now);
            }
          });
        }
        const maintained = (await getAccount(stack.pool, org.organizationId, org.accountId))!.balances;
        expect(maintained).toEqual(await recomputeBalances(stack.pool, org.accountId));
      }),
      { numRuns: 25 },
    );
  });
});

describe('SPEC §8 intents and transactions', () => {
  test("POST /intent's opening read answers what the lookup answers, and only for the request it was made for", async () => {
    const { org, userId, call } = await setup();
    const { bankAccountId } = await addBankAccount(call, userId, { account_number: `9${Date.now()}`.slice(0, 12) });
    const bodies: IntentPartiesRequest[] = [
      { user_id: userId },
      { user_id: userId, account_id: org.accountId, bank_account_id: bankAccountId },
      { user_id: userId, bank_account_id: null },
      { user_id: 'user_nobody', account_id: "acct_it's_not", bank_account_id: 'ba_nope' },
    ];
    for (const body of bodies) {
      const sql = intentPartiesOpeningSql(body, org.organizationId);
      expect(sql).not.toBeNull();
      const opening = await stack.pool.query(sql!);
      expect(intentPartiesFromOpening(opening, body)).toEqual(await lookupIntentParties(stack.pool, org.organizationId, body));
      // Read for another request (the default bank account, not none): not used.
      expect(
        intentPartiesFromOpening(opening, { ...body, bank_account_id: body.bank_account_id === undefined ? null : undefined }),
      ).toBeNull();
    }
    // A body that is not an intent's shape reads nothing; validation refuses it later.
    for (const raw of [null, [], 'x', { user_id: 7 }, { user_id: 'u', account_id: 1 }, { user_id: 'u'.repeat(256) }])
      expect(intentPartiesOpeningSql(raw, org.organizationId)).toBeNull();
  });

  test('an approved intent records one pending Transaction with exactly the seed fields and its Eastern date', async () => {
    const { org, userId, call } = await setup();
    const before = new Date();
    const response = await createIntent(org, { direction: 'cash_in', user_id: userId, amount: 1250 }, 'key-approved');
    expect(response.status).toBe(200);
    const intent = response.body;
    expect(intent).toMatchObject({
      idempotency_key: 'key-approved',
      direction: 'cash_in',
      user_id: userId,
      account_id: org.accountId,
      amount: 1250,
      currency: 'USD',
      status: 'approved',
      decline_category: null,
    });
    expect(intent.id).toMatch(/^intent_sandbox_[A-Za-z0-9]{16,}$/);
    expect(intent.transactions).toHaveLength(1);
    const txn = await call('GET', `/transaction/${intent.transactions[0].id}`);
    expect(txn.status).toBe(200);
    expect(Object.keys(txn.body).sort()).toEqual(TRANSACTION_KEYS);
    expect(txn.body).toMatchObject({
      amount: 1250,
      direction: 'cash_in',
      currency: 'USD',
      status: 'pending',
      type: 'intent',
      source_id: intent.id,
      account_id: org.accountId,
      transfer: null,
    });
    expect(txn.body.id).toMatch(/^txn_/);
    expect(txn.body.date).toBe(settlementDateOf(new Date(txn.body.created_at), '00:00'));
    expect(new Date(txn.body.created_at).getTime()).toBeGreaterThanOrEqual(before.getTime() - 1000);
    expect((await call('GET', `/intent/${intent.id}`)).body).toEqual(intent);
  });

  test('the transaction date follows SETTLEMENT_CUTOFF: with 17:00, a payment at 18:00 Eastern on the 5th is dated the 6th', async () => {
    const fixed = await startStack({
      env: { SETTLEMENT_CUTOFF: '17:00' },
      clock: { now: () => new Date('2026-01-05T23:00:00Z') },
    });
    try {
      const org = await createTestOrg(fixed.pool);
      const userId = await createTestUser(fixed.pool, org.organizationId);
      const call = apiClient(fixed.url, org.apiKey);
      const intent = await call(
        'POST',
        '/intent',
        { direction: 'cash_in', user_id: userId, amount: 10, currency: 'USD' },
        { 'X-Idempotency-Key': idemKey() },
      );
      expect(intent.body.transactions[0]).toMatchObject({ created_at: '2026-01-05T23:00:00.000Z', date: '2026-01-06' });
      const described = await eventually(async () => await fixed.temporal.workflow.getHandle(intent.body.transactions[0].id).describe());
      expect(described.typedSearchAttributes.get(SettlementDateKey)).toBe('2026-01-06');
    } finally {
      await fixed.stop();
    }
  });

  test('POST /intent requires X-Idempotency-Key and replays the first answer for the same key', async () => {
    const { org, userId, call } = await setup();
    const body = { direction: 'cash_in', user_id: userId, amount: 500, currency: 'USD' };
    const missing = await call('POST', '/intent', body);
    expect(missing.status).toBe(400);
    expect(missing.body.error.details[0].param).toBe('X-Idempotency-Key');
    const first = await createIntent(org, body, 'same-key');
    const again = await createIntent(org, body, 'same-key');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const list = await call('GET', '/transaction');
    expect(list.body.data).toHaveLength(1);
  });

  test('a user who is not enabled gets a declined intent (user_not_enabled) and no transaction; an unknown user is 400', async () => {
    const { org, userId, call } = await setup({ userStatus: 'suspended' });
    const declined = await createIntent(org, { direction: 'cash_out', user_id: userId, amount: 500 });
    expect(declined.status).toBe(200);
    expect(declined.body).toMatchObject({ status: 'declined', decline_category: 'user_not_enabled', transactions: [] });
    expect((await call('GET', '/transaction')).body.data).toEqual([]);
    const unknown = await createIntent(org, { direction: 'cash_out', user_id: 'user_doesNotExist1234567890', amount: 500 });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ code: 'resource_missing', param: 'user_id' });
    const { rows } = await stack.pool.query(`SELECT type FROM events WHERE organization_id = $1`, [org.organizationId]);
    expect(rows.map((row) => row.type)).toEqual(['intent.declined']);
  });

  test('validation: amount is an integer ≥ 1, currency USD, manual approval only for cash_out', async () => {
    const { org, userId } = await setup();
    for (const body of [
      { direction: 'cash_in', user_id: userId, amount: 0 },
      { direction: 'cash_in', user_id: userId, amount: 1.5 },
      { direction: 'cash_in', user_id: userId, amount: 100, currency: 'EUR' },
      { direction: 'cash_in', user_id: userId, amount: 100, approval_mode: 'manual' },
      { direction: 'sideways', user_id: userId, amount: 100 },
    ]) {
      const response = await createIntent(org, body);
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe('validation_failed');
    }
  });

  test('manual approval: a cash_out waits pending, approve records its transaction, cancel and re-approve are refused', async () => {
    const { org, userId, call } = await setup();
    const pending = await createIntent(org, { direction: 'cash_out', user_id: userId, amount: 700, approval_mode: 'manual' });
    expect(pending.body).toMatchObject({ status: 'pending', transactions: [], approval_mode: 'manual' });
    const approved = await call('POST', `/intent/${pending.body.id}/approve`);
    expect(approved.status).toBe(200);
    expect(approved.body.status).toBe('approved');
    expect(approved.body.transactions).toEqual([expect.objectContaining({ status: 'pending', direction: 'cash_out', amount: 700 })]);
    const again = await call('POST', `/intent/${pending.body.id}/approve`, undefined, { 'X-Idempotency-Key': idemKey() });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('invalid_state');
    const other = await createIntent(org, { direction: 'cash_out', user_id: userId, amount: 700, approval_mode: 'manual' });
    const canceled = await call('POST', `/intent/${other.body.id}/cancel`);
    expect(canceled.body).toMatchObject({ status: 'canceled', transactions: [] });
    expect((await call('POST', `/intent/${other.body.id}/approve`)).status).toBe(409);
    await eventually(async () => {
      const description = await stack.temporal.workflow.getHandle(approved.body.transactions[0].id).describe();
      return description.status.name === 'RUNNING' ? true : undefined;
    });
  });

  test('GET /transaction filters by status, direction, type, account_id, date, created_at range and pages without repeats', async () => {
    const { org, userId, call } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 7; i += 1) {
      const response = await createIntent(org, { direction: i % 2 ? 'cash_out' : 'cash_in', user_id: userId, amount: 100 + i });
      ids.push(response.body.transactions[0].id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: Array<{ id: string }>; next_cursor: string | null; has_more: boolean } } = await call(
        'GET',
        `/transaction?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      );
      seen.push(...page.body.data.map((t) => t.id));
      // A row added while paging lands on top and never shifts the pages after the cursor.
      if (seen.length === 3) await createIntent(org, { direction: 'cash_in', user_id: userId, amount: 1 });
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    const outs = await call('GET', '/transaction?direction=cash_out&status=pending&type=intent');
    expect(outs.body.data.map((t: { amount: number }) => t.amount).sort()).toEqual([101, 103, 105]);
    const today = (await call('GET', `/transaction/${ids[0]}`)).body.date;
    expect((await call('GET', `/transaction?date=${today}&account_id=${org.accountId}&limit=100`)).body.data).toHaveLength(8);
    expect((await call('GET', '/transaction?date=1999-01-01')).body.data).toEqual([]);
    const first = (await call('GET', `/transaction/${ids[0]}`)).body.created_at;
    const lt = await call('GET', `/transaction?created_at.lt=${encodeURIComponent(first)}`);
    expect(lt.body.data).toEqual([]);
    const gte = await call('GET', `/transaction?created_at.gte=${encodeURIComponent(first)}&limit=100`);
    expect(gte.body.data).toHaveLength(8);
    expect((await call('GET', '/transaction?transfer_id=transfer_none1234567890123456')).body.data).toEqual([]);
    expect((await call('GET', '/transaction?cursor=garbage')).status).toBe(400);
    expect((await call('GET', '/transaction?status=bogus')).status).toBe(400);
    const intents = await call('GET', '/intent?limit=2');
    expect(intents.body.data).toHaveLength(2);
    expect(intents.body.has_more).toBe(true);
  });

  test("another organization's intent and transaction are 404", async () => {
    const a = await setup();
    const b = await setup();
    const intent = await createIntent(a.org, { direction: 'cash_in', user_id: a.userId, amount: 100 });
    expect((await b.call('GET', `/intent/${intent.body.id}`)).status).toBe(404);
    expect((await b.call('GET', `/transaction/${intent.body.transactions[0].id}`)).status).toBe(404);
    expect((await b.call('POST', `/simulate/transaction/${intent.body.transactions[0].id}/confirm`)).status).toBe(404);
  });
});

describe('SPEC §9 transaction lifecycle', () => {
  test('cash_in: workflow id = transaction id with search attributes; confirm → available → settled with history, balances and events', async () => {
    const { org, userId, call } = await setup();
    const intent = await createIntent(org, { direction: 'cash_in', user_id: userId, amount: 2000 });
    const txnId = intent.body.transactions[0].id;
    const handle = stack.temporal.workflow.getHandle(txnId);
    const described = await eventually(async () => {
      const d = await handle.describe();
      return d.typedSearchAttributes.get(TransactionStatusKey) === 'pending' ? d : undefined;
    });
    expect(described.typedSearchAttributes.get(OrganizationIdKey)).toBe(org.organizationId);
    expect(described.typedSearchAttributes.get(AccountIdKey)).toBe(org.accountId);
    expect(described.typedSearchAttributes.get(TransactionDirectionKey)).toBe('cash_in');
    expect(described.typedSearchAttributes.get(SettlementDateKey)).toBe(intent.body.transactions[0].date);

    // The workflow has run its first step (submitPayment's marker) before the confirmation, so its history below is
    // the confirmed path's whatever the timing: the confirmation's step finds the row available and writes nothing.
    await eventually(async () => (lifecycleShape(await handle.fetchHistory()).localActivityMarkers === 1 ? true : undefined));
    // Confirmed at once: the answer and the ledger say available; the workflow, told by the queued signal, too.
    const confirm = await call('POST', `/simulate/transaction/${txnId}/confirm`);
    expect([confirm.status, confirm.body.status]).toEqual([200, 'available']);
    expect((await call('GET', `/transaction/${txnId}`)).body.status).toBe('available');
    await eventually(async () => ((await handle.query(transactionStatusQuery)) === 'available' ? true : undefined));
    expect((await call('GET', `/account/${org.accountId}`)).body.balances).toEqual({ pending: 0, available: 2000, in_transfer: 0 });
    expect((await call('POST', `/simulate/transaction/${txnId}/confirm`, undefined, { 'X-Idempotency-Key': idemKey() })).status).toBe(409);

    // What the settlement feature does: batch the cash_in (transfer_id, still available), then settle.
    const transferId = await batchWindow(org.accountId, intent.body.transactions[0].date);
    expect((await call('GET', `/account/${org.accountId}`)).body.balances).toEqual({ pending: 0, available: 0, in_transfer: 2000 });
    expect((await call('GET', `/transaction/${txnId}`)).body).toMatchObject({ status: 'available', transfer: null });
    await settleBatch(transferId);
    await handle.signal(transferSettledSignal, { transferId });
    expect(await handle.result()).toBe('settled');
    await statusOf(call, txnId, 'settled');
    expect((await call('GET', `/account/${org.accountId}`)).body.balances).toEqual({ pending: 0, available: 0, in_transfer: 0 });
    expect((await handle.describe()).typedSearchAttributes.get(TransactionStatusKey)).toBe('settled');
    expect((await statusHistory(stack.pool, txnId)).map((h) => [h.from_status, h.to_status])).toEqual([
      [null, 'pending'],
      ['pending', 'available'],
      ['available', 'settled'],
    ]);
    const { rows } = await stack.pool.query(
      `SELECT type, data FROM events WHERE organization_id = $1 AND type NOT LIKE 'transfer.%' ORDER BY seq`,
      [org.organizationId],
    );
    expect(rows.map((row) => row.type)).toEqual([
      'transaction.created',
      'intent.approved',
      'transaction.status_changed',
      'transaction.status_changed',
    ]);
    expect(rows[2].data).toMatchObject({ id: txnId, status: 'available', previous_status: 'pending' });
    expect(rows[3].data).toMatchObject({ id: txnId, status: 'settled', previous_status: 'available' });
    // LIFECYCLE_V2: the two writes the workflow makes (submit, available) are local activities (markers), and
    // the settled step is the settlement's signal alone: no activity task at all, two workflow tasks to available.
    expect(lifecycleShape(await handle.fetchHistory())).toEqual({ activityTasks: 0, localActivityMarkers: 2, patched: true });
    await saveHistoryOnce('v2_cash_in_confirmed_settled', txnId);
  });

  test('cash_out: pending → in_transfer when batched → settled, the workflow ends at settled', async () => {
    const { org, userId, call } = await setup();
    const intent = await createIntent(org, { direction: 'cash_out', user_id: userId, amount: 900 });
    const txnId = intent.body.transactions[0].id;
    const handle = stack.temporal.workflow.getHandle(txnId);
    expect((await call('POST', `/simulate/transaction/${txnId}/confirm`)).status).toBe(409);
    await eventually(async () => ((await handle.query(transactionStatusQuery)) === 'pending' ? true : undefined));
    const transferId = await batchWindow(org.accountId, intent.body.transactions[0].date);
    await handle.signal(transferAssignedSignal, { transferId });
    await statusOf(call, txnId, 'in_transfer');
    await eventually(async () => ((await handle.query(transactionStatusQuery)) === 'in_transfer' ? true : undefined));
    expect((await call('GET', `/account/${org.accountId}`)).body.balances).toEqual({ pending: 0, available: 0, in_transfer: -900 });
    await settleBatch(transferId);
    await handle.signal(transferSettledSignal, { transferId });
    expect(await handle.result()).toBe('settled');
    const settled = await statusOf(call, txnId, 'settled');
    expect(settled.transfer).toMatchObject({ id: transferId, amount: 900, direction: 'collection' });
    expect((await call('GET', `/transaction?transfer_id=${transferId}`)).body.data.map((t: { id: string }) => t.id)).toEqual([txnId]);
    expect((await call('GET', `/account/${org.accountId}`)).body.balances).toEqual({ pending: 0, available: 0, in_transfer: 0 });
    // in_transfer and settled came from the settlement's signals: one write of the workflow's own (submit).
    expect(lifecycleShape(await handle.fetchHistory())).toEqual({ activityTasks: 0, localActivityMarkers: 1, patched: true });
    await saveHistoryOnce('v2_cash_out_batched_settled', txnId);
  });

  test('the sandbox network confirms a cash_in by itself after SANDBOX_CONFIRM_SECONDS (a durable timer)', async () => {
    const fast = await startStack({ env: { SANDBOX_CONFIRM_SECONDS: '1' } });
    try {
      const org = await createTestOrg(fast.pool);
      const userId = await createTestUser(fast.pool, org.organizationId);
      const call = apiClient(fast.url, org.apiKey);
      const intent = await call(
        'POST',
        '/intent',
        { direction: 'cash_in', user_id: userId, amount: 42, currency: 'USD' },
        { 'X-Idempotency-Key': idemKey() },
      );
      const txnId = intent.body.transactions[0].id;
      await eventually(async () => ((await call('GET', `/transaction/${txnId}`)).body.status === 'available' ? true : undefined));
      const history = await fast.temporal.workflow.getHandle(txnId).fetchHistory();
      expect(history.events?.some((event) => event.timerFiredEventAttributes)).toBe(true);
      await saveHistoryOnce('v2_cash_in_timer_confirmed', txnId);
    } finally {
      await fast.stop();
    }
  });

  test('the database refuses any transition outside the seed table, a second transfer, and edits of the history', async () => {
    const { org, userId } = await setup();
    const cashIn = (await createIntent(org, { direction: 'cash_in', user_id: userId, amount: 10 })).body.transactions[0].id;
    const cashOut = (await createIntent(org, { direction: 'cash_out', user_id: userId, amount: 10 })).body.transactions[0].id;
    const refused = async (sql: string, params: unknown[]) => {
      await expect(stack.pool.query(sql, params)).rejects.toThrow();
    };
    await refused(`UPDATE transactions SET status = 'in_transfer', transfer_id = 'transfer_x000000000000000001' WHERE id = $1`, [cashIn]);
    await refused(`UPDATE transactions SET status = 'available' WHERE id = $1`, [cashOut]);
    await refused(`UPDATE transactions SET status = 'settled', transfer_id = 'transfer_x000000000000000001' WHERE id = $1`, [cashIn]);
    await refused(`UPDATE transactions SET amount_cents = 11 WHERE id = $1`, [cashIn]);
    await refused(`UPDATE transactions SET amount_cents = -1 WHERE id = $1`, [cashIn]);
    await refused(`DELETE FROM transactions WHERE id = $1`, [cashIn]);
    await batchWindow(org.accountId, settlementDateOf(new Date(), '00:00'));
    expect((await stack.pool.query(`SELECT status FROM transactions WHERE id = $1`, [cashOut])).rows[0].status).toBe('in_transfer');
    await refused(`UPDATE transactions SET transfer_id = 'transfer_x000000000000000002' WHERE id = $1`, [cashOut]);
    await refused(`UPDATE transactions SET status = 'pending', transfer_id = NULL WHERE id = $1`, [cashOut]);
    await refused(`UPDATE transaction_status_history SET to_status = 'settled' WHERE transaction_id = $1`, [cashOut]);
    await refused(`DELETE FROM transaction_status_history WHERE transaction_id = $1`, [cashOut]);
    await refused(
      `INSERT INTO transactions (id, organization_id, account_id, direction, type, amount_cents, status, date, created_at, updated_at)
       VALUES ('txn_direct000000000000000001', $1, $2, 'cash_in', 'intent', 5, 'available', '2026-01-01', now(), now())`,
      [org.organizationId, org.accountId],
    );
  });

  test('each transition is an idempotent activity keyed by (transaction, target status); an illegal one fails for good', async () => {
    const { org, userId } = await setup();
    const txnId = (await createIntent(org, { direction: 'cash_in', user_id: userId, amount: 77 })).body.transactions[0].id;
    const activities = createLedgerActivities({
      config: stack.config,
      pool: stack.pool,
      log: createLogger('silent'),
      temporal: stack.temporal,
    });
    const first = await activities.transitionTransaction({ transactionId: txnId, toStatus: 'available', transferId: null });
    const second = await activities.transitionTransaction({ transactionId: txnId, toStatus: 'available', transferId: null });
    expect(first).toMatchObject({ status: 'available', changed: true });
    expect(second).toMatchObject({ status: 'available', changed: false });
    expect((await statusHistory(stack.pool, txnId)).filter((h) => h.to_status === 'available')).toHaveLength(1);
    await expect(
      activities.transitionTransaction({ transactionId: txnId, toStatus: 'in_transfer', transferId: 'transfer_x000000000000000003' }),
    ).rejects.toMatchObject({ type: 'InvalidTransition', nonRetryable: true });
    // The workflow, confirmed later, finds the row already available and carries on. The drainer starts it
    // after the commit, so wait for it to run before signalling it directly.
    await workflowRunning(stack, txnId);
    await stack.temporal.workflow.getHandle(txnId).signal('confirmFunds');
    await eventually(async () =>
      (await stack.temporal.workflow.getHandle(txnId).query(transactionStatusQuery)) === 'available' ? true : undefined,
    );
    const { rows } = await stack.pool.query(
      `SELECT count(*)::int AS n FROM events WHERE type = 'transaction.status_changed' AND data->>'id' = $1`,
      [txnId],
    );
    expect(rows[0].n).toBe(1);
  });

  test('a transaction committed by a process that died right after its commit gets its workflow from the drainer', async () => {
    const { org } = await setup();
    // The api's write path up to its commit, then "death": afterCommit (the poke) never runs; the drainer's poll finds it.
    const now = new Date();
    const row = await withTransaction(stack.pool, (tx) =>
      insertTransaction(tx, {
        organizationId: org.organizationId,
        accountId: org.accountId,
        direction: 'cash_in',
        type: 'intent',
        sourceId: null,
        amountCents: 5,
        date: settlementDateOf(now, '00:00'),
        createdAt: now,
        taskQueue: stack.config.TEMPORAL_TASK_QUEUE,
      }),
    );
    const handle = stack.temporal.workflow.getHandle(row.id);
    const description = await eventually(
      async () => {
        try {
          const d = await handle.describe();
          return d.status.name === 'RUNNING' ? d : undefined;
        } catch {
          return undefined;
        }
      },
      45_000,
      'the drainer to start the workflow',
    );
    expect(description.workflowId).toBe(row.id);
    await eventually(async () => ((await awaitingWorkflowSince(stack.pool, row.id)) === null ? true : undefined));
  });

  test('a workflow start the Temporal server lost (its state rolled back) is made again by the start-up sweep', async () => {
    const { org } = await setup();
    const now = new Date();
    const row = await withTransaction(stack.pool, (tx) =>
      insertTransaction(tx, {
        organizationId: org.organizationId,
        accountId: org.accountId,
        direction: 'cash_in',
        type: 'intent',
        sourceId: null,
        amountCents: 6,
        date: settlementDateOf(now, '00:00'),
        createdAt: now,
        taskQueue: UNDRAINED_TASK_QUEUE,
      }),
    );
    // Temporal accepted the start and the drainer dequeued it, then the server lost it (a dev server's SQLite
    // rolled back to its last synced checkpoint): the ledger says started, Temporal has no such workflow.
    expect(await awaitingWorkflowSince(stack.pool, row.id)).toEqual(now);
    await stack.pool.query(`DELETE FROM lifecycle_queue WHERE transaction_id = $1`, [row.id]);
    const handle = stack.temporal.workflow.getHandle(row.id);
    await expect(handle.describe()).rejects.toThrow();
    const sweep = () =>
      sweepLifecycles(stack.pool, stack.temporal, stack.config.TEMPORAL_TASK_QUEUE, { organizationId: org.organizationId });
    expect(await sweep()).toBe(1);
    await eventually(async () => ((await handle.query(transactionStatusQuery)) === 'pending' ? true : undefined));
    // Safe to run again, by any number of workers: an existing workflow is left alone.
    expect(await sweep()).toBe(0);
  });
});

describe('SPEC §13 operator CLI: ledger commands', () => {
  async function admin(args: string[]): Promise<{ code: number; json: any }> {
    const saved = {
      DATABASE_URL: process.env.DATABASE_URL,
      TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: process.env.TEMPORAL_TASK_QUEUE,
    };
    Object.assign(process.env, {
      DATABASE_URL: stack.config.DATABASE_URL,
      TEMPORAL_ADDRESS: process.env.LEDGER_TEST_TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
    });
    const chunks: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      chunks.push(String(chunk));
      return true;
    });
    try {
      const code = await runAdmin(['--json', ...args]);
      return { code, json: JSON.parse(chunks.join('')) };
    } finally {
      spy.mockRestore();
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  }

  test('transaction show prints the transaction with its status history; intent show and account balances work', async () => {
    const { org, userId, call } = await setup();
    const intent = await createIntent(org, { direction: 'cash_in', user_id: userId, amount: 321 });
    const txnId = intent.body.transactions[0].id;
    await call('POST', `/simulate/transaction/${txnId}/confirm`);
    await statusOf(call, txnId, 'available');
    const shown = await admin(['transaction', 'show', txnId]);
    expect(shown.code).toBe(0);
    expect(shown.json.transaction).toEqual((await call('GET', `/transaction/${txnId}`)).body);
    expect(shown.json.history.map((h: { to_status: string }) => h.to_status)).toEqual(['pending', 'available']);
    const intentShown = await admin(['intent', 'show', intent.body.id]);
    expect(intentShown.json.intent.id).toBe(intent.body.id);
    const balances = await admin(['account', 'balances', '--org', org.organizationId]);
    expect(balances.json.accounts[0].balances).toEqual({ pending: 0, available: 321, in_transfer: 0 });
    const verified = await admin(['account', 'verify', '--org', org.organizationId]);
    expect(verified).toMatchObject({ code: 0, json: { ok: true } });
    const missing = await admin(['transaction', 'show', 'txn_nope000000000000000000']);
    expect(missing.code).toBe(1);
    expect(missing.json.error.code).toBe('not_found');
    const reconciled = await admin(['transaction', 'reconcile']);
    expect(reconciled.code).toBe(0);
    expect(typeof reconciled.json.started).toBe('number');
  });
});

describe('SPEC §14 the OpenAPI document covers the ledger', () => {
  test('every ledger route answers as documented, the Transaction schema is exactly the seed fields, and the balance formula is written down', async () => {
    const doc = (await (await fetch(`${stack.url}/openapi.json`)).json()) as any;
    const { org, userId, call } = await setup();
    const cashIn = await createIntent(org, { direction: 'cash_in', user_id: userId, amount: 300 });
    const manual = await createIntent(org, { direction: 'cash_out', user_id: userId, amount: 100, approval_mode: 'manual' });
    const other = await createIntent(org, { direction: 'cash_out', user_id: userId, amount: 100, approval_mode: 'manual' });
    const txnId = cashIn.body.transactions[0].id;
    expectDocumented(doc, [
      ['post', '/intent', cashIn],
      ['post', '/intent', manual],
      ['post', '/intent', await createIntent(org, { direction: 'cash_in', user_id: userId, amount: 0 })],
      ['get', '/intent', await call('GET', '/intent')],
      ['get', '/intent/{id}', await call('GET', `/intent/${cashIn.body.id}`)],
      ['get', '/intent/{id}', await call('GET', '/intent/intent_sandbox_doesNotExist00000000')],
      ['post', '/intent/{id}/approve', await call('POST', `/intent/${manual.body.id}/approve`)],
      ['post', '/intent/{id}/cancel', await call('POST', `/intent/${other.body.id}/cancel`)],
      ['post', '/intent/{id}/approve', await call('POST', `/intent/${other.body.id}/approve`)],
      ['post', '/simulate/transaction/{id}/confirm', await call('POST', `/simulate/transaction/${txnId}/confirm`)],
      ['get', '/transaction', await call('GET', '/transaction')],
      ['get', '/transaction/{id}', await call('GET', `/transaction/${txnId}`)],
      ['get', '/account', await call('GET', '/account')],
      ['get', '/account/{id}', await call('GET', `/account/${org.accountId}`)],
    ]);
    expect(Object.keys(doc.components.schemas.Transaction.properties).sort()).toEqual(TRANSACTION_KEYS);
    expect(doc.components.schemas.Account.description).toMatch(
      /available = Σ cash_in available and not yet in a transfer − Σ cash_out pending/,
    );
    const filters = doc.paths['/transaction'].get.parameters.map((p: { name: string }) => p.name);
    expect(filters).toEqual(
      expect.arrayContaining([
        'status',
        'direction',
        'type',
        'account_id',
        'date',
        'transfer_id',
        'created_at.gte',
        'created_at.lt',
        'limit',
        'cursor',
      ]),
    );
    expect(doc.paths['/intent'].post.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'X-Idempotency-Key', required: true })]),
    );
  });
});

describe('SPEC §1/§2 production deployment', () => {
  test('production intents are intent_production_…, and the simulation endpoint does not exist (404)', async () => {
    const production = await startStack({ env: { LEDGER_ENVIRONMENT: 'production' } });
    try {
      const org = await createTestOrg(production.pool, { environment: 'production' });
      const userId = await createTestUser(production.pool, org.organizationId);
      const call = apiClient(production.url, org.apiKey);
      // SPEC §24: production moves money only with a bank account of the user.
      const { bankAccountId } = await addBankAccount(call, userId, { account_number: '000123456789' });
      const intent = await call(
        'POST',
        '/intent',
        { direction: 'cash_in', user_id: userId, amount: 10, currency: 'USD' },
        { 'X-Idempotency-Key': idemKey() },
      );
      expect(intent.status).toBe(200);
      expect(intent.body.id).toMatch(/^intent_production_[A-Za-z0-9]{16,}$/);
      expect(intent.body).toMatchObject({ status: 'approved', bank_account_id: bankAccountId });
      const txnId = intent.body.transactions[0].id;
      expect((await call('POST', `/simulate/transaction/${txnId}/confirm`)).status).toBe(404);
      // No simulator in production: the callback rail waits for the network's confirmFunds signal.
      await eventually(async () =>
        (await production.temporal.workflow.getHandle(txnId).query(transactionStatusQuery)) === 'pending' ? true : undefined,
      );
      await production.temporal.workflow.getHandle(txnId).signal('confirmFunds');
      await eventually(async () => ((await call('GET', `/transaction/${txnId}`)).body.status === 'available' ? true : undefined));
    } finally {
      await production.stop();
    }
  });
});
