/**
 * SPEC §24 bank accounts (docs/ach.md): POST /token keeps the account number sealed, POST /authorize makes it a
 * reusable bank account of the user, intents name one (or the newest active one), production declines an intent
 * without one, the operator's bank account and ACH identity are set by the CLI only, and the full number
 * appears nowhere outside its seal: not in the database's plain columns, answers, events, logs, metrics, nor in
 * Postgres's own files on disk.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { ACH_DETAILS_LIMITS, openBankAccounts, openOperatorBankAccounts, organizationAchOf } from '../src/bankAccounts/achDetails';
import { disableBankAccount } from '../src/bankAccounts/repo';
import { accountFingerprint, openAccountNumber, sealAccountNumber } from '../src/bankAccounts/sealing';
import { ConfigError, loadConfig } from '../src/config';
import type { Pool } from '../src/db/pool';
import { randomString } from '../src/ids';
import { createLogger } from '../src/logger';
import { apiClient, createTestOrg, createTestUser, startStack, testInfra, type Stack, type TestOrg } from './support/harness';
import { addBankAccount, admin, idempotencyKey, SANDBOX_ROUTING } from './support/payments';
import { runAdmin } from './support/processes';

type Call = ReturnType<typeof apiClient>;

/** A fresh account number of 17 letters and digits: long and random enough that finding it anywhere is a leak. */
const accountNumber = () => `N${randomString(16)}`;
const ROUTING_BAD = '322271628';

const intentBody = (userId: string, extra: Record<string, unknown> = {}) => ({
  direction: 'cash_in',
  user_id: userId,
  amount: 500,
  currency: 'USD',
  ...extra,
});

