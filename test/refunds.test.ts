import { randomString } from '../src/ids';
import { settlementDateOf } from '../src/easternDates';
import { apiClient, createTestOrg, createTestUser, startStack, type Stack, type TestOrg } from './support/harness';
import { exampleMismatches, expectDocumented } from './support/openapi';
import { admin, approvedCashIn, eventsAbout, idempotencyKey, workflowRunning } from './support/payments';

describe('SPEC §11 refunds', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: ReturnType<typeof apiClient>;
  let userId: string;

  beforeAll(async () => {
    stack = await startStack();
    org = await createTestOrg(stack.pool, { write: 5000, read: 5000 });
    call = apiClient(stack.url, org.apiKey);
    userId = await createTestUser(stack.pool, org.organizationId);
  });
  afterAll(async () => {
    await stack.stop();
  });

  test('a partial refund records a pending cash_out refund transaction that runs its lifecycle workflow', async () => {
    const intent = await approvedCashIn(call, userId, 1000);
    const created = await call('POST', '/refund', { intent_id: intent.id, amount: 300 }, idempotencyKey());
    expect(created.status).toBe(200);
    const refund = created.body;
    expect(refund).toMatchObject({ intent_id: intent.id, amount: 300, currency: 'USD', status: 'pending' });
    expect(refund.id).toMatch(/^refund_[A-Za-z0-9]{16,}$/);
    expect(refund.transaction).toMatchObject({
      type: 'refund',
      direction: 'cash_out',
      source_id: refund.id,
      amount: 300,
      status: 'pending',
      account_id: intent.account_id,
      transfer: null,
    });
    // Eligible for the next settlement window: a pending cash_out dated by its own creation.
    expect(refund.transaction.date).toBe(settlementDateOf(new Date(refund.transaction.created_at), stack.config.SETTLEMENT_CUTOFF));

    const fetched = await call('GET', `/refund/${refund.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).toEqual(refund);
    const txn = await call('GET', `/transaction/${refund.transaction.id}`);
    expect(txn.body).toEqual(refund.transaction);

    await workflowRunning(stack, refund.transaction.id);
    const status = await stack.temporal.workflow.getHandle(refund.transaction.id).query<string>('transactionStatus');
    expect(status).toBe('pending');
  });

  test('refund.created and transaction.created are recorded in the outbox with the refund', async () => {
    const intent = await approvedCashIn(call, userId, 500);
    const refund = (await call('POST', '/refund', { intent_id: intent.id, amount: 120 }, idempotencyKey())).body;
    expect(await eventsAbout(stack, org.organizationId, 'refund.created', refund.id)).toEqual([refund]);
    expect(await eventsAbout(stack, org.organizationId, 'transaction.created', refund.transaction.id)).toHaveLength(1);
  });

  test('an omitted amount refunds all that is left, after which nothing is left (409 invalid_state)', async () => {
    const intent = await approvedCashIn(call, userId, 1000);
    expect((await call('POST', '/refund', { intent_id: intent.id, amount: 250 }, idempotencyKey())).body.amount).toBe(250);
    const rest = await call('POST', '/refund', { intent_id: intent.id }, idempotencyKey());
    expect(rest.status).toBe(200);
    expect(rest.body.amount).toBe(750);
    const again = await call('POST', '/refund', { intent_id: intent.id, amount: 1 }, idempotencyKey());
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('invalid_state');
  });

  test('a full refund in one request refunds the whole intent', async () => {
    const intent = await approvedCashIn(call, userId, 640);
    const full = await call('POST', '/refund', { intent_id: intent.id, amount: 640 }, idempotencyKey());
    expect(full.status).toBe(200);
    expect(full.body.transaction.amount).toBe(640);
  });

  test('an amount above what is left is refused (400 amount_too_large); exactly what is left is accepted', async () => {
    const intent = await approvedCashIn(call, userId, 1000);
    await call('POST', '/refund', { intent_id: intent.id, amount: 600 }, idempotencyKey());
    const over = await call('POST', '/refund', { intent_id: intent.id, amount: 401 }, idempotencyKey());
    expect(over.status).toBe(400);
    expect(over.body.error).toMatchObject({ code: 'amount_too_large', param: 'amount' });
    const exact = await call('POST', '/refund', { intent_id: intent.id, amount: 400 }, idempotencyKey());
    expect(exact.status).toBe(200);
  });

  test('the refund lowers the account balance available by its amount', async () => {
    const before = (await call('GET', `/account/${org.accountId}`)).body.balances.available;
    const intent = await approvedCashIn(call, userId, 800);
    await call('POST', '/refund', { intent_id: intent.id, amount: 200 }, idempotencyKey());
    const after = (await call('GET', `/account/${org.accountId}`)).body.balances.available;
    // The deposit is still pending (not available); the refund's pending cash_out nets against the next transfer.
    expect(after - before).toBe(-200);
  });

  test('amount must be a positive integer of cents (400 validation_failed)', async () => {
    const intent = await approvedCashIn(call, userId, 100);
    for (const amount of [0, -5, 1.5, '10']) {
      const response = await call('POST', '/refund', { intent_id: intent.id, amount }, idempotencyKey());
      expect(response.status).toBe(400);
      expect(response.body.error).toMatchObject({ code: 'validation_failed', param: 'amount' });
    }
  });

  test('only approved cash_in intents can be refunded: cash_out, declined and pending intents are 409 invalid_state', async () => {
    const cashOut = await call(
      'POST',
      '/intent',
      { direction: 'cash_out', user_id: userId, amount: 100, currency: 'USD' },
      idempotencyKey(),
    );
    expect(cashOut.body.status).toBe('approved');
    const suspended = await createTestUser(stack.pool, org.organizationId, 'suspended');
    const declined = await call(
      'POST',
      '/intent',
      { direction: 'cash_in', user_id: suspended, amount: 100, currency: 'USD' },
      idempotencyKey(),
    );
    expect(declined.body.status).toBe('declined');
    const pending = await call(
      'POST',
      '/intent',
      { direction: 'cash_out', user_id: userId, amount: 100, currency: 'USD', approval_mode: 'manual' },
      idempotencyKey(),
    );
    expect(pending.body.status).toBe('pending');
    for (const intent of [cashOut.body, declined.body, pending.body]) {
      const response = await call('POST', '/refund', { intent_id: intent.id }, idempotencyKey());
      expect(response.status).toBe(409);
      expect(response.body.error.code).toBe('invalid_state');
    }
  });

  test('an unknown intent_id is 400 resource_missing naming intent_id', async () => {
    const response = await call('POST', '/refund', { intent_id: `intent_sandbox_${randomString(24)}` }, idempotencyKey());
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'resource_missing', param: 'intent_id' });
  });

  test("another organization's intent is resource_missing and its refund 404", async () => {
    const other = await createTestOrg(stack.pool);
    const otherCall = apiClient(stack.url, other.apiKey);
    const otherUser = await createTestUser(stack.pool, other.organizationId);
    const intent = await approvedCashIn(otherCall, otherUser, 300);
    const refund = (await otherCall('POST', '/refund', { intent_id: intent.id }, idempotencyKey())).body;
    const viaUs = await call('POST', '/refund', { intent_id: intent.id }, idempotencyKey());
    expect(viaUs.status).toBe(400);
    expect(viaUs.body.error.code).toBe('resource_missing');
    const get = await call('GET', `/refund/${refund.id}`);
    expect(get.status).toBe(404);
    expect(get.body.error.code).toBe('not_found');
    expect((await otherCall('GET', `/refund/${refund.id}`)).status).toBe(200);
  });

  test('20 concurrent refunds never return more than the intent', async () => {
    const intent = await approvedCashIn(call, userId, 1000);
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => call('POST', '/refund', { intent_id: intent.id, amount: 150 }, idempotencyKey())),
    );
    const ok = responses.filter((r) => r.status === 200);
    expect(ok).toHaveLength(6);
    expect(responses.filter((r) => r.status === 400).every((r) => r.body.error.code === 'amount_too_large')).toBe(true);
    expect(ok.length + responses.filter((r) => r.status === 400).length).toBe(20);
    const { rows } = await stack.pool.query<{ refunded: number; txns: number }>(
      `SELECT (SELECT sum(amount_cents) FROM refunds WHERE intent_id = $1)::bigint AS refunded,
              (SELECT count(*) FROM transactions t JOIN refunds r ON r.id = t.source_id WHERE r.intent_id = $1 AND t.type = 'refund')::int AS txns`,
      [intent.id],
    );
    expect(rows[0]).toEqual({ refunded: 900, txns: 6 });
  });

  test('20 concurrent "refund everything left" requests refund the intent exactly once', async () => {
    const intent = await approvedCashIn(call, userId, 777);
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => call('POST', '/refund', { intent_id: intent.id }, idempotencyKey())),
    );
    expect(responses.filter((r) => r.status === 200).map((r) => r.body.amount)).toEqual([777]);
    expect(responses.filter((r) => r.status === 409)).toHaveLength(19);
  });

  test('the database itself refuses a refund beyond the intent, whatever the application does', async () => {
    const intent = await approvedCashIn(call, userId, 100);
    const insert = (amount: number) =>
      stack.pool.query(
        `INSERT INTO refunds (id, organization_id, intent_id, account_id, amount_cents, created_at) VALUES ($1, $2, $3, $4, $5, now())`,
        [`refund_${randomString(24)}`, org.organizationId, intent.id, intent.account_id, amount],
      );
    await expect(insert(101)).rejects.toThrow(/would return 101/);
    await insert(100);
    await expect(insert(1)).rejects.toThrow(/would return 101/);
    await expect(stack.pool.query(`DELETE FROM refunds WHERE intent_id = $1`, [intent.id])).rejects.toThrow(/immutable/);
  });

  test('the same X-Idempotency-Key replays the refund and creates nothing', async () => {
    const intent = await approvedCashIn(call, userId, 500);
    const headers = idempotencyKey();
    const first = await call('POST', '/refund', { intent_id: intent.id, amount: 100 }, headers);
    const second = await call('POST', '/refund', { intent_id: intent.id, amount: 100 }, headers);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body).toEqual(first.body);
    const { rows } = await stack.pool.query(`SELECT id FROM refunds WHERE intent_id = $1`, [intent.id]);
    expect(rows).toHaveLength(1);
  });

  test('GET /refund lists newest first, filters by intent_id and pages without repeats', async () => {
    const intent = await approvedCashIn(call, userId, 1000);
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1)
      ids.push((await call('POST', '/refund', { intent_id: intent.id, amount: 10 }, idempotencyKey())).body.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await call('GET', `/refund?intent_id=${intent.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.data.map((r: { id: string }) => r.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    expect((await call('GET', '/refund?cursor=nonsense')).status).toBe(400);
  });

  test('the operator CLI shows a refund (refund show --json)', async () => {
    const intent = await approvedCashIn(call, userId, 400);
    const refund = (await call('POST', '/refund', { intent_id: intent.id, amount: 40 }, idempotencyKey())).body;
    const shown = await admin(['refund', 'show', refund.id, '--json']);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: refund.id, amount: 40, transaction: { id: refund.transaction.id } });
    const missing = await admin(['refund', 'show', `refund_${randomString(24)}`, '--json']);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout).error.code).toBe('not_found');
  });

  test('refunds answer as the OpenAPI document says, and its example refund request fits its schema', async () => {
    const document: unknown = await (await fetch(`${stack.url}/openapi.json`)).json();
    const intent = await approvedCashIn(call, userId, 300);
    const refund = await call('POST', '/refund', { intent_id: intent.id, amount: 30 }, idempotencyKey());
    expectDocumented(document, [
      ['post', '/refund', refund],
      ['post', '/refund', await call('POST', '/refund', { intent_id: intent.id, amount: 301 }, idempotencyKey())],
      ['get', '/refund', await call('GET', '/refund')],
      ['get', '/refund/{id}', await call('GET', `/refund/${refund.body.id}`)],
      ['get', '/refund/{id}', await call('GET', `/refund/refund_${randomString(24)}`)],
    ]);
    expect(exampleMismatches(document, 'CreateRefund')).toEqual([]);
  });
});
