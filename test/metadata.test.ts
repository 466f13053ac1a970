import fc from 'fast-check';
import { randomString } from '../src/ids';
import { apiClient, createTestOrg, createTestUser, startStack, type ApiResponse, type Stack, type TestOrg } from './support/harness';
import { approvedCashIn, eventsAbout, idempotencyKey, userBody, type Body } from './support/payments';

let stack: Stack;
let org: TestOrg;
let call: ReturnType<typeof apiClient>;
let userId: string;

beforeAll(async () => {
  // No worker: nothing here waits on a lifecycle, and intents only need their workflows started.
  stack = await startStack({ worker: false });
  org = await createTestOrg(stack.pool, { write: 100_000, read: 100_000 });
  call = apiClient(stack.url, org.apiKey);
  userId = await createTestUser(stack.pool, org.organizationId);
});
afterAll(async () => {
  await stack.stop();
});

const ROUTING = '322271627';
const ACCOUNT = '987654321012';

/** A run-unique value, so filters in one test never see another test's rows. */
const unique = (prefix: string) => `${prefix}-${randomString(12)}`;

async function bankToken(): Promise<string> {
  const created = await call(
    'POST',
    '/token',
    { user_id: userId, bank_account: { routing_number: ROUTING, account_number: ACCOUNT } },
    idempotencyKey(),
  );
  expect(created.status).toBe(200);
  return created.body.id as string;
}

/** What each create endpoint needs besides `metadata`, and the table its resource lands in. */
const creates: Array<{ endpoint: string; table: string; body: () => Promise<Body> }> = [
  { endpoint: '/user', table: 'users', body: async () => userBody() },
  { endpoint: '/intent', table: 'intents', body: async () => ({ direction: 'cash_in', user_id: userId, amount: 500, currency: 'USD' }) },
  {
    endpoint: '/authorize',
    table: 'intents',
    body: async () => ({ token: await bankToken(), amount: 700, currency: 'USD', direction: 'cash_in' }),
  },
  { endpoint: '/refund', table: 'refunds', body: async () => ({ intent_id: (await approvedCashIn(call, userId, 900)).id, amount: 100 }) },
];

