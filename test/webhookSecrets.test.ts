/**
 * SPEC §12 webhook secrets at rest (docs/webhook-security.md): production needs WEBHOOK_SECRET_KEY, the
 * stored answer of POST /webhook is sealed and replays byte for byte, and the operator CLI seals and
 * checks what was written in the clear before.
 */
import { randomBytes } from 'node:crypto';
import type { Connection } from '@temporalio/client';
import { ConfigError, loadConfig } from '../src/config';
import { createPool, type Pool } from '../src/db/pool';
import { randomString } from '../src/ids';
import { createLogger } from '../src/logger';
import { startApi, type RunningApi } from '../src/api';
import { connectTemporal } from '../src/platform/temporal';
import { openSecret } from '../src/webhooks/signing';
import { apiClient, createTestDatabase, createTestOrg, startStack, testConfig, testInfra, type Stack } from './support/harness';
import { runAdmin, spawnProject, TSX } from './support/processes';

const KEY = randomBytes(32).toString('base64');

describe('SPEC §12 webhook secrets: production requires WEBHOOK_SECRET_KEY', () => {
  test('production without the key is a configuration error naming it; sandbox starts without it', () => {
    expect(() => loadConfig({ LEDGER_ENVIRONMENT: 'production' })).toThrow(ConfigError);
    expect(() => loadConfig({ LEDGER_ENVIRONMENT: 'production' })).toThrow(/WEBHOOK_SECRET_KEY=.*must be set in production/);
    // BANK_DATA_KEY is production's other required key (SPEC §24, test/bankAccounts.test.ts).
    expect(loadConfig({ LEDGER_ENVIRONMENT: 'production', WEBHOOK_SECRET_KEY: KEY, BANK_DATA_KEY: KEY }).WEBHOOK_SECRET_KEY).toBe(KEY);
    expect(loadConfig({ LEDGER_ENVIRONMENT: 'sandbox' }).WEBHOOK_SECRET_KEY).toBeUndefined();
  });

  test('a production api process without the key exits 2 naming WEBHOOK_SECRET_KEY', async () => {
    const api = spawnProject(TSX, ['ops/bin/api.ts'], { LEDGER_ENVIRONMENT: 'production', WEBHOOK_SECRET_KEY: undefined });
    const { code } = await api.exited;
    expect(code).toBe(2);
    expect(api.output()).toMatch(/WEBHOOK_SECRET_KEY=""/);
  });
});

describe('SPEC §5/§12 the stored answer of POST /webhook is sealed', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ env: { LEDGER_ENVIRONMENT: 'production' }, worker: false });
  });
  afterAll(async () => {
    await stack.stop();
  });

  test('at rest it holds no secret; a duplicate replays the original answer byte for byte', async () => {
    const org = await createTestOrg(stack.pool, { environment: 'production' });
    const call = apiClient(stack.url, org.apiKey);
    const idempotency = { 'X-Idempotency-Key': `seal-${randomString(12)}` };
    const body = { url: 'https://93.184.215.14/hooks', events: ['transfer.settled'] };
    const created = await call('POST', '/webhook', body, idempotency);
    expect(created.status).toBe(200);
    const secret: string = created.body.secret;
    expect(secret).toMatch(/^whsec_/);

    const { rows } = await stack.pool.query<{ response_body: string }>(
      `SELECT response_body FROM idempotency_keys WHERE organization_id = $1 AND endpoint = 'POST /webhook'`,
      [org.organizationId],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.response_body).toMatch(/^gcm1:/);
    expect(rows[0]!.response_body).not.toContain(secret.slice('whsec_'.length));

    const replayed = await call('POST', '/webhook', body, idempotency);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.status).toBe(200);
    expect(replayed.text).toBe(created.text);
    expect((await call('GET', '/webhook')).body.data).toHaveLength(1);
  });
});

