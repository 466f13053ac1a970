import { Writable } from 'node:stream';
import { DateTime } from 'luxon';
import type { Clock } from '../src/http/route';
import { randomString } from '../src/ids';
import { createLogger } from '../src/logger';
import { abaValid, cardBrand, cardExpired, luhnValid } from '../src/tokens/checks';
import { apiClient, createTestOrg, createTestUser, startStack, type ApiResponse, type Stack, type TestOrg } from './support/harness';
import { exampleMismatches, expectDocumented } from './support/openapi';
import { workflowRunning } from './support/payments';

const NY = 'America/New_York';

/** startStack's stack whose logger writes every line (level trace) into `lines`, on an adjustable clock. */
async function startLoggedStack(clock: Clock, lines: string[]): Promise<Stack> {
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return startStack({ env: { LOG_LEVEL: 'trace' }, clock, log: createLogger('trace', 'ledger', destination) });
}

// Full numbers used below; none of them may ever be stored in the clear, logged or answered (a valid routing number is shown, SPEC §24).
const VISA = '4000056655665556';
const MASTERCARD = '5555555555554444';
const AMEX = '378282246310005';
const DISCOVER = '6011111111111117';
const ACCOUNT = '987654321012';
const ROUTING_KNOWN = '322271627';
const ROUTING_UNKNOWN = '091000019';
const LUHN_BAD = '4000056655665557';
const ROUTING_BAD = '322271628';

const thisMonth = () => DateTime.now().setZone(NY);

