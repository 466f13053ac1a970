import { advisoryLockId } from '../src/http/idempotency';
import { randomString } from '../src/ids';
import { apiClient, createTestOrg, createTestUser, startStack, type Stack, type TestOrg } from './support/harness';
import { eventsAbout, workflowRunning, type Body } from './support/payments';
import { roundTripsAround, statementsSent } from './support/statements';

let stack: Stack;
let org: TestOrg;
let call: ReturnType<typeof apiClient>;
let enabledUser: string;
let suspendedUser: string;

beforeAll(async () => {
  // With a worker: its drainer starts the lifecycle workflows the batch queued (SPEC §20).
  stack = await startStack();
  org = await createTestOrg(stack.pool, { write: 100_000, read: 100_000 });
  call = apiClient(stack.url, org.apiKey);
  enabledUser = await createTestUser(stack.pool, org.organizationId);
  suspendedUser = await createTestUser(stack.pool, org.organizationId, 'suspended');
});
afterAll(async () => {
  await stack.stop();
});

const key = (prefix = 'item') => `${prefix}-${randomString(16)}`;
const batchKey = () => ({ 'X-Idempotency-Key': key('batch') });

function cashIn(patch: Body = {}): Body {
  return { direction: 'cash_in', user_id: enabledUser, amount: 1250, currency: 'USD', ...patch };
}

function items(count: number, patch: Body = {}): Body[] {
  return Array.from({ length: count }, (_, i) => ({ idempotency_key: key(), ...cashIn({ amount: 100 + i, ...patch }) }));
}

