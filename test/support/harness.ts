import { randomBytes } from 'node:crypto';
import type { Client, Connection } from '@temporalio/client';
import { loadConfig, type Config } from '../../src/config';
import { createPool, type Pool } from '../../src/db/pool';
import { systemClock, type Clock } from '../../src/http/route';
import { randomString } from '../../src/ids';
import { createLogger } from '../../src/logger';
import type { Logger } from 'pino';
import { startApi, type RunningApi } from '../../src/api';
import { addAllowlistEntry, createOrganization, setRateLimits } from '../../src/orgs/repo';
import { connectTemporal } from '../../src/platform/temporal';
import { startWorker, type LedgerWorker } from '../../src/worker';
import { recordAcceptedRequests } from './requestRecorder';
import { cloneScratchDatabase } from './scratch';

/** The real Postgres database and Temporal server that globalSetup started for this run. */
export function testInfra() {
  const databaseUrl = process.env.LEDGER_TEST_DATABASE_URL;
  const temporalAddress = process.env.LEDGER_TEST_TEMPORAL_ADDRESS;
  const workflowBundlePath = process.env.LEDGER_TEST_WORKFLOW_BUNDLE;
  if (!databaseUrl || !temporalAddress || !workflowBundlePath)
    throw new Error('test infrastructure missing: run the suites through jest (globalSetup)');
  return {
    databaseUrl,
    temporalAddress,
    workflowBundlePath,
    cliPath: process.env.LEDGER_TEST_TEMPORAL_CLI!,
    workDir: process.env.LEDGER_TEST_WORK_DIR!,
  };
}

const TEST_WEBHOOK_SECRET_KEY = randomBytes(32).toString('base64');
const TEST_BANK_DATA_KEY = randomBytes(32).toString('base64');

/** Configuration for an in-process stack: the test infrastructure, a task queue of its own, quiet logs. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  const infra = testInfra();
  return loadConfig({
    DATABASE_URL: infra.databaseUrl,
    TEMPORAL_ADDRESS: infra.temporalAddress,
    TEMPORAL_TASK_QUEUE: `test-${randomString(10)}`,
    PORT: '0',
    LOG_LEVEL: 'silent',
    // Suites share one database: only a suite that asks for it runs the webhook outbox dispatcher, and its
    // stack gets a database of its own (startStack), so no other suite's worker claims its events onto a task
    // queue that may stop before they are done. The lifecycle drainers need no such care: each drains only its
    // own task queue's rows.
    WEBHOOK_DISPATCHER: 'off',
    // Production refuses to start without them; keys of this run's own keep production suites starting.
    ...(overrides.LEDGER_ENVIRONMENT === 'production'
      ? { WEBHOOK_SECRET_KEY: TEST_WEBHOOK_SECRET_KEY, BANK_DATA_KEY: TEST_BANK_DATA_KEY }
      : {}),
    ...overrides,
  });
}

export interface Stack {
  config: Config;
  pool: Pool;
  temporal: Client;
  connection: Connection;
  api: RunningApi;
  worker: LedgerWorker | null;
  url: string;
  stop(): Promise<void>;
}

/** A worker in this process for a stack's task queue, on the run's Temporal and prebuilt workflow bundle. */
export function startTestWorker(
  stack: Pick<Stack, 'config' | 'pool' | 'temporal'>,
  log: Logger = createLogger('silent'),
): Promise<LedgerWorker> {
  const infra = testInfra();
  return startWorker({
    config: stack.config,
    pool: stack.pool,
    log,
    temporal: stack.temporal,
    address: stack.config.TEMPORAL_ADDRESS ?? infra.temporalAddress,
    workflowBundlePath: infra.workflowBundlePath,
  });
}

/**
 * The api (and, unless `worker: false`, a worker) in this process against the real Postgres and Temporal;
 * `log` replaces the logger of LOG_LEVEL (a suite that reads what was logged). `env.TEMPORAL_ADDRESS` points
 * both at a Temporal server of the suite's own (one it stops or freezes).
 */
