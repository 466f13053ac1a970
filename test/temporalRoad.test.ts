import path from 'node:path';
import { startTemporalDevServer, type DevServer } from '../ops/devServer';
import { withTransaction } from '../src/db/pool';
import { randomString } from '../src/ids';
import { drainLifecycleQueueOnce } from '../src/ledger/lifecycleDrainer';
import { createLogger } from '../src/logger';
import { enqueueTemporalCommand, type TemporalCommand } from '../src/platform/temporalCommands';
import { accountSettlementWorkflowId } from '../src/settlement/workflowContract';
import { webhookResendWorkflowId } from '../src/webhooks/workflowContract';
import { apiClient, createTestOrg, createTestUser, eventually, startStack, testInfra, type Stack } from './support/harness';
import { approvedCashIn, statusOf } from './support/payments';
import { freePort } from './support/ports';
import { Receiver } from './support/receiver';

/**
 * Issue 32, one road to Temporal: the endpoints that used to call Temporal after their commit (the sandbox's
 * window close and network settlement) or inside their transaction (webhook resend and replay) answer while
 * Temporal is frozen, their answer's effect is a committed row of temporal_commands (so a retry that replays
 * the answer replays a true one), and the effect happens once Temporal answers again.
 */

const SECRET_KEY = Buffer.alloc(32, 7).toString('base64');