async function rowCount(table: string): Promise<number> {
  const { rows } = await stack.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE organization_id = $1`, [
    org.organizationId,
  ]);
  return rows[0]!.n;
}

/** The resource a create answered with: POST /user answers `{ id }` only. */
async function created(endpoint: string, response: ApiResponse): Promise<Body> {
  expect(response.status).toBe(200);
  return endpoint === '/user' ? (await call('GET', `/user/${response.body.id}`)).body : response.body;
}

function keys(count: number, prefix = 'k'): Record<string, string> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`${prefix}${i}`, `v${i}`]));
}

function expectParam(response: ApiResponse, param: string): void {
  expect(response.status).toBe(400);
  expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'validation_failed', param });
}

describe('SPEC §18 metadata on create: POST /user, /intent, /authorize, /refund', () => {
  test.each(creates)('$endpoint stores the metadata and returns it; GET returns the same', async ({ endpoint, body }) => {
    const metadata = { order_id: unique('order'), 'Channel-2': 'web', x: '' };
    const resource = await created(endpoint, await call('POST', endpoint, { ...(await body()), metadata }, idempotencyKey()));
    expect(resource.metadata).toEqual(metadata);
    const path = endpoint === '/authorize' ? '/intent' : endpoint;
    expect((await call('GET', `${path}/${resource.id}`)).body).toEqual(resource);
  });

  test('any metadata text (quotes, backslashes, `$1`, any Unicode) is stored, answered and replayed byte for byte', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary', maxLength: 120 }).filter((s) => !s.includes('\u0000')),
        async (value) => {
          const metadata = { note: `'\\$1 ${value}`, order_id: unique('order') };
          const key = idempotencyKey();
          const first = await call(
            'POST',
            '/intent',
            { direction: 'cash_in', user_id: userId, amount: 500, currency: 'USD', metadata },
            key,
          );
          expect([first.status, first.body.metadata]).toEqual([200, metadata]);
          const again = await call(
            'POST',
            '/intent',
            { direction: 'cash_in', user_id: userId, amount: 500, currency: 'USD', metadata },
            key,
          );
          expect([again.headers.get('idempotent-replayed'), again.text]).toEqual(['true', first.text]);
        },
      ),
      { numRuns: 25 },
    );
  });

  test.each(creates)('$endpoint without metadata returns metadata: {}', async ({ endpoint, body }) => {
    const resource = await created(endpoint, await call('POST', endpoint, await body(), idempotencyKey()));
    expect(resource.metadata).toEqual({});
  });

  test.each(creates)(
    '$endpoint accepts the limits exactly: 20 keys, 40-character keys, 500-character values',
    async ({ endpoint, body }) => {
      const metadata = { ...keys(19), ['K'.repeat(40)]: 'v'.repeat(500) };
      const resource = await created(endpoint, await call('POST', endpoint, { ...(await body()), metadata }, idempotencyKey()));
      expect(resource.metadata).toEqual(metadata);
    },
  );

  const bad: Array<[string, unknown, string]> = [
    ['21 keys (the 21st is named)', keys(21), 'metadata.k20'],
    ['a key with a dot', { 'a.b': 'x' }, 'metadata.a.b'],
    ['a key with a space', { 'a b': 'x' }, 'metadata.a b'],
    ['an empty key', { '': 'x' }, 'metadata.'],
    ['a 41-character key', { ['k'.repeat(41)]: 'x' }, `metadata.${'k'.repeat(41)}`],
    ['a non-ASCII key', { clé: 'x' }, 'metadata.clé'],
    ['the key __proto__, which no JavaScript object can hold as data', { ['__proto__']: 'x' }, 'metadata.__proto__'],
    ['a 501-character value', { note: 'v'.repeat(501) }, 'metadata.note'],
    ['a number value', { count: 3 }, 'metadata.count'],
    ['a boolean value', { flag: true }, 'metadata.flag'],
    ['a null value', { gone: null }, 'metadata.gone'],
    ['a nested object', { nested: { a: 'b' } }, 'metadata.nested'],
    ['an array value', { list: ['a'] }, 'metadata.list'],
    ['an array instead of an object', ['a'], 'metadata'],
    ['a string instead of an object', 'order-1', 'metadata'],
  ];
  for (const { endpoint, table, body } of creates) {
    test.each(bad)(`${endpoint} refuses %s: 400 naming the key, nothing created`, async (_name, metadata, param) => {
      const valid = await body();
      const before = await rowCount(table);
      expectParam(await call('POST', endpoint, { ...valid, metadata }, idempotencyKey()), param);
      expect(await rowCount(table)).toBe(before);
    });
  }
});

async function newUser(metadata: Record<string, string> = {}): Promise<Body> {
  return created(
    '/user',
    await call(
      'POST',
      '/user',
      userBody((b) => (b.metadata = metadata)),
      idempotencyKey(),
    ),
  );
}

async function newIntent(metadata: Record<string, string> = {}, extra: Body = {}): Promise<Body> {
  const body = { direction: 'cash_in', user_id: userId, amount: 300, currency: 'USD', metadata, ...extra };
  return created('/intent', await call('POST', '/intent', body, idempotencyKey()));
}

const updates = [
  { resource: 'user', create: newUser, event: 'user.updated' },
  { resource: 'intent', create: newIntent, event: 'intent.updated' },
];