describe('SPEC §13 admin webhook seal-secrets and verify-secrets', () => {
  let scratch: { databaseUrl: string; drop(): Promise<void> };
  let pool: Pool;
  const connections: Connection[] = [];
  const apis: RunningApi[] = [];

  beforeAll(async () => {
    scratch = await createTestDatabase(`ledger_test_seal_${randomString(8).toLowerCase()}`);
    pool = createPool(scratch.databaseUrl, 4);
  });
  afterAll(async () => {
    for (const api of apis) await api.close();
    for (const connection of connections) await connection.close();
    await pool.end();
    await scratch.drop();
  });

  /** A sandbox api on the scratch database, with or without the key. */
  async function sandboxApi(env: Record<string, string>): Promise<RunningApi> {
    const temporal = await connectTemporal(testInfra().temporalAddress, 'default');
    connections.push(temporal.connection);
    const config = testConfig({ DATABASE_URL: scratch.databaseUrl, ...env });
    const api = await startApi({ config, pool, log: createLogger('silent'), temporal: temporal.client });
    apis.push(api);
    return api;
  }

  const admin = (args: string[], env: Record<string, string> = {}) =>
    runAdmin([...args, '--json'], { DATABASE_URL: scratch.databaseUrl, LEDGER_ENVIRONMENT: 'sandbox', ...env });

  test('secrets written in the clear are reported, sealed, and still open and replay afterwards', async () => {
    const org = await createTestOrg(pool);
    const plainApi = await sandboxApi({});
    const call = apiClient(plainApi.url, org.apiKey);
    const created = [];
    for (let i = 0; i < 2; i++) {
      const headers = { 'X-Idempotency-Key': `plain-${i}-${randomString(8)}` };
      const body = { url: `https://hooks.example.invalid/${i}` };
      const answer = await call('POST', '/webhook', body, headers);
      expect(answer.status).toBe(200);
      created.push({ headers, body, answer });
    }

    const before = await admin(['webhook', 'verify-secrets']);
    expect(before.code).toBe(1);
    expect(before.json).toEqual({
      ok: false,
      plain_endpoint_ids: created.map((c) => c.answer.body.id).sort(),
      plain_stored_answers: 2,
    });

    const keyless = await admin(['webhook', 'seal-secrets']);
    expect(keyless.code).toBe(1);
    expect(keyless.json.error.message).toMatch(/WEBHOOK_SECRET_KEY is not set/);

    const sealed = await admin(['webhook', 'seal-secrets'], { WEBHOOK_SECRET_KEY: KEY });
    expect(sealed).toMatchObject({ code: 0, json: { sealed_endpoint_secrets: 2, sealed_stored_answers: 2 } });
    expect((await admin(['webhook', 'seal-secrets'], { WEBHOOK_SECRET_KEY: KEY })).json).toEqual({
      sealed_endpoint_secrets: 0,
      sealed_stored_answers: 0,
    });
    expect(await admin(['webhook', 'verify-secrets'])).toMatchObject({ code: 0, json: { ok: true, plain_endpoint_ids: [] } });

    for (const { answer } of created) {
      const { rows } = await pool.query<{ secret_sealed: string }>(`SELECT secret_sealed FROM webhook_endpoints WHERE id = $1`, [
        answer.body.id,
      ]);
      expect(rows[0]!.secret_sealed).toMatch(/^gcm1:/);
      expect(openSecret(rows[0]!.secret_sealed, KEY)).toBe(answer.body.secret);
    }
    const { rows: answers } = await pool.query<{ response_body: string }>(
      `SELECT response_body FROM idempotency_keys WHERE organization_id = $1`,
      [org.organizationId],
    );
    for (const { response_body } of answers) expect(response_body).toMatch(/^gcm1:/);

    const keyedApi = await sandboxApi({ WEBHOOK_SECRET_KEY: KEY });
    for (const { headers, body, answer } of created) {
      const replayed = await apiClient(keyedApi.url, org.apiKey)('POST', '/webhook', body, headers);
      expect(replayed.headers.get('idempotent-replayed')).toBe('true');
      expect(replayed.text).toBe(answer.text);
    }
  }, 120_000);
});
