import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { startApi, type RunningApi } from '../src/api';
import { loadConfig } from '../src/config';
import { createPool, type Pool } from '../src/db/pool';
import { createLogger } from '../src/logger';
import { connectTemporal } from '../src/platform/temporal';
import { apiClient, createTestDatabase, createTestOrg, createTestUser, eventually, testInfra } from './support/harness';
import { idempotencyKey } from './support/payments';
import { freePort } from './support/ports';
import { REPO, TSX } from './support/processes';
import { startScratchTemporal } from './support/scratch';

/**
 * SPEC §14 metrics and logs, across the process split of a deployment: an api in this process and a worker
 * PROCESS (ops/bin/worker.ts) with its own /metrics and the Temporal SDK's exporter. Its own database and
 * Temporal server, since its worker runs the webhook dispatcher, which takes every outbox event it finds.
 */

/** The sum of a metric's samples whose labels include `labels`, from Prometheus text. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => present[key] === value)) total += Number(match[3]);
  }
  return total;
}

async function scrape(url: string): Promise<string> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return response.text();
}

describe('SPEC §14 metrics and Temporal logs across api and worker processes', () => {
  let pool: Pool;
  let api: RunningApi;
  let worker: ChildProcess;
  let workerOutput = '';
  let workerMetricsUrl: string;
  let temporalMetricsUrl: string;
  let receiver: http.Server;
  let receiverUrl: string;
  const cleanup: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    const infra = testInfra();
    const database = `ledger_test_${Date.now()}_metrics`;
    const scratch = await createTestDatabase(database);
    cleanup.push(() => scratch.drop());
    const temporal = await startScratchTemporal(infra.cliPath, path.join(infra.workDir, 'temporal-metrics.log'));
    cleanup.push(() => temporal.stop());

    // A receiver that refuses the first delivery and takes every later one: one failed attempt, then successes.
    let received = 0;
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received += 1;
        res.statusCode = received === 1 ? 500 : 200;
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;

    const workerMetricsPort = await freePort();
    const temporalMetricsPort = await freePort();
    workerMetricsUrl = `http://127.0.0.1:${workerMetricsPort}/metrics`;
    temporalMetricsUrl = `http://127.0.0.1:${temporalMetricsPort}/metrics`;
    const env = {
      DATABASE_URL: scratch.databaseUrl,
      TEMPORAL_ADDRESS: temporal.server.address,
      TEMPORAL_TASK_QUEUE: 'metrics',
      LEDGER_ENVIRONMENT: 'sandbox',
      SANDBOX_CONFIRM_SECONDS: '3600',
      SANDBOX_SETTLE_SECONDS: '3600',
      WEBHOOK_DISPATCH_INTERVAL_MS: '50',
      WEBHOOK_RETRY_INITIAL_MS: '100',
      WEBHOOK_RETRY_MAX_MS: '400',
    };
    worker = spawn(TSX, ['ops/bin/worker.ts'], {
      cwd: REPO,
      env: {
        ...process.env,
        ...env,
        LOG_LEVEL: 'info',
        LEDGER_WORKFLOW_BUNDLE: infra.workflowBundlePath,
        WORKER_METRICS_PORT: String(workerMetricsPort),
        TEMPORAL_METRICS_ADDRESS: `127.0.0.1:${temporalMetricsPort}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    worker.stdout!.on('data', (chunk: Buffer) => (workerOutput += chunk.toString('utf8')));
    worker.stderr!.on('data', (chunk: Buffer) => (workerOutput += chunk.toString('utf8')));
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    cleanup.push(async () => {
      if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGTERM');
      await exited;
    });
    await eventually(
      async () => {
        if (worker.exitCode !== null) throw new Error(`worker exited: ${workerOutput}`);
        return workerOutput.includes('worker running') ? true : undefined;
      },
      90_000,
      'the worker process running',
    );

    const config = loadConfig({ ...env, PORT: '0', LOG_LEVEL: 'silent', WEBHOOK_DISPATCHER: 'off' });
    pool = createPool(scratch.databaseUrl, 4);
    cleanup.push(() => pool.end());
    const { connection, client } = await connectTemporal(temporal.server.address, 'default');
    cleanup.push(() => connection.close());
    api = await startApi({ config, pool, log: createLogger('silent'), temporal: client });
    cleanup.push(() => api.close());
  }, 180_000);

  afterAll(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  test('a cash_in through confirmation, settlement and webhooks moves each ledger metric where it is observed', async () => {
    const org = await createTestOrg(pool);
    const call = apiClient(api.url, org.apiKey);
    expect((await call('POST', '/webhook', { url: receiverUrl }, idempotencyKey())).status).toBe(200);
    const userId = await createTestUser(pool, org.organizationId);

    const apiBefore = await scrape(`${api.url}/metrics`);
    const workerBefore = await scrape(workerMetricsUrl);

    const intent = await call(
      'POST',
      '/intent',
      { direction: 'cash_in', user_id: userId, amount: 4_200, currency: 'USD' },
      idempotencyKey(),
    );
    expect(intent.body.status).toBe('approved');
    const transactionId = intent.body.transactions[0].id as string;
    // A replay of the same request commits nothing new and counts nothing.
    const replayKey = idempotencyKey();
    const second = await call('POST', '/intent', { direction: 'cash_in', user_id: userId, amount: 100, currency: 'USD' }, replayKey);
    expect(
      (await call('POST', '/intent', { direction: 'cash_in', user_id: userId, amount: 100, currency: 'USD' }, replayKey)).headers.get(
        'idempotent-replayed',
      ),
    ).toBe('true');
    const secondId = second.body.transactions[0].id as string;

    await eventually(
      async () =>
        (await call('POST', `/simulate/transaction/${transactionId}/confirm`, undefined, idempotencyKey())).status === 200
          ? true
          : undefined,
      60_000,
      'confirm',
    );
    await eventually(
      async () => ((await call('GET', `/transaction/${transactionId}`)).body.status === 'available' ? true : undefined),
      60_000,
      'available',
    );

    const run = await call('POST', '/simulate/settlement', {}, idempotencyKey());
    expect(run.status).toBe(200);
    const transfer = await eventually(
      async () => {
        const listed = await call('GET', `/transfer?window_date=${run.body.window_date}`);
        return listed.body.data?.[0] as { id: string; direction: string } | undefined;
      },
      60_000,
      'the window transfer',
    );
    expect(transfer.direction).toBe('disbursement');
    await eventually(
      async () =>
        (await call('POST', `/simulate/transfer/${transfer.id}/settle`, undefined, idempotencyKey())).status === 200 ? true : undefined,
      60_000,
      'settle',
    );
    await eventually(
      async () => ((await call('GET', `/transaction/${transactionId}`)).body.status === 'settled' ? true : undefined),
      60_000,
      'settled',
    );

    // The api counts the transactions it recorded (two requests executed, one replayed).
    const apiAfter = await scrape(`${api.url}/metrics`);
    expect(
      sample(apiAfter, 'ledger_transactions_total', { direction: 'cash_in', type: 'intent' }) -
        sample(apiBefore, 'ledger_transactions_total', { direction: 'cash_in', type: 'intent' }),
    ).toBe(2);

    // The worker counts what its activities committed. The second cash_in stayed pending, outside the transfer.
    const workerAfter = await eventually(
      async () => {
        const text = await scrape(workerMetricsUrl);
        return sample(text, 'ledger_webhook_deliveries_total', { outcome: 'succeeded' }) >
          sample(workerBefore, 'ledger_webhook_deliveries_total', { outcome: 'succeeded' })
          ? text
          : undefined;
      },
      60_000,
      'a successful webhook delivery counted',
    );
    const delta = (name: string, labels: Record<string, string> = {}) =>
      sample(workerAfter, name, labels) - sample(workerBefore, name, labels);
    // The confirmation's move to available is the api's (committed with the request); the workflow's step found it made.
    expect(
      sample(apiAfter, 'ledger_transaction_transitions_total', { to_status: 'available' }) -
        sample(apiBefore, 'ledger_transaction_transitions_total', { to_status: 'available' }),
    ).toBe(1);
    expect(delta('ledger_transaction_transitions_total', { to_status: 'available' })).toBe(0);
    expect(delta('ledger_transaction_transitions_total', { to_status: 'settled' })).toBe(1);
    expect(delta('ledger_transfers_total', { direction: 'disbursement' })).toBe(1);
    expect(delta('ledger_settlement_window_duration_seconds_count')).toBe(1);
    expect(delta('ledger_webhook_deliveries_total', { outcome: 'failed' })).toBeGreaterThanOrEqual(1);
    expect((await call('GET', `/transaction/${secondId}`)).body.status).toBe('pending');
    // Neither process shows the other's counters: each is observed in one place only.
    expect(sample(workerAfter, 'ledger_transactions_total')).toBe(0);
    expect(delta('ledger_transactions_total')).toBe(0);
    expect(sample(apiAfter, 'ledger_transfers_total')).toBe(0);

    // The Temporal SDK's own metrics, from the worker's runtime, on TEMPORAL_METRICS_ADDRESS.
    const sdk = await scrape(temporalMetricsUrl);
    expect(sample(sdk, 'temporal_activity_execution_latency_count', { task_queue: 'metrics' })).toBeGreaterThan(0);
    expect(sample(sdk, 'temporal_workflow_completed', { task_queue: 'metrics' })).toBeGreaterThan(0);
    // The dev server hands an activity to the worker in the answer to the workflow task that scheduled it
    // (EAGER_ACTIVITIES, ops/devServer.ts): the first webhook attempt came that way, not through a poll.
    expect(
      sample(sdk, 'temporal_activity_task_received', { task_queue: 'metrics', activity_type: 'deliverWebhookAttempt', eager: 'true' }),
    ).toBeGreaterThan(0);
  }, 240_000);

  test("the Temporal SDK's log lines are pino JSON; an expected webhook delivery failure is one line without a stack", async () => {
    const lines = workerOutput.split('\n').filter((line) => line.trim() !== '');
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    const failures = lines
      .map((line) => JSON.parse(line))
      .filter((entry) => entry.msg === 'Activity failed' && entry.activityType === 'deliverWebhookAttempt');
    expect(failures.length).toBeGreaterThanOrEqual(1);
    expect(failures[0]).toMatchObject({
      level: 40,
      component: 'temporal-sdk',
      failure: { type: 'WebhookAttemptFailed', message: expect.stringMatching(/answered 500/) },
    });
    expect(JSON.stringify(failures[0])).not.toMatch(/stack|\\n\s+at /);
  });
});