describe('SPEC §18 update: POST /user/{id} and POST /intent/{id} merge metadata', () => {
  test.each(updates)('POST /$resource/{id} sets, replaces and deletes keys, keeps the rest, and emits $event', async (u) => {
    const before = await u.create({ keep: 'kept', replace: 'old', drop: 'doomed' });
    const response = await call(
      'POST',
      `/${u.resource}/${before.id}`,
      { metadata: { replace: 'new', drop: null, add: 'added' } },
      idempotencyKey(),
    );
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...before, metadata: { keep: 'kept', replace: 'new', add: 'added' } });
    expect((await call('GET', `/${u.resource}/${before.id}`)).body).toEqual(response.body);
    expect(await eventsAbout(stack, org.organizationId, u.event, before.id)).toEqual([response.body]);
  });

  test.each(updates)('POST /$resource/{id} checks the limit on the merged result and changes nothing when over it', async (u) => {
    const before = await u.create(keys(19));
    const over = await call('POST', `/${u.resource}/${before.id}`, { metadata: { extra1: 'a', extra2: 'b' } }, idempotencyKey());
    expectParam(over, 'metadata.extra2');
    expect((await call('GET', `/${u.resource}/${before.id}`)).body).toEqual(before);
    expect(await eventsAbout(stack, org.organizationId, u.event, before.id)).toEqual([]);
    // Deleting one key makes room for one more: the limit is on the result.
    const swapped = await call(
      'POST',
      `/${u.resource}/${before.id}`,
      { metadata: { k0: null, extra1: 'a', extra2: 'b' } },
      idempotencyKey(),
    );
    expect(swapped.status).toBe(200);
    expect(Object.keys(swapped.body.metadata)).toHaveLength(20);
  });

  test.each(updates)('POST /$resource/{id} refuses malformed metadata naming the key, and a body without metadata', async (u) => {
    const before = await u.create({ a: '1' });
    for (const [metadata, param] of [
      [{ 'bad key': 'x' }, 'metadata.bad key'],
      [{ a: 2 }, 'metadata.a'],
      [{ a: { b: 'c' } }, 'metadata.a'],
      [{ a: 'v'.repeat(501) }, 'metadata.a'],
    ] as const) {
      expectParam(await call('POST', `/${u.resource}/${before.id}`, { metadata }, idempotencyKey()), param);
    }
    expectParam(await call('POST', `/${u.resource}/${before.id}`, {}, idempotencyKey()), 'metadata');
    expectParam(await call('POST', `/${u.resource}/${before.id}`, { metadata: {}, status: 'disabled' }, idempotencyKey()), '(body)');
    expect((await call('GET', `/${u.resource}/${before.id}`)).body).toEqual(before);
  });

  test.each(updates)("POST /$resource/{id} of an unknown or another organization's id is 404, and changes nothing", async (u) => {
    const other = await createTestOrg(stack.pool);
    const otherCall = apiClient(stack.url, other.apiKey);
    const theirs =
      u.resource === 'user'
        ? (await otherCall('POST', '/user', userBody(), idempotencyKey())).body.id
        : (
            await otherCall(
              'POST',
              '/intent',
              { direction: 'cash_in', user_id: await createTestUser(stack.pool, other.organizationId), amount: 100, currency: 'USD' },
              idempotencyKey(),
            )
          ).body.id;
    for (const id of [theirs, `${u.resource}_${randomString(24)}`]) {
      const response = await call('POST', `/${u.resource}/${id}`, { metadata: { a: 'b' } }, idempotencyKey());
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('not_found');
    }
    expect((await otherCall('GET', `/${u.resource}/${theirs}`)).body.metadata).toEqual({});
  });

  test.each(updates)('POST /$resource/{id} is idempotent: the same key replays the answer, one event only', async (u) => {
    const before = await u.create();
    const headers = idempotencyKey();
    const first = await call('POST', `/${u.resource}/${before.id}`, { metadata: { n: '1' } }, headers);
    // Another update between the two: a replay answers what the first request answered, not the current state.
    await call('POST', `/${u.resource}/${before.id}`, { metadata: { n: '2' } }, idempotencyKey());
    const again = await call('POST', `/${u.resource}/${before.id}`, { metadata: { n: '1' } }, headers);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    expect(await eventsAbout(stack, org.organizationId, u.event, before.id)).toHaveLength(2);
  });

  test('an intent of any status can be updated, and its money and status stay as they were', async () => {
    const suspended = await createTestUser(stack.pool, org.organizationId, 'suspended');
    const declined = await newIntent({}, { user_id: suspended });
    expect(declined.status).toBe('declined');
    const approved = await newIntent();
    for (const intent of [declined, approved]) {
      const updated = await call('POST', `/intent/${intent.id}`, { metadata: { note: 'checked' } }, idempotencyKey());
      expect(updated.body).toEqual({ ...intent, metadata: { note: 'checked' } });
    }
  });

  test('webhooks can subscribe to user.updated and intent.updated', async () => {
    const created = await call('POST', '/webhook', {
      url: 'https://operator.example.invalid/hooks',
      events: ['user.updated', 'intent.updated'],
    });
    expect(created.status).toBe(200);
    expect(created.body.events).toEqual(['user.updated', 'intent.updated']);
  });
});

