import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  AuthenticationError,
  IdempotencyError,
  InvalidRequestError,
  Ledger,
  LedgerError,
  WebhookVerificationError,
  type Schemas,
} from '@payments-ledger/sdk';
import { isRetryableStatus, retryAfterMs, retryDelayMs } from '../sdk/src/retry';
import { randomString } from '../src/ids';
import { createTestOrg, eventually, startStack, type Stack, type TestOrg } from './support/harness';
import { userBody } from './support/payments';
import { Receiver } from './support/receiver';

/** The outbox polled quickly so a delivery arrives in milliseconds (as in test/webhooks.test.ts). */
const DELIVERY_ENV = {
  WEBHOOK_SECRET_KEY: Buffer.alloc(32, 9).toString('base64'),
  WEBHOOK_DISPATCHER: 'on',
  WEBHOOK_DISPATCH_INTERVAL_MS: '50',
  WEBHOOK_RETRY_INITIAL_MS: '100',
  WEBHOOK_RETRY_MAX_MS: '400',
};

let stack: Stack;
let org: TestOrg;
let ledger: Ledger;

beforeAll(async () => {
  stack = await startStack({ env: DELIVERY_ENV });
  org = await createTestOrg(stack.pool, { write: 10_000, read: 10_000 });
  ledger = new Ledger({ apiKey: org.apiKey, baseUrl: stack.url });
});
afterAll(async () => {
  await stack.stop();
});

function newUser(): Promise<Schemas['UserCreated']> {
  return ledger.users.create(userBody() as Schemas['UserCreateRequest']);
}