describe('issue 32: every start and signal a request needs is queued with its commit (a frozen Temporal server)', () => {
  let server: DevServer;
  let stack: Stack;
  let receiver: Receiver;
  let frozen = false;
  const freeze = () => {
    server.process.kill('SIGSTOP');
    frozen = true;
  };
  const thaw = () => {
    if (frozen) server.process.kill('SIGCONT');
    frozen = false;
  };
  const key = () => ({ 'X-Idempotency-Key': `road-${randomString(12)}` });

  /** The committed commands of one workflow, oldest first. */
  const queued = async (workflowId: string) =>
    (
      await stack.pool.query<{ kind: string }>(`SELECT kind FROM temporal_commands WHERE workflow_id = $1 ORDER BY id`, [workflowId])
    ).rows.map((row) => row.kind);

  /** POSTs while frozen, then the same request again: both 200 with one body, the second a replay, its effect queued. */
  async function answeredWhileFrozen(call: ReturnType<typeof apiClient>, route: string, body: unknown) {
    const headers = key();
    const first = await call('POST', route, body, headers);
    expect(first.status).toBe(200);
    const again = await call('POST', route, body, headers);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    return first.body;
  }

  beforeAll(async () => {
    server = await startTemporalDevServer({
      cliPath: testInfra().cliPath,
      port: await freePort(),
      uiPort: null,
      dbFile: null,
      namespace: 'default',
      logFile: path.join(testInfra().workDir, 'temporal-road.log'),
    });
    stack = await startStack({
      env: {
        TEMPORAL_ADDRESS: server.address,
        SANDBOX_CONFIRM_SECONDS: '3600',
        SANDBOX_SETTLE_SECONDS: '3600',
        WEBHOOK_SECRET_KEY: SECRET_KEY,
        WEBHOOK_RETRY_INITIAL_MS: '100',
        WEBHOOK_RETRY_MAX_MS: '400',
      },
    });
    receiver = await Receiver.start();
  }, 120_000);

  afterAll(async () => {
    thaw();
    await stack?.stop();
    await server?.stop();
    await receiver?.close();
  });

  afterEach(() => thaw());

  test('POST /simulate/settlement and /simulate/transfer/{id}/settle answer while Temporal is frozen and take effect when it answers', async () => {
    const org = await createTestOrg(stack.pool, { kycRequired: false, write: 100_000, read: 100_000 });
    const userId = await createTestUser(stack.pool, org.organizationId);
    const call = apiClient(stack.url, org.apiKey);
    const cashIn = (await approvedCashIn(call, userId, 900)).transactions[0]!.id;
    expect((await call('POST', `/simulate/transaction/${cashIn}/confirm`, {}, key())).status).toBe(200);
    await statusOf(call, cashIn, 'available');

    freeze();
    const close = await answeredWhileFrozen(call, '/simulate/settlement', { account_id: org.accountId });
    expect(close).toMatchObject({ account_id: org.accountId, status: 'started' });
    expect(await queued(close.id)).toEqual(['start']);
    thaw();
    const transfer = await eventually(
      async () => {
        const [built] = (await call('GET', `/transfer?account_id=${org.accountId}`)).body.data as Array<{ id: string; status: string }>;
        return built?.status === 'pending' ? built : undefined;
      },
      60_000,
      'the window close to build the transfer',
    );
    expect(await queued(close.id)).toEqual([]);

    freeze();
    const settling = await answeredWhileFrozen(call, `/simulate/transfer/${transfer.id}/settle`, {});
    expect(settling).toMatchObject({ id: transfer.id, status: 'pending' });
    const workflowId = accountSettlementWorkflowId(org.accountId, close.window_date as string);
    expect(await queued(workflowId)).toEqual(['signal']);
    thaw();
    // SANDBOX_SETTLE_SECONDS is an hour: only the queued signal can settle it.
    await eventually(
      async () => ((await call('GET', `/transfer/${transfer.id}`)).body.status === 'settled' ? true : undefined),
      60_000,
      'the queued network signal to settle the transfer',
    );
    expect(await queued(workflowId)).toEqual([]);
    await statusOf(call, cashIn, 'settled');
  }, 180_000);

  test('POST /webhook/{id}/resend and /replay answer while Temporal is frozen and send once it answers', async () => {
    const org = await createTestOrg(stack.pool);
    const call = apiClient(stack.url, org.apiKey);
    const hook = (await call('POST', '/webhook', { url: receiver.url })).body as { id: string };
    const { rows } = await stack.pool.query<{ id: string }>(
      `INSERT INTO events (organization_id, type, data, created_at, dispatched_at)
       SELECT $1, 'transaction.created', jsonb_build_object('id', 'txn_road' || g), now() - interval '1 minute' + g * interval '1 millisecond', now()
         FROM generate_series(1, 3) g RETURNING id`,
      [org.organizationId],
    );
    const [resent, ...others] = rows.map((row) => row.id);

    freeze();
    const attempt = await answeredWhileFrozen(call, `/webhook/${hook.id}/resend`, { event_id: resent });
    expect(attempt).toMatchObject({ event_id: resent, attempt: 1 });
    expect(await queued(webhookResendWorkflowId(attempt.id as string))).toEqual(['start']);
    const replay = await answeredWhileFrozen(call, `/webhook/${hook.id}/replay`, {
      created_at_gte: new Date(Date.now() - 600_000).toISOString(),
    });
    expect(replay).toMatchObject({ status: 'running', events_total: 3 });
    expect(await queued(replay.id as string)).toEqual(['start']);
    expect(receiver.for(resent!)).toEqual([]);

    thaw();
    await eventually(
      async () => ((await call('GET', `/webhook/${hook.id}/replay/${replay.id}`)).body.status === 'completed' ? true : undefined),
      60_000,
      'the queued replay to complete',
    );
    // The resend once, the replay once more: never a copy of a delivered command.
    await eventually(async () => (receiver.for(resent!).length === 2 ? true : undefined), 30_000, 'the queued resend');
    for (const id of others) expect(receiver.for(id)).toHaveLength(1);
    expect(await queued(replay.id as string)).toEqual([]);
  }, 180_000);

  test('a rolled-back write queues nothing; one workflow gets its commands one at a time, in order; repeats and missing workflows are harmless', async () => {
    // A task queue no drainer of the stack claims and no worker polls: this test's passes alone deliver.
    const drainQueue = `road-${randomString(8)}`;
    const deps = { pool: stack.pool, client: stack.temporal, taskQueue: drainQueue, log: createLogger('silent') };
    const context = { drainQueue, now: new Date() };
    const workflowId = `road-wf-${randomString(8)}`;
    const start: TemporalCommand = {
      kind: 'start',
      workflowId,
      workflowType: 'roadTestWorkflow',
      taskQueue: drainQueue,
      args: [{ n: 1 }],
      idReusePolicy: 'reject_duplicate',
    };
    await expect(
      withTransaction(stack.pool, async (db) => {
        await enqueueTemporalCommand(db, context, start);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await queued(workflowId)).toEqual([]);

    await withTransaction(stack.pool, async (db) => {
      await enqueueTemporalCommand(db, context, start);
      await enqueueTemporalCommand(db, context, { kind: 'signal', workflowId, signal: 'roadSignal', signalArgs: ['once'] });
      await enqueueTemporalCommand(db, context, start);
      await enqueueTemporalCommand(db, context, { kind: 'signal', workflowId: `road-missing-${randomString(8)}`, signal: 'roadSignal' });
    });
    // Pass 1: the start and the other workflow's signal (nothing to signal: delivered as not running).
    expect(await drainLifecycleQueueOnce(deps)).toMatchObject({ claimed: 2, started: 1, done: 2, failed: 0 });
    expect(await queued(workflowId)).toEqual(['signal', 'start']);
    // Pass 2: the signal reaches the started workflow; pass 3: the second start answers already started.
    expect(await drainLifecycleQueueOnce(deps)).toMatchObject({ claimed: 1, started: 0, done: 1 });
    expect(await drainLifecycleQueueOnce(deps)).toMatchObject({ claimed: 1, started: 0, done: 1 });
    expect(await queued(workflowId)).toEqual([]);
    const handle = stack.temporal.workflow.getHandle(workflowId);
    const { events } = await handle.fetchHistory();
    const signals = (events ?? []).filter((event) => event.workflowExecutionSignaledEventAttributes);
    expect(signals.map((event) => event.workflowExecutionSignaledEventAttributes!.signalName)).toEqual(['roadSignal']);
    await handle.terminate('test done');
  });
});