async function countRows(pool: Pool, table: string, column: string, value: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} = $1`, [value]);
  return rows[0]!.n;
}

describe('SPEC §24 BANK_DATA_KEY', () => {
  const key = randomBytes(32).toString('base64');

  test('production refuses to start without it, naming it and never repeating a bad value', () => {
    const production = { LEDGER_ENVIRONMENT: 'production', WEBHOOK_SECRET_KEY: key };
    expect(() => loadConfig(production)).toThrow(/BANK_DATA_KEY="": must be set in production/);
    expect(() => loadConfig({ ...production, BANK_DATA_KEY: 'c2hvcnQ=' })).toThrow(/BANK_DATA_KEY=\(hidden\): must be 32 bytes/);
    expect(loadConfig({ ...production, BANK_DATA_KEY: key }).BANK_DATA_KEY).toBe(key);
    expect(() => loadConfig({ LEDGER_ENVIRONMENT: 'sandbox', BANK_DATA_KEY: 'c2hvcnQ=' })).toThrow(ConfigError);
  });

  test('a sealed number opens only with its key and only for the row it was sealed for; the fingerprint is keyed', () => {
    const config = { LEDGER_ENVIRONMENT: 'production' as const, BANK_DATA_KEY: key };
    const other = { ...config, BANK_DATA_KEY: randomBytes(32).toString('base64') };
    const number = accountNumber();
    const sealed = sealAccountNumber(config, number, { table: 'bank_accounts', id: 'ba_one' });
    expect(sealed).toMatch(/^gcm1:/);
    expect(sealed).not.toContain(number);
    expect(openAccountNumber(config, sealed, { table: 'bank_accounts', id: 'ba_one' })).toBe(number);
    expect(() => openAccountNumber(config, sealed, { table: 'bank_accounts', id: 'ba_two' })).toThrow();
    expect(() => openAccountNumber(config, sealed, { table: 'operator_bank_accounts', id: 'ba_one' })).toThrow();
    expect(() => openAccountNumber(other, sealed, { table: 'bank_accounts', id: 'ba_one' })).toThrow();
    expect(accountFingerprint(config, SANDBOX_ROUTING, number)).toBe(accountFingerprint(config, SANDBOX_ROUTING, number));
    expect(accountFingerprint(config, SANDBOX_ROUTING, number)).not.toBe(accountFingerprint(other, SANDBOX_ROUTING, number));
    // A sandbox without the key seals too, with the published development key: never the number in the clear.
    const sandbox = { LEDGER_ENVIRONMENT: 'sandbox' as const, BANK_DATA_KEY: undefined };
    const sandboxSealed = sealAccountNumber(sandbox, number, { table: 'payment_tokens', id: 'token_x' });
    expect(sandboxSealed).toMatch(/^gcm1:/);
    expect(openAccountNumber(sandbox, sandboxSealed, { table: 'payment_tokens', id: 'token_x' })).toBe(number);
  });
});

describe('SPEC §24 bank accounts (sandbox)', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: Call;

  beforeAll(async () => {
    stack = await startStack({ worker: false });
    org = await createTestOrg(stack.pool, { write: 5000, read: 5000 });
    call = apiClient(stack.url, org.apiKey);
  });
  afterAll(async () => {
    await stack.stop();
  });

  test('POST /token keeps the number sealed; POST /authorize makes it a bank account of the user and the intent names it', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const number = accountNumber();
    const token = await call(
      'POST',
      '/token',
      { user_id: userId, bank_account: { routing_number: SANDBOX_ROUTING, account_number: number, account_type: 'savings' } },
      idempotencyKey(),
    );
    expect(token.status).toBe(200);
    expect(token.body.bank_account).toEqual({
      bank: 'Sandbox Test Bank',
      last4: number.slice(-4),
      routing_number: SANDBOX_ROUTING,
      account_type: 'savings',
    });
    expect(token.text).not.toContain(number);
    const stored = await stack.pool.query('SELECT account_number_sealed FROM payment_tokens WHERE id = $1', [token.body.id]);
    expect(stored.rows[0].account_number_sealed).toMatch(/^gcm1:/);

    const authorized = await call('POST', '/authorize', { token: token.body.id, amount: 700, currency: 'USD', direction: 'cash_in' });
    expect(authorized.status).toBe(200);
    expect(authorized.body).toMatchObject({ status: 'approved', bank_account_id: expect.stringMatching(/^ba_[A-Za-z0-9]{16,}$/) });
    const bankAccountId = authorized.body.bank_account_id as string;
    const listed = await call('GET', `/user/${userId}/bank_account`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      data: [
        {
          id: bankAccountId,
          user_id: userId,
          bank: 'Sandbox Test Bank',
          routing_number: SANDBOX_ROUTING,
          last4: number.slice(-4),
          account_type: 'savings',
          status: 'active',
          disabled_reason: null,
          created_at: expect.any(String),
        },
      ],
      has_more: false,
      next_cursor: null,
    });
    // The spent token keeps only its masked form; the number rests in the bank account, and opens for the ACH rail.
    const spent = await stack.pool.query('SELECT account_number_sealed, bank_account_id FROM payment_tokens WHERE id = $1', [
      token.body.id,
    ]);
    expect(spent.rows[0]).toEqual({ account_number_sealed: null, bank_account_id: bankAccountId });
    expect(await openBankAccounts(stack.pool, stack.config, [bankAccountId, 'ba_none'])).toEqual(
      new Map([[bankAccountId, { routing_number: SANDBOX_ROUTING, account_number: number, account_type: 'savings' }]]),
    );
    // The bound is on the accounts read, not the entries naming them: a window's 10,001 entries of one account
    // open it once (a 100,000-entry build was refused when it counted entries); 10,001 distinct ids are refused.
    const limit = ACH_DETAILS_LIMITS.idsPerCallMax;
    expect((await openBankAccounts(stack.pool, stack.config, Array(limit + 1).fill(bankAccountId))).size).toBe(1);
    const distinct = Array.from({ length: limit + 1 }, (_, i) => `ba_none_${i}`);
    await expect(openBankAccounts(stack.pool, stack.config, distinct)).rejects.toThrow(`at most ${limit} ids per call`);
  });

  test('the same routing and number for the same user is the same ba_; another user, or another number, is a new one', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const otherUser = await createTestUser(stack.pool, org.organizationId);
    const number = accountNumber();
    const first = await addBankAccount(call, userId, { account_number: number });
    const again = await addBankAccount(call, userId, { account_number: number });
    expect(again.bankAccountId).toBe(first.bankAccountId);
    expect((await addBankAccount(call, otherUser, { account_number: number })).bankAccountId).not.toBe(first.bankAccountId);
    const second = await addBankAccount(call, userId, { account_number: accountNumber() });
    expect(second.bankAccountId).not.toBe(first.bankAccountId);
    const listed = await call('GET', `/user/${userId}/bank_account?limit=1`);
    expect(listed.body.data.map((b: { id: string }) => b.id)).toEqual([second.bankAccountId]);
    expect(listed.body.has_more).toBe(true);
    const rest = await call('GET', `/user/${userId}/bank_account?limit=1&cursor=${listed.body.next_cursor}`);
    expect(rest.body.data.map((b: { id: string }) => b.id)).toEqual([first.bankAccountId]);
  });

  test("POST /intent uses the newest active bank account by default, or the one named; another user's or organization's is 400 and records nothing", async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const older = await addBankAccount(call, userId, { account_number: accountNumber() });
    const newer = await addBankAccount(call, userId, { account_number: accountNumber() });
    const byDefault = await call('POST', '/intent', intentBody(userId), idempotencyKey());
    expect(byDefault.body).toMatchObject({ status: 'approved', bank_account_id: newer.bankAccountId });
    const named = await call('POST', '/intent', intentBody(userId, { bank_account_id: older.bankAccountId }), idempotencyKey());
    expect(named.body).toMatchObject({ status: 'approved', bank_account_id: older.bankAccountId });

    const otherUser = await createTestUser(stack.pool, org.organizationId);
    const othersAccount = await addBankAccount(call, otherUser, { account_number: accountNumber() });
    const otherOrg = await createTestOrg(stack.pool);
    const otherOrgUser = await createTestUser(stack.pool, otherOrg.organizationId);
    const otherOrgAccount = await addBankAccount(apiClient(stack.url, otherOrg.apiKey), otherOrgUser, { account_number: accountNumber() });
    const before = await countRows(stack.pool, 'intents', 'user_id', userId);
    for (const [bankAccountId, message] of [
      [othersAccount.bankAccountId, /is not one of user/],
      [otherOrgAccount.bankAccountId, /No such bank_account/],
      [`ba_${randomString(24)}`, /No such bank_account/],
    ] as const) {
      const refused = await call('POST', '/intent', intentBody(userId, { bank_account_id: bankAccountId }), idempotencyKey());
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({
        code: 'resource_missing',
        param: 'bank_account_id',
        message: expect.stringMatching(message),
      });
    }
    expect(await countRows(stack.pool, 'intents', 'user_id', userId)).toBe(before);
  });

  test('a disabled bank account declines the intent (bank_account_disabled), single, batch and manual approval; the default skips it', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const kept = await addBankAccount(call, userId, { account_number: accountNumber() });
    const closing = await addBankAccount(call, userId, { account_number: accountNumber() });
    const manual = await call(
      'POST',
      '/intent',
      intentBody(userId, { direction: 'cash_out', approval_mode: 'manual', bank_account_id: closing.bankAccountId }),
      idempotencyKey(),
    );
    expect(manual.body.status).toBe('pending');
    expect(await disableBankAccount(stack.pool, { bankAccountId: closing.bankAccountId, reason: 'R02', now: new Date() })).not.toBeNull();

    const declined = await call('POST', '/intent', intentBody(userId, { bank_account_id: closing.bankAccountId }), idempotencyKey());
    expect(declined.body).toMatchObject({ status: 'declined', decline_category: 'bank_account_disabled', transactions: [] });
    expect((await call('POST', `/intent/${manual.body.id}/approve`, {}, idempotencyKey())).body).toMatchObject({
      status: 'declined',
      decline_category: 'bank_account_disabled',
    });
    expect((await call('POST', '/intent', intentBody(userId), idempotencyKey())).body.bank_account_id).toBe(kept.bankAccountId);
    const listed = await call('GET', `/user/${userId}/bank_account`);
    expect(listed.body.data[0]).toMatchObject({ id: closing.bankAccountId, status: 'disabled', disabled_reason: 'R02' });

    const otherUser = await createTestUser(stack.pool, org.organizationId);
    const batch = await call(
      'POST',
      '/intent/batch',
      {
        intents: [
          { idempotency_key: `a-${randomString(12)}`, ...intentBody(userId, { bank_account_id: closing.bankAccountId }) },
          { idempotency_key: `b-${randomString(12)}`, ...intentBody(userId, { bank_account_id: kept.bankAccountId }) },
          { idempotency_key: `c-${randomString(12)}`, ...intentBody(otherUser, { bank_account_id: kept.bankAccountId }) },
          { idempotency_key: `d-${randomString(12)}`, ...intentBody(otherUser) },
        ],
      },
      idempotencyKey(),
    );
    expect(batch.status).toBe(200);
    const [disabled, named, othersAccount, none] = batch.body.data;
    expect(disabled.intent).toMatchObject({ status: 'declined', decline_category: 'bank_account_disabled' });
    expect(named.intent).toMatchObject({ status: 'approved', bank_account_id: kept.bankAccountId });
    expect(othersAccount).toMatchObject({ status: 400, error: { code: 'resource_missing', param: 'bank_account_id' } });
    // Sandbox: an intent with no bank account is approved and simulated, as before.
    expect(none.intent).toMatchObject({ status: 'approved', bank_account_id: null });
  });

  test('bad input (routing checksum, account number length or characters) is 400 naming the field, never echoing it, and stores nothing', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ routing_number: ROUTING_BAD, account_number: accountNumber() }, 'bank_account.routing_number'],
      [{ routing_number: SANDBOX_ROUTING, account_number: '123' }, 'bank_account.account_number'],
      [{ routing_number: SANDBOX_ROUTING, account_number: `${accountNumber()}9` }, 'bank_account.account_number'],
      [{ routing_number: SANDBOX_ROUTING, account_number: '1234-5678' }, 'bank_account.account_number'],
      [{ routing_number: SANDBOX_ROUTING, account_number: accountNumber(), account_type: 'brokerage' }, 'bank_account.account_type'],
    ];
    for (const [bankAccount, param] of cases) {
      const refused = await call('POST', '/token', { user_id: userId, bank_account: bankAccount }, idempotencyKey());
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ code: 'validation_failed', param });
      expect(refused.text).not.toContain(String(bankAccount.account_number));
    }
    expect(await countRows(stack.pool, 'payment_tokens', 'user_id', userId)).toBe(0);
    expect(await countRows(stack.pool, 'bank_accounts', 'user_id', userId)).toBe(0);
  });

  test("GET /user/{id}/bank_account: another organization's user is 404", async () => {
    const otherOrg = await createTestOrg(stack.pool);
    const otherUser = await createTestUser(stack.pool, otherOrg.organizationId);
    const answer = await call('GET', `/user/${otherUser}/bank_account`);
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe('not_found');
  });

  test('CLI: account bank-account set and org ach set store the operator data (number sealed); bad input changes nothing', async () => {
    const number = accountNumber();
    const set = await admin([
      'account',
      'bank-account',
      'set',
      '--account',
      org.accountId,
      '--routing',
      SANDBOX_ROUTING,
      '--number',
      number,
      '--type',
      'savings',
      '--json',
    ]);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({
      account_id: org.accountId,
      routing_number: SANDBOX_ROUTING,
      last4: number.slice(-4),
      account_type: 'savings',
    });
    expect(set.stdout).not.toContain(number);
    expect(await openOperatorBankAccounts(stack.pool, stack.config, [org.accountId])).toEqual(
      new Map([[org.accountId, { routing_number: SANDBOX_ROUTING, account_number: number, account_type: 'savings' }]]),
    );
    const badRouting = await admin([
      'account',
      'bank-account',
      'set',
      '--account',
      org.accountId,
      '--routing',
      ROUTING_BAD,
      '--number',
      accountNumber(),
    ]);
    expect(badRouting.code).toBe(2);
    expect(badRouting.stderr).toMatch(/--routing.*not a valid ABA routing number/);
    const tooLong = `${accountNumber()}99`;
    const badNumber = await admin([
      'account',
      'bank-account',
      'set',
      '--account',
      org.accountId,
      '--routing',
      SANDBOX_ROUTING,
      '--number',
      tooLong,
    ]);
    expect(badNumber.code).toBe(2);
    expect(badNumber.stderr).toMatch(/--number must be 4 to 17 letters or digits/);
    expect(badNumber.stderr).not.toContain(tooLong);
    const unknown = await admin([
      'account',
      'bank-account',
      'set',
      '--account',
      `account_${randomString(24)}`,
      '--routing',
      SANDBOX_ROUTING,
      '--number',
      accountNumber(),
    ]);
    expect(unknown.code).toBe(1);
    expect((await openOperatorBankAccounts(stack.pool, stack.config, [org.accountId])).get(org.accountId)?.account_number).toBe(number);

    const ach = await admin([
      'org',
      'ach',
      'set',
      '--org',
      org.organizationId,
      '--company-id',
      '1234567890',
      '--company-name',
      'ACME GAMES',
      '--json',
    ]);
    expect(ach.code).toBe(0);
    expect(await organizationAchOf(stack.pool, [org.organizationId])).toEqual(
      new Map([[org.organizationId, { company_id: '1234567890', company_name: 'ACME GAMES' }]]),
    );
    expect(
      (await admin(['org', 'ach', 'set', '--org', org.organizationId, '--company-id', '12345678901', '--company-name', 'X'])).code,
    ).toBe(2);
    expect((await admin(['org', 'ach', 'set', '--org', `org_${randomString(24)}`, '--company-id', '1', '--company-name', 'X'])).code).toBe(
      1,
    );
    expect((await organizationAchOf(stack.pool, [org.organizationId])).get(org.organizationId)?.company_id).toBe('1234567890');
  });
});

/** Every place in the database a text-like column holds `needle`, as `table.column`; sealed columns included. */
async function databaseHits(pool: Pool, needle: string): Promise<string[]> {
  const { rows: columns } = await pool.query<{ table_name: string; column_name: string }>(
    `SELECT c.table_name, c.column_name FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
      WHERE c.table_schema = 'public' AND c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb', 'bytea', 'ARRAY', 'USER-DEFINED')`,
  );
  const hits: string[] = [];
  for (const { table_name: table, column_name: column } of columns) {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${table}" WHERE position($1 IN "${column}"::text) > 0`,
      [needle],
    );
    if (rows[0]!.n > 0) hits.push(`${table}.${column}`);
  }
  return hits;
}

