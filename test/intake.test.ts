import path from 'node:path';
import { randomString } from '../src/ids';
import { startTemporalDevServer, type DevServer } from '../ops/devServer';
import { createPool, withTransaction } from '../src/db/pool';
import { settlementDateOf } from '../src/easternDates';
import { drainLifecycleQueueOnce } from '../src/ledger/lifecycleDrainer';
import { awaitingWorkflowSince } from '../src/ledger/lifecycleQueue';
import { insertTransaction } from '../src/ledger/transactions';
import { transactionStatusQuery } from '../src/ledger/workflowContract';
import { createLogger } from '../src/logger';
import { apiClient, createTestOrg, createTestUser, eventually, startStack, testInfra, type Stack } from './support/harness';
import { workflowRunning } from './support/payments';
import { freePort } from './support/ports';

/**
 * SPEC §20: writes answer once Postgres commits; the worker processes' drainers start the queued workflows
 * (and deliver queued confirmations) in creation order, once each, whenever Temporal answers.
 */

/** The value of an unlabelled gauge in a Prometheus text exposition. */
function gauge(text: string, name: string): number {
  const line = text.split('\n').find((each) => each.startsWith(`${name} `));
  if (!line) throw new Error(`no ${name} in /metrics`);
  return Number(line.slice(name.length + 1));
}

describe('SPEC §20 intake that never waits on Temporal: a frozen Temporal server', () => {
  let server: DevServer;
  let stack: Stack;
  let frozen = false;
  const freeze = () => {
    server.process.kill('SIGSTOP');
    frozen = true;
  };
  const thaw = () => {
    if (frozen) server.process.kill('SIGCONT');
    frozen = false;
  };

  beforeAll(async () => {
    server = await startTemporalDevServer({
      cliPath: testInfra().cliPath,
      port: await freePort(),
      uiPort: null,
      dbFile: null,
      namespace: 'default',
      logFile: path.join(testInfra().workDir, 'temporal-intake.log'),
    });
    stack = await startStack({ env: { TEMPORAL_ADDRESS: server.address, SANDBOX_CONFIRM_SECONDS: '3600' } });
  }, 120_000);

  afterAll(async () => {
    thaw();
    await stack?.stop();
    await server?.stop();
  });

  afterEach(() => thaw());

  test('writes answer 200 while Temporal is frozen, /readyz says so, the backlog counts them, and every workflow starts once Temporal answers', async () => {
    const org = await createTestOrg(stack.pool, { kycRequired: false });
    const userId = await createTestUser(stack.pool, org.organizationId);
    const call = apiClient(stack.url, org.apiKey);
    freeze();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        call(
          'POST',
          '/intent',
          { direction: i % 2 ? 'cash_out' : 'cash_in', user_id: userId, amount: 100 + i, currency: 'USD' },
          {
            'X-Idempotency-Key': `frozen-${randomString(8)}`,
          },
        ),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(6).fill(200));
    const ids = answers.map((answer) => answer.body.transactions[0].id as string);
    for (const id of ids) expect(await awaitingWorkflowSince(stack.pool, id)).not.toBeNull();

    const ready = await fetch(`${stack.url}/readyz`);
    expect(ready.status).toBe(200);
    const readiness = (await ready.json()) as { status: string; checks: Record<string, string> };
    expect(readiness.status).toBe('ready');
    expect(readiness.checks.postgres).toBe('ok');
    expect(readiness.checks.temporal).toMatch(/^unavailable: /);

    const metrics = await (await fetch(`${stack.url}/metrics`)).text();
    expect(gauge(metrics, 'ledger_lifecycle_start_backlog')).toBeGreaterThanOrEqual(ids.length);
    expect(gauge(metrics, 'ledger_lifecycle_start_lag_seconds')).toBeGreaterThan(0);

    // The drainer's pass gets no answer (its calls' deadline passes): the rows stay queued, due again at once,
    // and the drainer probes Temporal instead of backing off row by row.
    const attempted = await eventually(
      async () => {
        const { rows } = await stack.pool.query<{ attempts: number; due: boolean }>(
          `SELECT attempts, next_attempt_at <= now() AS due FROM lifecycle_queue WHERE transaction_id = ANY($1)`,
          [ids],
        );
        return rows.length === ids.length && rows.some((row) => row.attempts > 0) ? rows : undefined;
      },
      30_000,
      'a drain pass that Temporal did not answer',
    );
    expect(attempted.every((row) => row.due)).toBe(true);

    thaw();
    for (const id of ids) await workflowRunning(stack, id);
    for (const id of ids) expect(await awaitingWorkflowSince(stack.pool, id)).toBeNull();
    const ok = await fetch(`${stack.url}/readyz`);
    expect(((await ok.json()) as { checks: Record<string, string> }).checks.temporal).toBe('ok');
  });

  test('a confirmation while Temporal is frozen is recorded at once, and delivered to the workflow once Temporal answers', async () => {
    const org = await createTestOrg(stack.pool, { kycRequired: false });
    const userId = await createTestUser(stack.pool, org.organizationId);
    const call = apiClient(stack.url, org.apiKey);
    freeze();
    const intent = await call(
      'POST',
      '/intent',
      { direction: 'cash_in', user_id: userId, amount: 777, currency: 'USD' },
      {
        'X-Idempotency-Key': `confirm-${randomString(8)}`,
      },
    );
    expect(intent.status).toBe(200);
    const id = intent.body.transactions[0].id as string;
    const confirmed = await call('POST', `/simulate/transaction/${id}/confirm`, undefined, { 'X-Idempotency-Key': `c-${randomString(8)}` });
    // The network's confirmation is the ledger's fact at once (SPEC §9), whatever Temporal is doing.
    expect([confirmed.status, confirmed.body.status]).toEqual([200, 'available']);
    expect((await call('GET', `/transaction/${id}`)).body.status).toBe('available');
    thaw();
    // SANDBOX_CONFIRM_SECONDS is an hour here: only the queued confirmation can wake the workflow (started by
    // the queue once Temporal answers) before then, and it then shows `available` too.
    await eventually(
      async () => ((await stack.temporal.workflow.getHandle(id).query(transactionStatusQuery)) === 'available' ? true : undefined),
      30_000,
      'the queued confirmation to reach the workflow',
    );
  });
});