describe('SPEC §22 SDK against the running service', () => {
  test('creates a user and an intent, and retrieves both, typed from the document', async () => {
    const user = await newUser();
    expect(user.id).toMatch(/^user_/);
    const retrieved = await ledger.users.retrieve(user.id);
    expect(retrieved).toMatchObject({ id: user.id, status: 'enabled' });

    const intent = await ledger.intents.create({ direction: 'cash_in', user_id: user.id, amount: 1_234, currency: 'USD' });
    expect(intent).toMatchObject({ status: 'approved', amount: 1_234, user_id: user.id });
    const transaction = await ledger.transactions.retrieve(intent.transactions[0]!.id);
    expect(transaction).toMatchObject({ id: intent.transactions[0]!.id, amount: 1_234, status: 'pending' });
  });

  test("a POST without an idempotency key gets a generated one; with the caller's key a repeat replays the first answer", async () => {
    const user = await newUser();
    const body = { direction: 'cash_in' as const, user_id: user.id, amount: 500, currency: 'USD' as const };
    const key = `sdk-${randomString(12)}`;
    const a = await ledger.intents.create(body, { idempotencyKey: key });
    const b = await ledger.intents.create(body, { idempotencyKey: key });
    expect(b.id).toBe(a.id);
    const generated = await ledger.intents.create(body);
    expect(generated.idempotency_key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(generated.id).not.toBe(a.id);
  });

  test('for await over a list walks every page, each item once, newest first; awaiting it gives the first page', async () => {
    const user = await newUser();
    const made: string[] = [];
    for (let i = 0; i < 7; i += 1) {
      const intent = await ledger.intents.create({ direction: 'cash_in', user_id: user.id, amount: 100 + i, currency: 'USD' });
      made.push(intent.transactions[0]!.id);
    }
    const seen: string[] = [];
    for await (const transaction of ledger.transactions.list({ user_id: user.id, limit: 3 })) seen.push(transaction.id);
    expect(seen).toEqual([...made].reverse());

    const first = await ledger.transactions.list({ user_id: user.id, limit: 3 });
    expect(first.data.map((t) => t.id)).toEqual(seen.slice(0, 3));
    expect(first.has_more).toBe(true);
    const pages: number[] = [];
    for await (const page of ledger.transactions.list({ user_id: user.id, limit: 3 }).pages()) pages.push(page.data.length);
    expect(pages).toEqual([3, 3, 1]);
  });

  test('errors are LedgerError subclasses by type, with status, code, param and the request id', async () => {
    const missing = await ledger.transactions.retrieve('txn_doesnotexist0000000000').catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(InvalidRequestError);
    expect(missing).toBeInstanceOf(LedgerError);
    expect(missing).toMatchObject({ status: 404, type: 'invalid_request_error', code: 'not_found' });
    expect((missing as LedgerError).requestId).toMatch(/^req_/);

    const invalid = await ledger.users
      .create(userBody((b) => (b.government_id.last4 = '12')) as Schemas['UserCreateRequest'])
      .catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(InvalidRequestError);
    expect(invalid).toMatchObject({ status: 400, code: 'validation_failed', param: 'government_id.last4' });

    const user = await newUser();
    const key = `sdk-${randomString(12)}`;
    await ledger.intents.create({ direction: 'cash_in', user_id: user.id, amount: 1, currency: 'USD' }, { idempotencyKey: key });
    const reused = await ledger.intents
      .create({ direction: 'cash_in', user_id: user.id, amount: 2, currency: 'USD' }, { idempotencyKey: key })
      .catch((e: unknown) => e);
    expect(reused).toBeInstanceOf(IdempotencyError);
    expect(reused).toMatchObject({ status: 422, code: 'idempotency_key_reused' });

    const stranger = new Ledger({ apiKey: 'sk_sandbox_notakey0000000000000000', baseUrl: stack.url });
    const unauthenticated = await stranger.accounts.list().catch((e: unknown) => e);
    expect(unauthenticated).toBeInstanceOf(AuthenticationError);
    expect(unauthenticated).toMatchObject({ status: 401, code: 'unauthenticated' });
  });

  test('webhooks.verify accepts a delivery the service really sent and returns the typed event; a tampered one throws', async () => {
    const receiver = await Receiver.start();
    try {
      const hookOrg = await createTestOrg(stack.pool);
      const hooks = new Ledger({ apiKey: hookOrg.apiKey, baseUrl: stack.url });
      const endpoint = await hooks.webhooks.create({ url: receiver.url, events: ['user.created'] });
      const user = await hooks.users.create(userBody() as Schemas['UserCreateRequest']);
      const delivery = await eventually(
        async () => receiver.requests.find((request) => request.body.includes(user.id)),
        20_000,
        'the user.created delivery',
      );
      const event = hooks.webhooks.verify(delivery.body, delivery.headers, endpoint.secret);
      expect(event).toMatchObject({ type: 'user.created', data: { id: user.id } });
      expect(event.id).toBe(delivery.headers['webhook-id']);
      expect(() => hooks.webhooks.verify(delivery.body.replace(user.id, 'user_forged'), delivery.headers, endpoint.secret)).toThrow(
        WebhookVerificationError,
      );
    } finally {
      await receiver.close();
    }
  });
});

/** A local HTTP server standing in for the API: answers each request with the next of `answers`. */
async function standIn(answers: Array<{ status: number; headers?: Record<string, string>; body: unknown }>) {
  const seen: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    req.on('end', () => {
      const answer = answers[Math.min(seen.length - 1, answers.length - 1)]!;
      res.writeHead(answer.status, { 'Content-Type': 'application/json', 'X-Request-Id': `req_standin${seen.length}`, ...answer.headers });
      res.end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe("SPEC §22 the README's quickstart (sdk/examples/quickstart.ts)", () => {
  test('runs as the README says against a stack: a user, an approved intent, its transaction, the user.created webhook verified', async () => {
    const quickOrg = await createTestOrg(stack.pool);
    const root = path.resolve(__dirname, '..');
    // The README shows the file itself, so the two cannot drift.
    expect(readFileSync(path.join(root, 'README.md'), 'utf8')).toContain(
      readFileSync(path.join(root, 'sdk', 'examples', 'quickstart.ts'), 'utf8').trim(),
    );
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'), 'sdk/examples/quickstart.ts'],
      { cwd: root, env: { ...process.env, LEDGER_API_KEY: quickOrg.apiKey, LEDGER_URL: stack.url }, timeout: 50_000 },
    );
    expect(stderr).toBe('');
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^intent intent_\S+ approved$/);
    expect(lines[1]).toMatch(/^transaction txn_\S+ pending 1250$/);
    expect(lines[2]).toMatch(/^webhook user\.created user_\S+ enabled$/);
  });
});

describe('SPEC §22 SDK retries', () => {
  test('what is retried, and the wait: Retry-After (seconds or a date) plus at most 10 %, else exponential backoff with jitter', () => {
    expect([429, 500, 502, 503].every((status) => isRetryableStatus(status, 'x'))).toBe(true);
    expect(isRetryableStatus(409, 'idempotency_request_in_progress')).toBe(true);
    expect([400, 401, 403, 404, 422].some((status) => isRetryableStatus(status, 'x'))).toBe(false);
    expect(isRetryableStatus(409, 'invalid_state')).toBe(false);
    expect(retryAfterMs('2')).toBe(2_000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 7_000)).toBe(3_000);
    expect(retryAfterMs(null)).toBeUndefined();
    expect(retryDelayMs(0, 2_000, () => 0)).toBe(2_000);
    expect(retryDelayMs(0, 2_000, () => 0.999)).toBe(2_199);
    expect([0, 1, 2, 3, 10].map((retry) => retryDelayMs(retry, undefined, () => 0))).toEqual([250, 500, 1_000, 2_000, 4_000]);
    expect([0, 1, 2, 3, 10].map((retry) => retryDelayMs(retry, undefined, () => 0.999))).toEqual([499, 999, 1_999, 3_998, 7_996]);
  });

  const unavailable = {
    status: 503,
    headers: { 'Retry-After': '1' },
    body: { error: { type: 'api_error', code: 'unavailable', message: 'busy', request_id: 'req_standin' } },
  };

  test('a 503 with Retry-After is retried after it, with the same X-Idempotency-Key on both attempts', async () => {
    const server = await standIn([unavailable, { status: 200, body: { id: 'user_standin' } }]);
    try {
      const client = new Ledger({ apiKey: 'sk_sandbox_x', baseUrl: server.url });
      const startedMs = Date.now();
      const created = await client.users.create(userBody() as Schemas['UserCreateRequest']);
      expect(created).toEqual({ id: 'user_standin' });
      expect(server.seen).toHaveLength(2);
      expect(server.seen[0]!['x-idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
      expect(server.seen[1]!['x-idempotency-key']).toBe(server.seen[0]!['x-idempotency-key']);
      // Retry-After: 1 was honoured: the second attempt came no sooner than a second after the first began.
      expect(Date.now() - startedMs).toBeGreaterThanOrEqual(1_000);
    } finally {
      await server.close();
    }
  });

  test('after maxRetries the last error is thrown; a 4xx other than 409 in progress and 429 is not retried', async () => {
    const busy = await standIn([{ ...unavailable, headers: { 'Retry-After': '0' } }]);
    const invalid = await standIn([
      { status: 400, body: { error: { type: 'invalid_request_error', code: 'validation_failed', message: 'no' } } },
    ]);
    try {
      const error = await new Ledger({ apiKey: 'k', baseUrl: busy.url, maxRetries: 1 }).accounts.list().catch((e: unknown) => e);
      expect(error).toMatchObject({ status: 503, code: 'unavailable' });
      expect(busy.seen).toHaveLength(2);
      const refused = await new Ledger({ apiKey: 'k', baseUrl: invalid.url }).accounts.list().catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(InvalidRequestError);
      expect((refused as LedgerError).requestId).toBe('req_standin1');
      expect(invalid.seen).toHaveLength(1);
    } finally {
      await busy.close();
      await invalid.close();
    }
  });
});