/** Files of Postgres's own that hold `needle`'s bytes: the test database's relation files and the WAL. */
async function diskHits(pool: Pool, needles: string[]): Promise<Map<string, string[]>> {
  await pool.query('CHECKPOINT');
  const { rows } = await pool.query<{ data_directory: string; oid: number }>(
    `SELECT current_setting('data_directory') AS data_directory, (SELECT oid FROM pg_database WHERE datname = current_database()) AS oid`,
  );
  const { data_directory: dataDirectory, oid } = rows[0]!;
  const directories = [path.join(dataDirectory, 'base', String(oid)), path.join(dataDirectory, 'pg_wal')];
  const found = new Map<string, string[]>(needles.map((needle) => [needle, []]));
  for (const directory of directories) {
    for (const name of fs.readdirSync(directory)) {
      const file = path.join(directory, name);
      if (!fs.statSync(file).isFile()) continue;
      const bytes = fs.readFileSync(file);
      for (const needle of needles) if (bytes.includes(Buffer.from(needle, 'utf8'))) found.get(needle)!.push(file);
    }
  }
  return found;
}

describe('SPEC §24 production: bank accounts required, and the number appears nowhere outside its seal', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: Call;
  const logLines: string[] = [];
  const numbers: string[] = [];
  const answers: string[] = [];
  let bankAccountId = '';

  beforeAll(async () => {
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString('utf8'));
        done();
      },
    });
    stack = await startStack({
      worker: false,
      env: { LEDGER_ENVIRONMENT: 'production', LOG_LEVEL: 'trace' },
      log: createLogger('trace', 'ledger', destination),
    });
    org = await createTestOrg(stack.pool, { environment: 'production', write: 5000, read: 5000 });
    const rawCall = apiClient(stack.url, org.apiKey);
    call = async (method, url, body, headers) => {
      const answer = await rawCall(method, url, body, headers);
      answers.push(answer.text);
      return answer;
    };
  });
  afterAll(async () => {
    await stack.stop();
  });

  test('an intent with no bank account is declined no_bank_account; with one it is approved', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const none = await call('POST', '/intent', intentBody(userId), idempotencyKey());
    expect(none.body).toMatchObject({ status: 'declined', decline_category: 'no_bank_account', bank_account_id: null, transactions: [] });
    const number = accountNumber();
    numbers.push(number);
    const headers = idempotencyKey();
    const tokenBody = { user_id: userId, bank_account: { routing_number: SANDBOX_ROUTING, account_number: number } };
    const token = await call('POST', '/token', tokenBody, headers);
    // The stored idempotent answer replays without the number.
    expect((await call('POST', '/token', tokenBody, headers)).text).toBe(token.text);
    const authorized = await call('POST', '/authorize', { token: token.body.id, amount: 900, currency: 'USD', direction: 'cash_in' });
    expect(authorized.body).toMatchObject({ status: 'approved', bank_account_id: expect.stringMatching(/^ba_/) });
    bankAccountId = authorized.body.bank_account_id;
    expect((await call('POST', '/authorize', { token: token.body.id, amount: 900, currency: 'USD', direction: 'cash_in' })).text).toBe(
      authorized.text,
    );
    const byDefault = await call('POST', '/intent', intentBody(userId, { direction: 'cash_out' }), idempotencyKey());
    expect(byDefault.body).toMatchObject({ status: 'approved', bank_account_id: bankAccountId });
    const batch = await call(
      'POST',
      '/intent/batch',
      { intents: [{ idempotency_key: `p-${randomString(12)}`, ...intentBody(userId, { bank_account_id: bankAccountId }) }] },
      idempotencyKey(),
    );
    expect(batch.body.data[0].intent).toMatchObject({ status: 'approved', bank_account_id: bankAccountId });
    // The same number again (the dedupe path) and a refused one (the error path) must not leak either.
    expect((await addBankAccount(call, userId, { account_number: number })).bankAccountId).toBe(bankAccountId);
    const refusedNumber = accountNumber();
    numbers.push(refusedNumber);
    const refused = await call(
      'POST',
      '/token',
      { user_id: userId, bank_account: { routing_number: ROUTING_BAD, account_number: refusedNumber } },
      idempotencyKey(),
    );
    expect(refused.status).toBe(400);
    await call('GET', `/user/${userId}/bank_account`);
    await call('GET', `/intent/${byDefault.body.id}`);
    await call('GET', '/event?limit=100');

    const operatorNumber = accountNumber();
    numbers.push(operatorNumber);
    const keys = { DATABASE_URL: testInfra().databaseUrl, LEDGER_ENVIRONMENT: 'production', LOG_LEVEL: 'trace' };
    const cli = await runAdmin(
      ['account', 'bank-account', 'set', '--account', org.accountId, '--routing', SANDBOX_ROUTING, '--number', operatorNumber, '--json'],
      {
        ...keys,
        WEBHOOK_SECRET_KEY: stack.config.WEBHOOK_SECRET_KEY!,
        BANK_DATA_KEY: stack.config.BANK_DATA_KEY!,
      },
    );
    expect(cli.code).toBe(0);
    expect(cli.stdout).not.toContain(operatorNumber);
    expect((await openOperatorBankAccounts(stack.pool, stack.config, [org.accountId])).get(org.accountId)?.account_number).toBe(
      operatorNumber,
    );
    expect((await openBankAccounts(stack.pool, stack.config, [bankAccountId])).get(bankAccountId)?.account_number).toBe(number);
  });

  test('no table, stored answer, event, answer, log line or metric holds a full account number', async () => {
    expect(numbers).toHaveLength(3);
    // The scan reaches what it must: the bank account's id is in intents, events and the stored answers.
    expect(await databaseHits(stack.pool, bankAccountId)).toEqual(
      expect.arrayContaining(['bank_accounts.id', 'intents.bank_account_id', 'events.data', 'idempotency_keys.response_body']),
    );
    for (const number of numbers) expect({ number, hits: await databaseHits(stack.pool, number) }).toEqual({ number, hits: [] });
    const logs = logLines.join('');
    expect(logs).toContain('/token');
    const metrics = await (await fetch(`${stack.url}/metrics`)).text();
    expect(metrics).toContain('http_request');
    for (const number of numbers) {
      expect(logs).not.toContain(number);
      expect(metrics).not.toContain(number);
      for (const answer of answers) expect(answer).not.toContain(number);
    }
  });

  test("no file of Postgres's own (the database's relation files, the WAL) holds a full account number", async () => {
    const found = await diskHits(stack.pool, [bankAccountId, ...numbers]);
    // The files are read and flushed: the bank account's id is in them.
    expect(found.get(bankAccountId)!.length).toBeGreaterThan(0);
    for (const number of numbers) expect({ number, files: found.get(number) }).toEqual({ number, files: [] });
  });
});
