import pg from 'pg';
import { randomString } from '../src/ids';
import { recomputeBalances } from '../src/ledger/accounts';
import {
  apiClient,
  createTestDatabase,
  createTestOrg,
  createTestUser,
  eventually,
  startStack,
  type Stack,
  type TestOrg,
} from './support/harness';
import { expectDocumented } from './support/openapi';
import { admin, approvedCashIn, eventsAbout, idempotencyKey, workflowRunning } from './support/payments';

describe('SPEC §11 disputes', () => {
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

  const openDispute = async (intentId: string, code = 'R10') =>
    call('POST', '/simulate/dispute', { intent_id: intentId, code }, idempotencyKey());

  test('the network disputing a payment records a created dispute and a pending cash_out dispute transaction with its workflow', async () => {
    const intent = await approvedCashIn(call, userId, 1250);
    const created = await openDispute(intent.id, '10.4');
    expect(created.status).toBe(200);
    const dispute = created.body;
    expect(dispute).toMatchObject({
      intent_id: intent.id,
      amount: 1250,
      currency: 'USD',
      code: '10.4',
      reason: null,
      status: 'created',
      resolved_at: null,
    });
    expect(dispute.id).toMatch(/^dispute_[A-Za-z0-9]{16,}$/);
    expect(dispute.transactions).toHaveLength(1);
    expect(dispute.transactions[0]).toMatchObject({
      type: 'dispute',
      direction: 'cash_out',
      source_id: dispute.id,
      amount: 1250,
      status: 'pending',
    });
    expect((await call('GET', `/dispute/${dispute.id}`)).body).toEqual(dispute);
    expect(await eventsAbout(stack, org.organizationId, 'dispute.created', dispute.id)).toEqual([dispute]);
    await workflowRunning(stack, dispute.transactions[0].id);
  });

  test('won: the funds come back with a cash_in dispute transaction that lives the cash_in lifecycle', async () => {
    const intent = await approvedCashIn(call, userId, 900);
    const dispute = (await openDispute(intent.id)).body;
    const resolved = await call('POST', `/simulate/dispute/${dispute.id}/resolve`, { result: 'won' }, idempotencyKey());
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({ id: dispute.id, status: 'won' });
    expect(resolved.body.resolved_at).not.toBeNull();
    const [out, back] = resolved.body.transactions;
    expect(out.id).toBe(dispute.transactions[0].id);
    expect(back).toMatchObject({ type: 'dispute', direction: 'cash_in', source_id: dispute.id, amount: 900, status: 'pending' });
    expect(await eventsAbout(stack, org.organizationId, 'dispute.resolved', dispute.id)).toEqual([resolved.body]);

    await workflowRunning(stack, back.id);
    expect((await call('POST', `/simulate/transaction/${back.id}/confirm`, undefined, idempotencyKey())).status).toBe(200);
    await eventually(
      async () => ((await call('GET', `/transaction/${back.id}`)).body.status === 'available' ? true : undefined),
      30_000,
      'returned funds available',
    );
  });

  test('lost: nothing moves back and the dispute is final', async () => {
    const intent = await approvedCashIn(call, userId, 400);
    const dispute = (await openDispute(intent.id)).body;
    const lost = await call('POST', `/simulate/dispute/${dispute.id}/resolve`, { result: 'lost' }, idempotencyKey());
    expect(lost.body).toMatchObject({ status: 'lost' });
    expect(lost.body.transactions).toHaveLength(1);
    for (const result of ['won', 'lost']) {
      const again = await call('POST', `/simulate/dispute/${dispute.id}/resolve`, { result }, idempotencyKey());
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('invalid_state');
    }
  });

  test('a won dispute cannot be resolved again', async () => {
    const intent = await approvedCashIn(call, userId, 400);
    const dispute = (await openDispute(intent.id)).body;
    await call('POST', `/simulate/dispute/${dispute.id}/resolve`, { result: 'won' }, idempotencyKey());
    const again = await call('POST', `/simulate/dispute/${dispute.id}/resolve`, { result: 'lost' }, idempotencyKey());
    expect(again.status).toBe(409);
  });

  test('a dispute takes what refunds left; a fully refunded intent cannot be disputed', async () => {
    const partly = await approvedCashIn(call, userId, 1000);
    await call('POST', '/refund', { intent_id: partly.id, amount: 300 }, idempotencyKey());
    expect((await openDispute(partly.id)).body.amount).toBe(700);
    const fully = await approvedCashIn(call, userId, 1000);
    await call('POST', '/refund', { intent_id: fully.id }, idempotencyKey());
    const refused = await openDispute(fully.id);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('invalid_state');
  });

  test('while disputed (or lost) nothing is left to refund; once won, the intent is refundable again', async () => {
    const intent = await approvedCashIn(call, userId, 600);
    const dispute = (await openDispute(intent.id)).body;
    expect((await call('POST', '/refund', { intent_id: intent.id }, idempotencyKey())).status).toBe(409);
    await call('POST', `/simulate/dispute/${dispute.id}/resolve`, { result: 'won' }, idempotencyKey());
    const refund = await call('POST', '/refund', { intent_id: intent.id }, idempotencyKey());
    expect(refund.status).toBe(200);
    expect(refund.body.amount).toBe(600);
  });

  test('one dispute per intent: a second is 409 invalid_state', async () => {
    const intent = await approvedCashIn(call, userId, 500);
    await openDispute(intent.id);
    const second = await openDispute(intent.id, 'R01');
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('invalid_state');
  });

  test('only approved cash_in intents can be disputed; an unknown intent is 400 resource_missing', async () => {
    const cashOut = await call(
      'POST',
      '/intent',
      { direction: 'cash_out', user_id: userId, amount: 100, currency: 'USD' },
      idempotencyKey(),
    );
    expect((await openDispute(cashOut.body.id)).status).toBe(409);
    const unknown = await openDispute(`intent_sandbox_${randomString(24)}`);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ code: 'resource_missing', param: 'intent_id' });
  });

  test('a malformed code or result is 400 validation_failed', async () => {
    const intent = await approvedCashIn(call, userId, 100);
    for (const code of ['', 'has spaces', 'x'.repeat(33), 7]) {
      const response = await call('POST', '/simulate/dispute', { intent_id: intent.id, code }, idempotencyKey());
      expect(response.status).toBe(400);
      expect(response.body.error).toMatchObject({ code: 'validation_failed', param: 'code' });
    }
    const dispute = (await openDispute(intent.id)).body;
    const bad = await call('POST', `/simulate/dispute/${dispute.id}/resolve`, { result: 'draw' }, idempotencyKey());
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('result');
  });

  test("another organization's dispute is 404 to read and to resolve", async () => {
    const other = await createTestOrg(stack.pool);
    const otherCall = apiClient(stack.url, other.apiKey);
    const intent = await approvedCashIn(otherCall, await createTestUser(stack.pool, other.organizationId), 300);
    const dispute = (await otherCall('POST', '/simulate/dispute', { intent_id: intent.id, code: 'R10' }, idempotencyKey())).body;
    expect((await call('GET', `/dispute/${dispute.id}`)).status).toBe(404);
    const resolve = await call('POST', `/simulate/dispute/${dispute.id}/resolve`, { result: 'won' }, idempotencyKey());
    expect(resolve.status).toBe(404);
    expect((await otherCall('GET', `/dispute/${dispute.id}`)).body.status).toBe('created');
    expect((await call('GET', `/dispute?intent_id=${intent.id}`)).body.data).toEqual([]);
    expect((await call('GET', `/dispute/dispute_${randomString(24)}`)).status).toBe(404);
  });

  test('GET /dispute lists newest first with status and intent_id filters and stable paging', async () => {
    const own = await createTestOrg(stack.pool, { write: 1000 });
    const ownCall = apiClient(stack.url, own.apiKey);
    const ownUser = await createTestUser(stack.pool, own.organizationId);
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const intent = await approvedCashIn(ownCall, ownUser, 100 + i);
      ids.push((await ownCall('POST', '/simulate/dispute', { intent_id: intent.id, code: 'R10' }, idempotencyKey())).body.id);
    }
    await ownCall('POST', `/simulate/dispute/${ids[1]}/resolve`, { result: 'won' }, idempotencyKey());
    await ownCall('POST', `/simulate/dispute/${ids[3]}/resolve`, { result: 'lost' }, idempotencyKey());
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await ownCall('GET', `/dispute?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.body.data.map((d: { id: string }) => d.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    expect((await ownCall('GET', '/dispute?status=won')).body.data.map((d: { id: string }) => d.id)).toEqual([ids[1]]);
    expect((await ownCall('GET', '/dispute?status=created')).body.data.map((d: { id: string }) => d.id)).toEqual([ids[4], ids[2], ids[0]]);
    const byIntent = (await ownCall('GET', `/dispute/${ids[2]}`)).body.intent_id;
    expect((await ownCall('GET', `/dispute?intent_id=${byIntent}`)).body.data.map((d: { id: string }) => d.id)).toEqual([ids[2]]);
    expect((await ownCall('GET', '/dispute?status=open')).status).toBe(400);
  });

  test('the database allows only created → won | lost', async () => {
    const intent = await approvedCashIn(call, userId, 100);
    const dispute = (await openDispute(intent.id)).body;
    await call('POST', `/simulate/dispute/${dispute.id}/resolve`, { result: 'lost' }, idempotencyKey());
    await expect(stack.pool.query(`UPDATE disputes SET status = 'won' WHERE id = $1`, [dispute.id])).rejects.toThrow(
      /cannot go from lost to won/,
    );
    await expect(stack.pool.query(`UPDATE disputes SET amount_cents = 1 WHERE id = $1`, [dispute.id])).rejects.toThrow(/only status/);
  });

  test("refund and dispute transactions keep the account's stored balances equal to a recomputation from its transactions", async () => {
    const own = await createTestOrg(stack.pool, { write: 1000 });
    const ownCall = apiClient(stack.url, own.apiKey);
    const ownUser = await createTestUser(stack.pool, own.organizationId);
    const a = await approvedCashIn(ownCall, ownUser, 1000);
    const b = await approvedCashIn(ownCall, ownUser, 2000);
    await ownCall('POST', '/refund', { intent_id: a.id, amount: 250 }, idempotencyKey());
    const won = (await ownCall('POST', '/simulate/dispute', { intent_id: a.id, code: 'R10' }, idempotencyKey())).body;
    await ownCall('POST', `/simulate/dispute/${won.id}/resolve`, { result: 'won' }, idempotencyKey());
    const lost = (await ownCall('POST', '/simulate/dispute', { intent_id: b.id, code: '10.4' }, idempotencyKey())).body;
    await ownCall('POST', `/simulate/dispute/${lost.id}/resolve`, { result: 'lost' }, idempotencyKey());
    const shown = (await ownCall('GET', `/account/${own.accountId}`)).body.balances;
    // cash_in pending: 1000 + 2000 + 750 (won back); cash_out pending: 250 refund + 750 + 2000 disputes.
    expect(shown).toEqual({ pending: 3750, available: -3000, in_transfer: 0 });
    expect(await recomputeBalances(stack.pool, own.accountId)).toEqual(shown);
  });

  test('the operator CLI shows a dispute (dispute show --json)', async () => {
    const intent = await approvedCashIn(call, userId, 100);
    const dispute = (await openDispute(intent.id)).body;
    const shown = await admin(['dispute', 'show', dispute.id, '--json']);
    expect(shown.code).toBe(0);
    // An ACH return code names its NACHA title (SPEC §25), whoever opened the dispute.
    expect(dispute.reason).toBe(
      'Customer Advises Originator is Not Known to Receiver and/or Originator is Not Authorized by Receiver to Debit Receiver Account',
    );
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: dispute.id, status: 'created', code: 'R10', reason: dispute.reason });
  });

  test('dispute simulation exists only in sandbox; production answers 404 but serves GET /dispute', async () => {
    const production = await startStack({ env: { LEDGER_ENVIRONMENT: 'production' }, worker: false });
    try {
      const prodOrg = await createTestOrg(production.pool, { environment: 'production' });
      const prodCall = apiClient(production.url, prodOrg.apiKey);
      const simulate = await prodCall('POST', '/simulate/dispute', { intent_id: 'intent_production_x', code: 'R10' }, idempotencyKey());
      expect(simulate.status).toBe(404);
      expect(simulate.body.error.code).toBe('route_not_found');
      expect((await prodCall('GET', '/dispute')).status).toBe(200);
      const document: any = await (await fetch(`${production.url}/openapi.json`)).json();
      expect(document.paths['/simulate/dispute']).toBeUndefined();
      expectDocumented(document, [
        ['get', '/dispute', await prodCall('GET', '/dispute')],
        ['get', '/dispute/{id}', await prodCall('GET', `/dispute/dispute_${randomString(24)}`)],
      ]);
    } finally {
      await production.stop();
    }
  });
});

describe('what has left an intent (intent_returned_cents, the draw guard’s read) goes through its indexes', () => {
  test('on tables analyzed empty, as before an operator’s first return file, it reads disputes_by_intent and refunds_by_intent, never a scan', async () => {
    // A return file inserts all its disputes in one statement and the guard reads this once per row, on a plan made
    // when the statement starts: a scan chosen for a small table would then read every row the file added so far,
    // for each row (migrations/0052). auto_explain hands this session the plans the read ran with.
    const scratch = await createTestDatabase(`ledger_test_${Date.now()}_plan`);
    const client = new pg.Client({ connectionString: scratch.databaseUrl });
    await client.connect();
    try {
      await client.query('ANALYZE disputes');
      await client.query('ANALYZE refunds');
      const plans: string[] = [];
      client.on('notice', (notice) => plans.push(notice.message ?? ''));
      await client.query(`LOAD 'auto_explain'`);
      for (const setting of ['log_min_duration = 0', 'log_nested_statements = on', 'log_level = notice'])
        await client.query(`SET auto_explain.${setting}`);
      await client.query(`SELECT intent_returned_cents('intent_sandbox_none')`);
      const text = plans.join('\n');
      expect(text).toMatch(/disputes_by_intent/);
      expect(text).toMatch(/refunds_by_intent/);
      expect(text).not.toMatch(/Seq Scan on (disputes|refunds)/);
    } finally {
      await client.end();
      await scratch.drop();
    }
  });
});