async function rowCount(table: string): Promise<number> {
  const { rows } = await stack.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE organization_id = $1`, [
    org.organizationId,
  ]);
  return rows[0]!.n;
}

describe('SPEC §19 POST /intent/batch: each item as its own POST /intent', () => {
  it('answers every kind of item in request order, each with what POST /intent would answer', async () => {
    const replayedKey = key('earlier');
    const earlier = await call('POST', '/intent', cashIn({ amount: 777 }), { 'X-Idempotency-Key': replayedKey });
    expect(earlier.status).toBe(200);
    const reusedKey = key('reused');
    expect((await call('POST', '/intent', cashIn({ amount: 1 }), { 'X-Idempotency-Key': reusedKey })).status).toBe(200);
    const missingUser = `user_${randomString(24)}`;
    const batch = [
      { idempotency_key: key(), ...cashIn() },
      { idempotency_key: key(), ...cashIn({ user_id: suspendedUser }) },
      { idempotency_key: key(), ...cashIn({ direction: 'cash_out', approval_mode: 'manual', metadata: { run: 'r1' } }) },
      { idempotency_key: key(), ...cashIn({ amount: 0 }) },
      { idempotency_key: replayedKey, ...cashIn({ amount: 777 }) },
      { idempotency_key: reusedKey, ...cashIn({ amount: 2 }) },
      { idempotency_key: key(), ...cashIn({ user_id: missingUser }) },
    ];
    const response = await call('POST', '/intent/batch', { intents: batch }, batchKey());
    expect(response.status).toBe(200);
    const data = response.body.data as Body[];
    expect(data.map((slot) => slot.idempotency_key)).toEqual(batch.map((item) => item.idempotency_key));
    expect(data.map((slot) => slot.status)).toEqual([200, 200, 200, 400, 200, 422, 400]);

    const [approved, declined, pending, invalid, replayed, reused, missing] = data as [Body, Body, Body, Body, Body, Body, Body];
    expect(approved.intent).toMatchObject({ status: 'approved', amount: 1250, idempotency_key: batch[0]!.idempotency_key });
    expect(approved.intent.transactions).toHaveLength(1);
    expect(approved.intent.transactions[0]).toMatchObject({ status: 'pending', type: 'intent', source_id: approved.intent.id });
    expect(declined.intent).toMatchObject({ status: 'declined', decline_category: 'user_not_enabled', transactions: [] });
    expect(pending.intent).toMatchObject({ status: 'pending', approval_mode: 'manual', metadata: { run: 'r1' }, transactions: [] });
    expect(invalid.error).toMatchObject({ code: 'validation_failed', param: 'amount', request_id: response.headers.get('x-request-id') });
    expect(invalid.intent).toBeUndefined();
    expect(JSON.stringify(replayed.intent)).toBe(earlier.text);
    expect(reused.error).toMatchObject({ type: 'idempotency_error', code: 'idempotency_key_reused' });
    expect(missing.error).toMatchObject({ code: 'resource_missing', param: 'user_id' });

    // Events as POST /intent records them.
    expect(await eventsAbout(stack, org.organizationId, 'intent.approved', approved.intent.id)).toEqual([approved.intent]);
    expect(await eventsAbout(stack, org.organizationId, 'intent.declined', declined.intent.id)).toEqual([declined.intent]);
    expect(await eventsAbout(stack, org.organizationId, 'transaction.created', approved.intent.transactions[0].id)).toEqual([
      approved.intent.transactions[0],
    ]);
    expect(await eventsAbout(stack, org.organizationId, 'intent.approved', pending.intent.id)).toEqual([]);
    const read = await call('GET', `/intent/${approved.intent.id}`);
    expect(read.body).toEqual(approved.intent);
  });

  it("shares each item's key with POST /intent: a later POST replays the item byte for byte, another body is 422", async () => {
    const batch = items(3);
    const response = await call('POST', '/intent/batch', { intents: batch }, batchKey());
    expect(response.status).toBe(200);
    const { idempotency_key: itemKey, ...body } = batch[1]!;
    const later = await call('POST', '/intent', body, { 'X-Idempotency-Key': itemKey as string });
    expect(later.status).toBe(200);
    expect(later.headers.get('idempotent-replayed')).toBe('true');
    expect(later.text).toBe(JSON.stringify(response.body.data[1].intent));
    const other = await call('POST', '/intent', { ...body, amount: 5 }, { 'X-Idempotency-Key': itemKey as string });
    expect(other.status).toBe(422);
    // An invalid item stored nothing, like POST /intent's 400: the same key with a valid body executes later.
    const invalidKey = key();
    const first = await call(
      'POST',
      '/intent/batch',
      { intents: [{ idempotency_key: invalidKey, ...cashIn({ amount: -1 }) }] },
      batchKey(),
    );
    expect(first.body.data[0].status).toBe(400);
    expect((await call('POST', '/intent', cashIn(), { 'X-Idempotency-Key': invalidKey })).body.status).toBe('approved');
  });

  it('replays the whole batch byte for byte under its key, and answers 422 to the key with another body', async () => {
    const headers = batchKey();
    const batch = items(5);
    const first = await call('POST', '/intent/batch', { intents: batch }, headers);
    expect(first.status).toBe(200);
    const intentsBefore = await rowCount('intents');
    const again = await call('POST', '/intent/batch', { intents: batch }, headers);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    const other = await call('POST', '/intent/batch', { intents: items(5) }, headers);
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect(await rowCount('intents')).toBe(intentsBefore);
  });

  it('locks item keys: a concurrent POST /intent with an item key executes once with the batch, and both answer the same intent', async () => {
    for (let round = 0; round < 5; round++) {
      const batch = items(20);
      const { idempotency_key: shared, ...body } = batch[round * 3]!;
      const [batchResponse, single] = await Promise.all([
        call('POST', '/intent/batch', { intents: batch }, batchKey()),
        call('POST', '/intent', body, { 'X-Idempotency-Key': shared as string }),
      ]);
      expect(batchResponse.status).toBe(200);
      expect(single.status).toBe(200);
      expect(JSON.stringify(batchResponse.body.data[round * 3].intent)).toBe(single.text);
      const { rows } = await stack.pool.query(`SELECT id FROM intents WHERE organization_id = $1 AND idempotency_key = $2`, [
        org.organizationId,
        shared,
      ]);
      expect(rows).toHaveLength(1);
    }
  });

  it('answers 409 in the slot of an item whose key another request still holds past the wait, and runs the others', async () => {
    const batch = items(3);
    const held = batch[1]!.idempotency_key as string;
    const holder = await stack.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT pg_advisory_xact_lock(${advisoryLockId(org.organizationId, { scope: 'header', key: held })})`);
      const response = await call('POST', '/intent/batch', { intents: batch }, batchKey());
      expect(response.status).toBe(200);
      expect((response.body.data as Body[]).map((slot) => slot.status)).toEqual([200, 409, 200]);
      expect(response.body.data[1].error.code).toBe('idempotency_request_in_progress');
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    // Nothing was stored under the held key: it executes once free.
    const { idempotency_key: _key, ...body } = batch[1]!;
    expect((await call('POST', '/intent', body, { 'X-Idempotency-Key': held })).body.status).toBe('approved');
  });

  it('starts the lifecycle workflow of every approved item', async () => {
    const response = await call('POST', '/intent/batch', { intents: items(10) }, batchKey());
    const transactionIds = (response.body.data as Body[]).map((slot) => slot.intent.transactions[0].id as string);
    expect(new Set(transactionIds).size).toBe(10);
    for (const id of transactionIds) await workflowRunning(stack, id);
  });
});