describe('SPEC §20 the lifecycle queue drainers', () => {
  let stack: Stack;
  beforeAll(async () => {
    // No worker: the test drives the drainer passes itself, on task queues of its own.
    stack = await startStack({ worker: false });
  });
  afterAll(async () => {
    await stack.stop();
  });

  /** `n` transactions queued for `taskQueue` (no worker serves it: their workflows only need to exist). */
  async function queued(taskQueue: string, n: number): Promise<string[]> {
    const org = await createTestOrg(stack.pool);
    const ids: string[] = [];
    for (let i = 0; i < n; i += 1) {
      const now = new Date();
      const row = await withTransaction(stack.pool, (tx) =>
        insertTransaction(tx, {
          organizationId: org.organizationId,
          accountId: org.accountId,
          direction: 'cash_in',
          type: 'intent',
          sourceId: null,
          amountCents: 1 + i,
          date: settlementDateOf(now, '00:00'),
          createdAt: now,
          taskQueue,
        }),
      );
      ids.push(row.id);
    }
    return ids;
  }

  const drainer = (taskQueue: string) => ({ pool: stack.pool, client: stack.temporal, taskQueue, log: createLogger('silent') });

  test('two drainers over one queue start every workflow exactly once', async () => {
    const taskQueue = `test-two-drainers-${randomString(8)}`;
    const ids = await queued(taskQueue, 40);
    let started = 0;
    let done = 0;
    const drain = async () => {
      for (;;) {
        const pass = await drainLifecycleQueueOnce(drainer(taskQueue), 7);
        started += pass.started;
        done += pass.done;
        expect(pass.failed).toBe(0);
        if (pass.claimed === 0) return;
      }
    };
    await Promise.all([drain(), drain()]);
    // A second start of one workflow would be answered already_started: done but not started.
    expect(started).toBe(ids.length);
    expect(done).toBe(ids.length);
    for (const id of ids) expect(await awaitingWorkflowSince(stack.pool, id)).toBeNull();
    for (const id of ids) expect((await stack.temporal.workflow.getHandle(id).describe()).taskQueue).toBe(taskQueue);
  });

  test('a drainer whose database connection dies after Temporal accepted its starts leaves the rows; the next pass starts none twice', async () => {
    const taskQueue = `test-dying-drainer-${randomString(8)}`;
    const ids = await queued(taskQueue, 6);
    // The dying drainer's one connection: killed once Temporal has accepted its first start, before the pass's
    // commit (as a SIGKILL of its process would end it).
    const dying = createPool(stack.config.DATABASE_URL!, 1);
    dying.on('error', () => undefined);
    const { rows } = await dying.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    let accepted = 0;
    const killing = new Proxy(stack.temporal, {
      get(target, property, receiver) {
        if (property !== 'withDeadline') return Reflect.get(target, property, receiver);
        return async <R>(deadline: number, fn: () => Promise<R>): Promise<R> => {
          const result = await target.withDeadline(deadline, fn);
          accepted += 1;
          if (accepted === 1) await stack.pool.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
          return result;
        };
      },
    });
    await expect(drainLifecycleQueueOnce({ ...drainer(taskQueue), pool: dying, client: killing })).rejects.toThrow();
    await dying.end().catch(() => undefined);
    expect(accepted).toBeGreaterThan(0);
    for (const id of ids) expect(await awaitingWorkflowSince(stack.pool, id)).not.toBeNull();
    // The next pass finds what the dead one started already started (done, not started again) and starts the rest.
    const next = await drainLifecycleQueueOnce(drainer(taskQueue));
    expect(next).toMatchObject({ claimed: ids.length, done: ids.length, failed: 0 });
    expect(next.started).toBe(ids.length - accepted);
    for (const id of ids) expect(await awaitingWorkflowSince(stack.pool, id)).toBeNull();
    // Visibility catches up with the starts a moment later.
    await eventually(async () =>
      (await stack.temporal.workflow.count(`TaskQueue = '${taskQueue}'`)).count === ids.length ? true : undefined,
    );
  });

  test('rows are drained in creation order, a batch at a time; a queue drains only its own rows', async () => {
    const taskQueue = `test-order-${randomString(8)}`;
    const other = `test-order-other-${randomString(8)}`;
    const ids = await queued(taskQueue, 9);
    const others = await queued(other, 2);
    const first = await drainLifecycleQueueOnce(drainer(taskQueue), 4);
    expect(first).toMatchObject({ claimed: 4, started: 4, failed: 0 });
    const waiting = async () => {
      const still: string[] = [];
      for (const id of ids) if ((await awaitingWorkflowSince(stack.pool, id)) !== null) still.push(id);
      return still;
    };
    expect(await waiting()).toEqual(ids.slice(4));
    await drainLifecycleQueueOnce(drainer(taskQueue), 4);
    expect(await waiting()).toEqual(ids.slice(8));
    await drainLifecycleQueueOnce(drainer(taskQueue), 4);
    expect(await waiting()).toEqual([]);
    for (const id of others) expect(await awaitingWorkflowSince(stack.pool, id)).not.toBeNull();
  });
});