export async function startStack(
  options: { env?: Record<string, string>; clock?: Clock; worker?: boolean; log?: Logger; ownDatabase?: boolean } = {},
): Promise<Stack> {
  const infra = testInfra();
  // testConfig turns the dispatcher off unless the suite's env turns it on. `ownDatabase`: a suite whose
  // windows claim every queued ACH entry of the database keeps other suites' entries out of its files.
  const wantsOwn = options.ownDatabase === true || options.env?.WEBHOOK_DISPATCHER === 'on';
  const own = wantsOwn && !options.env?.DATABASE_URL ? await ownDatabase() : null;
  const config = testConfig({ ...options.env, ...(own ? { DATABASE_URL: own.databaseUrl } : {}) });
  const log = options.log ?? createLogger(config.LOG_LEVEL);
  const pool = createPool(config.DATABASE_URL!, config.DATABASE_POOL_MAX);
  const { connection, client } = await connectTemporal(config.TEMPORAL_ADDRESS ?? infra.temporalAddress, config.TEMPORAL_NAMESPACE);
  const worker = options.worker === false ? null : await startTestWorker({ config, pool, temporal: client }, log);
  const api = await startApi({ config, pool, log, temporal: client, clock: options.clock ?? systemClock });
  // LEDGER_RECORD_REQUESTS (npm run contract:record) keeps what this stack accepted for the contract suite.
  recordAcceptedRequests(api.server);
  return {
    config,
    pool,
    temporal: client,
    connection,
    api,
    worker,
    url: api.url,
    async stop() {
      await api.close();
      await worker?.shutdown();
      await connection.close();
      await pool.end();
      await own?.drop();
    },
  };
}

/**
 * A migrated database of a stack's own, named after the run's (so globalSetup sweeps it if a run dies first).
 * The webhook outbox dispatcher claims every organization's events, onto its own stack's task queue: in the
 * shared database, one suite's dispatcher would start another's deliveries on a queue whose worker may stop
 * before they run. So a stack that runs the dispatcher gets a database no other stack dispatches from.
 */
async function ownDatabase(): Promise<{ databaseUrl: string; drop(): Promise<void> }> {
  const shared = new URL(testInfra().databaseUrl);
  return createTestDatabase(
    `${shared.pathname.slice(1)}_own_${randomString(8)
      .toLowerCase()
      .replace(/[^a-z0-9]/g, 'x')}`,
  );
}

/**
 * A fresh migrated database `name` beside the run's: a copy of the template globalSetup migrated once (the same
 * schema as running every migration, in a second instead of several). `drop` removes it.
 */
export function createTestDatabase(name: string): Promise<{ databaseUrl: string; drop(): Promise<void> }> {
  const adminUrl = process.env.LEDGER_TEST_ADMIN_URL;
  const template = process.env.LEDGER_TEST_TEMPLATE_DATABASE;
  if (!adminUrl || !template) throw new Error('test infrastructure missing: run the suites through jest (globalSetup)');
  return cloneScratchDatabase(adminUrl, template, name);
}

export interface TestOrg {
  organizationId: string;
  accountId: string;
  apiKey: string;
  keyId: string;
}

export async function createTestOrg(
  pool: Pool,
  options: { kycRequired?: boolean; environment?: 'sandbox' | 'production'; write?: number; read?: number; allowlist?: string[] } = {},
): Promise<TestOrg> {
  const created = await createOrganization(pool, {
    name: `Test operator ${randomString(6)}`,
    kycRequired: options.kycRequired ?? true,
    environment: options.environment ?? 'sandbox',
  });
  if (options.write !== undefined || options.read !== undefined) await setRateLimits(pool, created.organization.id, options);
  for (const cidr of options.allowlist ?? []) await addAllowlistEntry(pool, created.organization.id, cidr);
  return { organizationId: created.organization.id, accountId: created.account.id, apiKey: created.key.api_key, keyId: created.key.id };
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** A small HTTP client for one API key: `call('POST', '/user', body, { 'X-Idempotency-Key': 'k' })`. */
export function apiClient(baseUrl: string, apiKey: string | null) {
  return async function call<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    const init: RequestInit = { method, headers: { ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}), ...headers } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['Content-Type'] ??= 'application/json';
    }
    const response = await fetch(`${baseUrl}${path}`, init);
    const text = await response.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  };
}

/**
 * Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs`. This waits for a
 * condition (a workflow reaching a state), never for a fixed time.
 */
export async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 30_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Inserts a user straight into the ledger database (for suites that need one but do not test users). */
export async function createTestUser(
  pool: Pool,
  organizationId: string,
  status: 'created' | 'enabled' | 'suspended' | 'disabled' = 'enabled',
): Promise<string> {
  const id = `user_${randomString(24)}`;
  await pool.query(
    `INSERT INTO users (id, organization_id, tag, status, identity_verified, first_name, last_name, email, date_of_birth,
                        address, government_id_type, government_id_last4)
     VALUES ($1, $2, $3, $4, true, 'Test', 'User', 'test@example.com', '1990-01-01',
             '{"address_line_1":"1 Main St","locality":"Newark","administrative_area":"NJ","postal_code":"07102","country":"US"}',
             'passport', '1234')`,
    [id, organizationId, `tag-${randomString(12)}`, status],
  );
  return id;
}