describe('SPEC §11 tokens and authorization', () => {
  let stack: Stack;
  let org: TestOrg;
  let userId: string;
  const logLines: string[] = [];
  const responses: ApiResponse[] = [];
  let shiftMs = 0;
  let fixed: Date | null = null;
  const clock: Clock = { now: () => (fixed ? new Date(fixed) : new Date(Date.now() + shiftMs)) };
  let rawCall: ReturnType<typeof apiClient>;
  const call: ReturnType<typeof apiClient> = async (method, path, body, headers) => {
    const response = await rawCall(method, path, body, headers);
    responses.push(response);
    return response;
  };

  beforeAll(async () => {
    stack = await startLoggedStack(clock, logLines);
    org = await createTestOrg(stack.pool, { write: 5000, read: 5000 });
    rawCall = apiClient(stack.url, org.apiKey);
    userId = await createTestUser(stack.pool, org.organizationId);
  });
  afterEach(() => {
    shiftMs = 0;
    fixed = null;
  });
  afterAll(async () => {
    await stack.stop();
  });

  const futureCard = (number = VISA, cvc = '123') => ({ number, exp_month: 12, exp_year: thisMonth().year + 3, cvc });
  // A fresh X-Idempotency-Key each time: an identical body without one replays the first token (SPEC §5).
  const fresh = () => ({ 'X-Idempotency-Key': `k-${randomString(16)}` });
  const cardToken = async (card = futureCard(), user = userId) => call('POST', '/token', { user_id: user, card }, fresh());
  const bankToken = async (routing = ROUTING_KNOWN, user = userId) =>
    call('POST', '/token', { user_id: user, bank_account: { routing_number: routing, account_number: ACCOUNT } }, fresh());
  const authorize = (token: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    call('POST', '/authorize', { token, amount: 1500, currency: 'USD', direction: 'cash_in', ...extra }, headers);

  describe('checks (pure)', () => {
    test('Luhn: valid test numbers pass, a changed check digit fails', () => {
      for (const number of [VISA, MASTERCARD, AMEX, DISCOVER, '4242424242424242']) expect(luhnValid(number)).toBe(true);
      for (const number of [LUHN_BAD, '4242424242424241', '1234567812345678', '', '4242a42424242424'])
        expect(luhnValid(number)).toBe(false);
    });
    test('ABA: valid routing numbers pass; a wrong checksum or an unassigned prefix fails', () => {
      for (const routing of [ROUTING_KNOWN, ROUTING_UNKNOWN, '021000021', '011000138', '121000248', '110000000'])
        expect(abaValid(routing)).toBe(true);
      expect(abaValid(ROUTING_BAD)).toBe(false);
      expect(abaValid('12345678')).toBe(false);
      // A number with a correct 3-7-1 checksum but prefix 13, which the Federal Reserve does not assign.
      const withPrefix13 = Array.from({ length: 10 }, (_, d) => `13000000${d}`).find((r) => {
        const x = [...r].map(Number);
        return (3 * (x[0]! + x[3]! + x[6]!) + 7 * (x[1]! + x[4]! + x[7]!) + (x[2]! + x[5]! + x[8]!)) % 10 === 0;
      })!;
      expect(abaValid(withPrefix13)).toBe(false);
    });
    test('brands by leading digits', () => {
      expect([VISA, MASTERCARD, AMEX, DISCOVER, '2221000000000009', '3530111333300000', '36227206271667'].map(cardBrand)).toEqual([
        'visa',
        'mastercard',
        'amex',
        'discover',
        'mastercard',
        'jcb',
        'diners',
      ]);
    });
    test('a card is good through the last moment of its expiry month, Eastern time', () => {
      const end = DateTime.fromObject({ year: 2030, month: 6, day: 30, hour: 23, minute: 59 }, { zone: NY });
      expect(cardExpired(6, 2030, end.toJSDate())).toBe(false);
      expect(cardExpired(6, 2030, end.plus({ minutes: 1 }).toJSDate())).toBe(true);
      // 02:30 UTC on July 1st is still June 30th in New York.
      expect(cardExpired(6, 2030, new Date('2030-07-01T02:30:00Z'))).toBe(false);
    });
  });

  describe('POST /token', () => {
    test('a card becomes a single-use token valid 15 minutes, with only brand, last4 and expiry', async () => {
      const response = await cardToken();
      expect(response.status).toBe(200);
      const token = response.body;
      expect(token).toEqual({
        id: expect.stringMatching(/^token_[A-Za-z0-9]{16,}$/),
        type: 'card',
        user_id: userId,
        bank_account: null,
        card: { brand: 'visa', last4: '5556', exp_month: 12, exp_year: thisMonth().year + 3 },
        expires_at: new Date(Date.parse(token.created_at) + 15 * 60_000).toISOString(),
        used: false,
        created_at: token.created_at,
      });
      expect((await call('GET', `/token/${token.id}`)).body).toEqual(token);
    });

    test('each brand is recognised; Amex needs a 4-digit CVC, the others 3', async () => {
      expect((await cardToken(futureCard(MASTERCARD))).body.card.brand).toBe('mastercard');
      expect((await cardToken(futureCard(DISCOVER))).body.card.brand).toBe('discover');
      expect((await cardToken(futureCard(AMEX, '1234'))).body.card).toMatchObject({ brand: 'amex', last4: '0005' });
      const amexShort = await cardToken(futureCard(AMEX, '123'));
      expect(amexShort.status).toBe(400);
      expect(amexShort.body.error.param).toBe('card.cvc');
      expect((await cardToken(futureCard(VISA, '1234'))).status).toBe(400);
    });

    test('a card number failing the Luhn check is 400 validation_failed on card.number', async () => {
      const response = await cardToken(futureCard(LUHN_BAD));
      expect(response.status).toBe(400);
      expect(response.body.error).toMatchObject({ code: 'validation_failed', param: 'card.number' });
      for (const number of ['4242', '42424242424242424242', '4242-4242-4242-4242']) {
        expect((await cardToken(futureCard(number))).body.error.param).toBe('card.number');
      }
    });

    test('expiry: a past month is 400 card_expired; the current month and later are accepted', async () => {
      const now = thisMonth();
      const last = now.minus({ months: 1 });
      const past = await cardToken({ ...futureCard(), exp_month: last.month, exp_year: last.year });
      expect(past.status).toBe(400);
      expect(past.body.error.code).toBe('card_expired');
      expect((await cardToken({ ...futureCard(), exp_month: now.month, exp_year: now.year })).status).toBe(200);
      expect((await cardToken({ ...futureCard(), exp_month: 1, exp_year: now.year + 1 })).status).toBe(200);
      expect((await cardToken({ ...futureCard(), exp_month: 13 })).body.error.param).toBe('card.exp_month');
    });

    test('a bank account becomes a token with the bank (when known) and last4 only', async () => {
      const known = await bankToken();
      expect(known.status).toBe(200);
      expect(known.body).toMatchObject({
        type: 'bank_account',
        card: null,
        bank_account: { bank: 'JPMorgan Chase Bank', last4: '1012' },
        used: false,
      });
      expect((await bankToken(ROUTING_UNKNOWN)).body.bank_account).toEqual({
        bank: null,
        last4: '1012',
        routing_number: ROUTING_UNKNOWN,
        account_type: 'checking',
      });
    });

    test('a routing number failing the ABA checksum is 400 validation_failed on bank_account.routing_number', async () => {
      const response = await bankToken(ROUTING_BAD);
      expect(response.status).toBe(400);
      expect(response.body.error).toMatchObject({ code: 'validation_failed', param: 'bank_account.routing_number' });
      expect((await bankToken('12345')).body.error.param).toBe('bank_account.routing_number');
      const shortAccount = await call(
        'POST',
        '/token',
        { user_id: userId, bank_account: { routing_number: ROUTING_KNOWN, account_number: '123' } },
        fresh(),
      );
      expect(shortAccount.body.error.param).toBe('bank_account.account_number');
    });

    test('exactly one of card or bank_account', async () => {
      const both = await call(
        'POST',
        '/token',
        { user_id: userId, card: futureCard(), bank_account: { routing_number: ROUTING_KNOWN, account_number: ACCOUNT } },
        fresh(),
      );
      expect(both.status).toBe(400);
      const neither = await call('POST', '/token', { user_id: userId }, fresh());
      expect(neither.status).toBe(400);
      expect(neither.body.error.code).toBe('validation_failed');
    });

    test("an unknown user, or another organization's, is 400 resource_missing on user_id; another organization's token is 404", async () => {
      const unknown = await cardToken(futureCard(), `user_${randomString(24)}`);
      expect(unknown.status).toBe(400);
      expect(unknown.body.error).toMatchObject({ code: 'resource_missing', param: 'user_id' });
      const other = await createTestOrg(stack.pool);
      const otherUser = await createTestUser(stack.pool, other.organizationId);
      expect((await cardToken(futureCard(), otherUser)).body.error.code).toBe('resource_missing');
      const theirs = await apiClient(stack.url, other.apiKey)('POST', '/token', { user_id: otherUser, card: futureCard() }, fresh());
      expect(theirs.status).toBe(200);
      expect((await call('GET', `/token/${theirs.body.id}`)).status).toBe(404);
    });
  });

  describe('POST /authorize', () => {
    test('creates an Intent as POST /intent does, for the token user, and uses the token', async () => {
      const token = (await cardToken()).body;
      const response = await authorize(token.id);
      expect(response.status).toBe(200);
      const intent = response.body;
      expect(intent).toMatchObject({
        id: expect.stringMatching(/^intent_sandbox_/),
        idempotency_key: token.id,
        user_id: userId,
        account_id: org.accountId,
        direction: 'cash_in',
        amount: 1500,
        currency: 'USD',
        status: 'approved',
        decline_category: null,
      });
      expect(intent.transactions).toHaveLength(1);
      expect(intent.transactions[0]).toMatchObject({ type: 'intent', source_id: intent.id, status: 'pending', direction: 'cash_in' });
      expect((await call('GET', `/intent/${intent.id}`)).body).toEqual(intent);
      expect((await call('GET', `/token/${token.id}`)).body.used).toBe(true);
      await workflowRunning(stack, intent.transactions[0].id);
    });

    test('the same token again with the same body replays the first response and creates nothing', async () => {
      const token = (await bankToken()).body;
      const first = await authorize(token.id, { direction: 'cash_out', amount: 700 });
      const again = await authorize(token.id, { direction: 'cash_out', amount: 700 });
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      const { rows } = await stack.pool.query(`SELECT id FROM intents WHERE idempotency_key = $1`, [token.id]);
      expect(rows).toHaveLength(1);
    });

    test('the same token and body under another X-Idempotency-Key is the same request: it replays', async () => {
      const token = (await cardToken()).body;
      const first = await authorize(token.id);
      const again = await authorize(token.id, {}, { 'X-Idempotency-Key': `k-${randomString(12)}` });
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
    });

    test('a used token on a different request (another body) is 400 token_used, with or without a key', async () => {
      const token = (await cardToken()).body;
      expect((await authorize(token.id)).status).toBe(200);
      const headerSets: Record<string, string>[] = [{}, { 'X-Idempotency-Key': `k-${randomString(12)}` }];
      for (const headers of headerSets) {
        const reused = await authorize(token.id, { amount: 999 }, headers);
        expect(reused.status).toBe(400);
        expect(reused.body.error).toMatchObject({ code: 'token_used', param: 'token' });
      }
      const { rows } = await stack.pool.query(`SELECT id FROM intents WHERE idempotency_key = $1`, [token.id]);
      expect(rows).toHaveLength(1);
    });

    test('concurrent authorizations with one token: identical requests execute once and answer alike; other bodies get token_used', async () => {
      const token = (await cardToken()).body;
      const same = await Promise.all(
        Array.from({ length: 10 }, () => authorize(token.id, {}, { 'X-Idempotency-Key': `k-${randomString(12)}` })),
      );
      expect(same.every((r) => r.status === 200)).toBe(true);
      expect(new Set(same.map((r) => r.text)).size).toBe(1);
      const other = await Promise.all(Array.from({ length: 5 }, (_, i) => authorize(token.id, { amount: 100 + i })));
      expect(other.every((r) => r.status === 400 && r.body.error.code === 'token_used')).toBe(true);
      const { rows } = await stack.pool.query(`SELECT id FROM intents WHERE idempotency_key = $1`, [token.id]);
      expect(rows).toHaveLength(1);
    });

    test('token expiry (injected clock): at 14:59 it authorizes, after 15:00 it is 400 token_expired', async () => {
      const young = (await cardToken()).body;
      shiftMs = 14 * 60_000 + 59_000;
      expect((await authorize(young.id)).status).toBe(200);
      shiftMs = 0;
      const old = (await cardToken()).body;
      shiftMs = 15 * 60_000 + 1_000;
      const expired = await authorize(old.id);
      expect(expired.status).toBe(400);
      expect(expired.body.error).toMatchObject({ code: 'token_expired', param: 'token' });
      expect((await call('GET', `/token/${old.id}`)).body.used).toBe(false);
    });

    test("an unknown token, or another organization's, is 400 resource_missing on token", async () => {
      const unknown = await authorize(`token_${randomString(24)}`);
      expect(unknown.status).toBe(400);
      expect(unknown.body.error).toMatchObject({ code: 'resource_missing', param: 'token' });
      const other = await createTestOrg(stack.pool);
      const otherCall = apiClient(stack.url, other.apiKey);
      const theirs = (
        await otherCall('POST', '/token', { user_id: await createTestUser(stack.pool, other.organizationId), card: futureCard() }, fresh())
      ).body;
      expect((await authorize(theirs.id)).body.error.code).toBe('resource_missing');
    });

    test('a user who is not enabled: the intent is declined (user_not_enabled), nothing moves, the token is used', async () => {
      const suspended = await createTestUser(stack.pool, org.organizationId, 'suspended');
      const token = (await cardToken(futureCard(), suspended)).body;
      const response = await authorize(token.id);
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ status: 'declined', decline_category: 'user_not_enabled', transactions: [] });
      expect((await call('GET', `/token/${token.id}`)).body.used).toBe(true);
    });

    test('a card that expired between tokenization and authorization: declined with card_expired', async () => {
      const endOfMonth = thisMonth().endOf('month');
      fixed = endOfMonth.minus({ minutes: 5 }).toJSDate();
      const token = await cardToken({ ...futureCard(), exp_month: endOfMonth.month, exp_year: endOfMonth.year });
      expect(token.status).toBe(200);
      fixed = endOfMonth.plus({ minutes: 5 }).toJSDate();
      const response = await authorize(token.body.id);
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ status: 'declined', decline_category: 'card_expired', transactions: [] });
    });

    test('body checks: amount, currency and direction are validated (400 validation_failed)', async () => {
      const token = (await cardToken()).body;
      for (const [extra, param] of [
        [{ amount: 0 }, 'amount'],
        [{ currency: 'EUR' }, 'currency'],
        [{ direction: 'sideways' }, 'direction'],
      ] as const) {
        const response = await authorize(token.id, extra);
        expect(response.status).toBe(400);
        expect(response.body.error.param).toBe(param);
      }
      expect((await authorize(token.id)).status).toBe(200);
    });

    test('tokens and authorization answer as the OpenAPI document says, and its example token request fits its schema', async () => {
      const document: unknown = await (await fetch(`${stack.url}/openapi.json`)).json();
      const card = await cardToken();
      expectDocumented(document, [
        ['post', '/token', card],
        ['post', '/token', await bankToken()],
        ['post', '/token', await cardToken(futureCard(LUHN_BAD))],
        ['get', '/token/{id}', await call('GET', `/token/${card.body.id}`)],
        ['get', '/token/{id}', await call('GET', `/token/token_${randomString(24)}`)],
        ['post', '/authorize', await authorize(card.body.id)],
        ['post', '/authorize', await authorize(card.body.id, { amount: 0 })],
      ]);
      expect(exampleMismatches(document, 'CreateToken')).toEqual([]);
    });
  });

  describe('full numbers are never stored, logged or returned', () => {
    // SPEC §24 shows a bank account's routing number (it names the bank, and is no secret): only a refused one
    // must never come back or be kept.
    const secrets = [VISA, MASTERCARD, AMEX, DISCOVER, ACCOUNT, LUHN_BAD, ROUTING_BAD];

    test('no table of the database holds a full card or account number, a refused routing number, or a CVC field', async () => {
      const { rows: tables } = await stack.pool.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
      );
      expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(['payment_tokens', 'idempotency_keys', 'events', 'intents']));
      // Tokens were made above: the scan would be vacuous otherwise.
      expect(
        (await stack.pool.query(`SELECT count(*)::int AS n FROM payment_tokens WHERE organization_id = $1`, [org.organizationId])).rows[0]
          .n,
      ).toBeGreaterThan(5);
      for (const { table_name: table } of tables) {
        // The whole row as text: every text, json and other column at once.
        const { rows } = await stack.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${table}" AS row WHERE row::text LIKE ANY ($1)`,
          [[...secrets.map((s) => `%${s}%`), '%"cvc"%']],
        );
        expect({ table, matches: rows[0]!.n }).toEqual({ table, matches: 0 });
      }
    });

    test('no log line holds one (pino at trace level, every request above)', () => {
      expect(logLines.length).toBeGreaterThan(20);
      const text = logLines.join('');
      expect(text).toContain('/token');
      for (const secret of secrets) expect(text.includes(secret)).toBe(false);
    });

    test('no response holds one', () => {
      expect(responses.length).toBeGreaterThan(20);
      for (const response of responses) {
        const text = response.text + JSON.stringify([...response.headers.entries()]);
        for (const secret of secrets) expect(text.includes(secret)).toBe(false);
      }
    });
  });
});