describe('SPEC §19 a body that is not a batch is a 400 and creates nothing', () => {
  const cases: Array<[string, () => unknown, string]> = [
    ['no items', () => ({ intents: [] }), 'intents'],
    ['101 items', () => ({ intents: items(101, { amount: 100 }) }), 'intents'],
    [
      'a key repeated within the batch',
      () => {
        const batch = items(4);
        batch[3]!.idempotency_key = batch[1]!.idempotency_key;
        return { intents: batch };
      },
      'intents.3.idempotency_key',
    ],
    [
      'an item without a key',
      () => {
        const batch = items(4);
        delete batch[2]!.idempotency_key;
        return { intents: batch };
      },
      'intents.2.idempotency_key',
    ],
    [
      'a key that is not printable ASCII',
      () => {
        const batch = items(2);
        batch[1]!.idempotency_key = 'caf\u00e9';
        return { intents: batch };
      },
      'intents.1.idempotency_key',
    ],
    ['an item that is not an object', () => ({ intents: [...items(1), 'x'] }), 'intents.1'],
    ['no intents at all', () => ({ items: items(1) }), 'intents'],
  ];
  it.each(cases)('%s', async (_name, body, param) => {
    const before = await rowCount('intents');
    const response = await call('POST', '/intent/batch', body(), batchKey());
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('validation_failed');
    expect(response.body.error.details.map((detail: Body) => detail.param)).toContain(param);
    expect(await rowCount('intents')).toBe(before);
  });

  it("refuses an item key equal to the batch's own key, and a batch without a key", async () => {
    const headers = batchKey();
    const batch = items(2);
    batch[1]!.idempotency_key = headers['X-Idempotency-Key'];
    const response = await call('POST', '/intent/batch', { intents: batch }, headers);
    expect(response.status).toBe(400);
    expect(response.body.error.param).toBe('intents.1.idempotency_key');
    expect((await call('POST', '/intent/batch', { intents: items(1) })).status).toBe(400);
    // Refused before executing: the batch key stored nothing and executes with a good body.
    batch[1]!.idempotency_key = key();
    expect((await call('POST', '/intent/batch', { intents: batch }, headers)).status).toBe(200);
  });
});

describe('SPEC §19 a batch is one write and a bounded number of round trips', () => {
  it('counts once against the write limit, whatever its size', async () => {
    const limited = await createTestOrg(stack.pool, { write: 2 });
    const user = await createTestUser(stack.pool, limited.organizationId);
    const limitedCall = apiClient(stack.url, limited.apiKey);
    const batch = items(100, { user_id: user });
    const response = await limitedCall('POST', '/intent/batch', { intents: batch }, batchKey());
    expect(response.status).toBe(200);
    expect((response.body.data as Body[]).every((slot) => slot.status === 200)).toBe(true);
    expect((await limitedCall('POST', '/intent', cashIn({ user_id: user }), { 'X-Idempotency-Key': key() })).status).toBe(200);
    expect((await limitedCall('POST', '/intent', cashIn({ user_id: user }), { 'X-Idempotency-Key': key() })).status).toBe(429);
  });

  /** The statements the batch's own connection sent from its BEGIN to its COMMIT: one round trip each. */
  async function roundTripsOf(body: unknown): Promise<number> {
    const sent = await statementsSent(async () => {
      expect((await call('POST', '/intent/batch', body, batchKey())).status).toBe(200);
    });
    return roundTripsAround(sent, 'INSERT INTO intents');
  }

  it('commits in the same few round trips for 1 item as for 100', async () => {
    const one = await roundTripsOf({ intents: items(1) });
    const hundred = await roundTripsOf({
      intents: [...items(97), ...items(1, { user_id: suspendedUser }), ...items(2, { direction: 'cash_out', approval_mode: 'manual' })],
    });
    expect(hundred).toBe(one);
    // BEGIN with the batch key's lock and its stored answer, the item keys' locks, their stored answers, users and
    // accounts, the limits' use rows locked and counted (SPEC §26; a decline over a limit gives back in one more),
    // the intents with their transactions, the item answers with the decision events, the batch's answer, COMMIT:
    // 9 (11 before issue 37's folding).
    expect(hundred).toBe(9);
  });
});