/** GET `path` with `metadata[KEY]=VALUE` for each filter, plus any other parameters; every page's ids. */
async function idsOf(path: string, params: Record<string, string>, apiCall = call): Promise<string[]> {
  const query = new URLSearchParams(params).toString();
  const response = await apiCall('GET', `${path}?${query}`);
  expect(response.status).toBe(200);
  expect(response.body.has_more).toBe(false);
  return (response.body.data as Body[]).map((item) => item.id as string);
}

const byMetadata = (filters: Record<string, string>) => Object.fromEntries(Object.entries(filters).map(([k, v]) => [`metadata[${k}]`, v]));

describe('SPEC §18 filters: metadata[KEY]=VALUE on GET /user, /intent, /refund, /transaction', () => {
  test('GET /user: exact match, several keys AND together, newest first', async () => {
    const team = unique('team');
    const gold = await newUser({ team, tier: 'gold' });
    const silver = await newUser({ team, tier: 'silver' });
    await newUser({ team: `${team}x`, tier: 'gold' });
    await newUser({ team: team.toUpperCase(), tier: 'gold' });
    expect(await idsOf('/user', byMetadata({ team }))).toEqual([silver.id, gold.id]);
    expect(await idsOf('/user', byMetadata({ team, tier: 'gold' }))).toEqual([gold.id]);
    expect(await idsOf('/user', byMetadata({ team, tier: 'gol' }))).toEqual([]);
    expect(await idsOf('/user', { ...byMetadata({ team }), status: 'enabled', limit: '5' })).toEqual([silver.id, gold.id]);
  });

  test('GET /intent: exact match, AND, and paging through the filtered list', async () => {
    const batch = unique('batch');
    const ids = [];
    for (let i = 0; i < 3; i += 1) ids.push((await newIntent({ batch, index: String(i) })).id);
    expect(await idsOf('/intent', byMetadata({ batch }))).toEqual([...ids].reverse());
    expect(await idsOf('/intent', byMetadata({ batch, index: '1' }))).toEqual([ids[1]]);
    const first = await call('GET', `/intent?metadata[batch]=${batch}&limit=2`);
    expect(first.body.data.map((i: Body) => i.id)).toEqual([ids[2], ids[1]]);
    const second = await call('GET', `/intent?metadata%5Bbatch%5D=${batch}&limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body).toMatchObject({ has_more: false, next_cursor: null });
    expect(second.body.data.map((i: Body) => i.id)).toEqual([ids[0]]);
  });

  test('GET /refund: exact match and AND', async () => {
    const rma = unique('rma');
    const intent = await approvedCashIn(call, userId, 1000);
    const refund = async (metadata: Record<string, string>) =>
      (await call('POST', '/refund', { intent_id: intent.id, amount: 100, metadata }, idempotencyKey())).body;
    const a = await refund({ rma, reason: 'damaged' });
    const b = await refund({ rma, reason: 'late' });
    expect(await idsOf('/refund', byMetadata({ rma }))).toEqual([b.id, a.id]);
    expect(await idsOf('/refund', byMetadata({ rma, reason: 'late' }))).toEqual([b.id]);
    expect(await idsOf('/refund', { ...byMetadata({ rma }), intent_id: intent.id })).toEqual([b.id, a.id]);
  });

  test("GET /transaction finds transactions through their source's metadata (intent and refund), AND of keys", async () => {
    const order = unique('order');
    const intent = await newIntent({ order, kind: 'sale' });
    const otherIntent = await newIntent({ order: `${order}-2`, kind: 'sale' });
    const refund = (
      await call('POST', '/refund', { intent_id: intent.id, amount: 50, metadata: { order, kind: 'return' } }, idempotencyKey())
    ).body;
    expect(await idsOf('/transaction', byMetadata({ order }))).toEqual([refund.transaction.id, intent.transactions[0].id]);
    expect(await idsOf('/transaction', byMetadata({ order, kind: 'return' }))).toEqual([refund.transaction.id]);
    expect(await idsOf('/transaction', { ...byMetadata({ order }), type: 'intent' })).toEqual([intent.transactions[0].id]);
    expect(await idsOf('/transaction', byMetadata({ order: `${order}-2` }))).toEqual([otherIntent.transactions[0].id]);
    // The transaction keeps exactly the seed's fields: the metadata stays on its source.
    const txn = (await call('GET', `/transaction?metadata[order]=${order}&limit=1`)).body.data[0];
    expect(Object.keys(txn).sort()).toEqual(
      ['account_id', 'amount', 'created_at', 'currency', 'date', 'direction', 'id', 'source_id', 'status', 'transfer', 'type'].sort(),
    );
  });

  test('GET /transaction?user_id= returns the transactions of the user: its intents and their refunds and disputes', async () => {
    const mine = await createTestUser(stack.pool, org.organizationId);
    const intent = await approvedCashIn(call, mine, 1000);
    const refund = (await call('POST', '/refund', { intent_id: intent.id, amount: 200 }, idempotencyKey())).body;
    const dispute = (await call('POST', '/simulate/dispute', { intent_id: intent.id, code: '10.4' }, idempotencyKey())).body;
    expect(dispute.transactions).toHaveLength(1);
    await approvedCashIn(call, userId, 1000);
    expect(await idsOf('/transaction', { user_id: mine })).toEqual([
      dispute.transactions[0].id,
      refund.transaction.id,
      intent.transactions[0]!.id,
    ]);
    expect(await idsOf('/transaction', { user_id: mine, type: 'refund' })).toEqual([refund.transaction.id]);
    expect(await idsOf('/transaction', { user_id: `user_${randomString(24)}` })).toEqual([]);
  });

  test("filters never reach another organization's resources", async () => {
    const other = await createTestOrg(stack.pool, { write: 1000, read: 1000 });
    const otherCall = apiClient(stack.url, other.apiKey);
    const otherUserId = await createTestUser(stack.pool, other.organizationId);
    const shared = { campaign: unique('shared') };
    const ours = { user: await newUser(shared), intent: await newIntent(shared) };
    const theirsUser = (
      await otherCall(
        'POST',
        '/user',
        userBody((b) => (b.metadata = shared)),
        idempotencyKey(),
      )
    ).body.id;
    const theirsIntent = (
      await otherCall(
        'POST',
        '/intent',
        { direction: 'cash_in', user_id: otherUserId, amount: 100, currency: 'USD', metadata: shared },
        idempotencyKey(),
      )
    ).body;
    expect(await idsOf('/user', byMetadata(shared))).toEqual([ours.user.id]);
    expect(await idsOf('/intent', byMetadata(shared))).toEqual([ours.intent.id]);
    expect(await idsOf('/transaction', byMetadata(shared))).toEqual([ours.intent.transactions[0].id]);
    expect(await idsOf('/user', byMetadata(shared), otherCall)).toEqual([theirsUser]);
    expect(await idsOf('/intent', byMetadata(shared), otherCall)).toEqual([theirsIntent.id]);
    expect(await idsOf('/transaction', { user_id: otherUserId })).toEqual([]);
    expect(await idsOf('/transaction', { user_id: otherUserId }, otherCall)).toEqual([theirsIntent.transactions[0].id]);
  });

  test.each(['/user', '/intent', '/refund', '/transaction'])('GET %s refuses a malformed filter naming metadata.<key>', async (path) => {
    expectParam(await call('GET', `${path}?metadata[bad.key]=1`), 'metadata.bad.key');
    expectParam(await call('GET', `${path}?metadata[${'k'.repeat(41)}]=1`), `metadata.${'k'.repeat(41)}`);
    expectParam(await call('GET', `${path}?metadata[a]=${'v'.repeat(501)}`), 'metadata.a');
    expectParam(await call('GET', `${path}?metadata[a]=1&metadata[a]=2`), 'metadata.a');
    expectParam(await call('GET', `${path}?metadata[a][b]=1`), 'metadata[a][b]');
    expectParam(await call('GET', `${path}?metadata=1`), 'metadata');
    expectParam(await call('GET', `${path}?${Array.from({ length: 21 }, (_, i) => `metadata[k${i}]=v`).join('&')}`), 'metadata.k20');
  });
});
