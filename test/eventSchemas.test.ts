import { WEBHOOK_EVENT_TYPES } from '../src/webhooks/schemas';
import { apiClient, createTestOrg, eventually, startStack, type Stack } from './support/harness';
import { approvedCashIn, idempotencyKey, userBody } from './support/payments';
import { Receiver } from './support/receiver';
import { eventDepartures } from './support/eventSchemas';

/**
 * Every event type the service sends, made by the API as an operator would, held to the document's schema for
 * its type: as GET /event returns it and as the webhook POSTs it. The schema is found through WebhookEvent's
 * discriminator mapping, so a type the mapping lacks, or data of another shape, fails here.
 */

interface Event {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

const DAY_MS = 24 * 60 * 60_000;

/**
 * The ACH rail's event types come from a bank's return and NOC files, which this suite's sandbox API cannot
 * make: test/ach.returns.test.ts makes them and holds each to its schema the same way.
 */
const ACH_EVENT_TYPES = new Set([
  'ach_entry.returned',
  'ach.transfer_returned',
  'ach.return_rate_exceeded',
  'bank_account.disabled',
  'bank_account.updated',
]);
const MADE_HERE = WEBHOOK_EVENT_TYPES.filter((type) => !ACH_EVENT_TYPES.has(type));

let stack: Stack;
let receiver: Receiver;
let call: ReturnType<typeof apiClient>;
let documentTypes: string[];
let departures: (event: unknown) => string[];

beforeAll(async () => {
  receiver = await Receiver.start();
  stack = await startStack({
    env: { WEBHOOK_SECRET_KEY: Buffer.alloc(32, 9).toString('base64'), WEBHOOK_DISPATCHER: 'on', WEBHOOK_DISPATCH_INTERVAL_MS: '50' },
  });
  const org = await createTestOrg(stack.pool);
  call = apiClient(stack.url, org.apiKey);
  ({ types: documentTypes, departures } = await eventDepartures(stack.url));
}, 120_000);
afterAll(async () => {
  await stack.stop();
  await receiver.close();
});

async function post(path: string, body: unknown, status = 200): Promise<Record<string, any>> {
  const response = await call('POST', path, body, idempotencyKey());
  if (response.status !== status) throw new Error(`POST ${path}: ${response.status} ${response.text}`);
  return response.body;
}

/** Makes each event type happen once at least: users, limits, self-exclusion, intents, refunds, disputes, settlement. */
async function everyEventType(): Promise<void> {
  const user = await post('/user', userBody());
  await post(`/user/${user.id}`, { metadata: { crm_id: 'crm-1' } });
  expect((await call('PUT', `/user/${user.id}/limits`, { cash_in: { day: 500_000 } })).status).toBe(200);
  const intent = await approvedCashIn(call, user.id, 5_000);
  await post(`/intent/${intent.id}`, { metadata: { order: 'o-1' } });
  const transactionId = intent.transactions[0]!.id;
  await post(`/simulate/transaction/${transactionId}/confirm`, {});
  await eventually(async () => ((await call('GET', `/transaction/${transactionId}`)).body.status === 'available' ? true : undefined));
  await post('/refund', { intent_id: intent.id, amount: 500 });
  const dispute = await post('/simulate/dispute', { intent_id: (await approvedCashIn(call, user.id, 700)).id, code: 'R10' });
  await post(`/simulate/dispute/${dispute.id}/resolve`, { result: 'won' });
  await post('/simulate/settlement', {});
  const transferId = await eventually(async () => (await call('GET', '/transfer')).body.data[0]?.id as string | undefined);
  await post(`/simulate/transfer/${transferId}/settle`, {});

  const suspended = await post('/user', userBody());
  await post(`/simulate/user/${suspended.id}/suspend`, {});
  expect((await post('/intent', { direction: 'cash_out', user_id: suspended.id, amount: 100, currency: 'USD' })).status).toBe('declined');
  const excluded = await post('/user', userBody());
  await post(`/user/${excluded.id}/self_exclusion`, { until: new Date(Date.now() + 2 * DAY_MS).toISOString() });
}

/** Every event of the organization, oldest first, read page by page. */
async function allEvents(): Promise<Event[]> {
  const events: Event[] = [];
  let cursor: string | null = null;
  do {
    const page: { body: { data: Event[]; next_cursor: string | null } } = await call(
      'GET',
      `/event?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
    );
    events.push(...page.body.data);
    cursor = page.body.next_cursor;
  } while (cursor);
  return events.reverse();
}

describe('issue 36: each event type’s payload is the one the document gives for its type', () => {
  test('the discriminator maps every event type the service knows, and no other', () => {
    expect([...documentTypes].sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort());
  });

  test('a payload of one type with another type’s data does not fit', () => {
    const transaction = { id: 'txn_1', amount: 100, status: 'pending' };
    expect(departures({ id: 'evt_1', type: 'user.created', created_at: new Date().toISOString(), data: transaction })).not.toEqual([]);
  });

  test('every type, as GET /event returns it and as the webhook delivers it, fits its schema', async () => {
    expect((await call('POST', '/webhook', { url: receiver.url })).status).toBe(200);
    await everyEventType();
    const events = await eventually(
      async () => {
        const all = await allEvents();
        return MADE_HERE.every((type) => all.some((event) => event.type === type)) ? all : undefined;
      },
      60_000,
      'every event type in GET /event',
    );
    expect(events.flatMap(departures)).toEqual([]);
    const delivered = await eventually(
      async () => {
        const bodies = receiver.requests.map((request) => JSON.parse(request.body) as Event);
        return events.every((event) => bodies.some((body) => body.id === event.id)) ? bodies : undefined;
      },
      60_000,
      'every event delivered',
    );
    expect(new Set(delivered.map((event) => event.type))).toEqual(new Set(MADE_HERE));
    expect(delivered.flatMap(departures)).toEqual([]);
  }, 180_000);
});
