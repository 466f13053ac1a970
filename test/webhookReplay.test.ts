import { runAdmin } from '../src/cli/admin';
import { recordEvent } from '../src/outbox';
import { webhookResendWorkflowId } from '../src/webhooks/workflowContract';
import { disableEndpoint } from '../src/webhooks/repo';
import { WEBHOOK_REPLAY_LIMITS, WEBHOOK_REPLAY_WORKFLOW_TYPE, webhookReplayProgressQuery } from '../src/webhooks/replayContract';
import type { LedgerWorker } from '../src/worker';
import { apiClient, createTestOrg, eventually, startStack, startTestWorker, testInfra, type Stack } from './support/harness';
import { Receiver, signatureVerifies } from './support/receiver';
import { spawnWorkerProcess, type WorkerProcess } from './support/spawnWorker';

const DAY_MS = 24 * 60 * 60_000;
const SECRET_KEY = Buffer.alloc(32, 9).toString('base64');
/** Fast retries and a quick outbox poll (as in the webhooks suite); secrets sealed. */
const DELIVERY_ENV = {
  WEBHOOK_SECRET_KEY: SECRET_KEY,
  WEBHOOK_DISPATCHER: 'on',
  WEBHOOK_DISPATCH_INTERVAL_MS: '50',
  WEBHOOK_RETRY_INITIAL_MS: '100',
  WEBHOOK_RETRY_MAX_MS: '400',
};

/** `count` events one millisecond apart ending a minute ago, already dispatched (no first delivery); ids oldest first. */
async function insertEvents(stack: Stack, organizationId: string, count: number, type = 'transaction.created'): Promise<string[]> {
  const { rows } = await stack.pool.query<{ id: string }>(
    `INSERT INTO events (organization_id, type, data, created_at, dispatched_at)
     SELECT $1, $2, jsonb_build_object('id', 'txn_r' || lpad(g::text, 6, '0')), now() - interval '1 minute' + g * interval '1 millisecond', now()
       FROM generate_series(1, $3) g
     RETURNING id`,
    [organizationId, type, count],
  );
  return rows.map((row) => row.id);
}

/** An organization with a client and an endpoint on `receiver`. */
async function operator(stack: Stack, receiver: Receiver, events?: string[]) {
  const org = await createTestOrg(stack.pool);
  const call = apiClient(stack.url, org.apiKey);
  const created = await call('POST', '/webhook', events ? { url: receiver.url, events } : { url: receiver.url });
  expect(created.status).toBe(200);
  return { org, call, hook: created.body as { id: string; secret: string } };
}

async function replayDone(call: ReturnType<typeof apiClient>, hookId: string, replayId: string) {
  return eventually(
    async () => {
      const replay = (await call('GET', `/webhook/${hookId}/replay/${replayId}`)).body;
      return replay.status === 'running' ? undefined : replay;
    },
    120_000,
    `replay ${replayId}`,
  );
}

describe('SPEC §17 webhooks: resend', () => {
  let stack: Stack;
  let receiver: Receiver;
  beforeAll(async () => {
    stack = await startStack({ env: DELIVERY_ENV });
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await stack.stop();
    await receiver.close();
  });

  test('a resend sends the event once more with the same webhook-id, freshly signed, and answers its attempt', async () => {
    const { org, call, hook } = await operator(stack, receiver);
    const eventId = await recordEvent(stack.pool, {
      organizationId: org.organizationId,
      type: 'user.created',
      data: { id: 'user_resend' },
    });
    await eventually(async () => (receiver.for(eventId).length === 1 ? true : undefined), 45_000, 'the first delivery');
    const resent = await call('POST', `/webhook/${hook.id}/resend`, { event_id: eventId });
    expect(resent.status).toBe(200);
    expect(resent.body).toMatchObject({
      endpoint_id: hook.id,
      event_id: eventId,
      event_type: 'user.created',
      attempt: 1,
      outcome: 'pending',
    });
    expect(resent.body.id).toMatch(/^whd_/);
    const [first, second] = await eventually(
      async () => (receiver.for(eventId).length === 2 ? receiver.for(eventId) : undefined),
      20_000,
      'the resend',
    );
    expect(second!.headers['webhook-id']).toBe(eventId);
    expect(second!.body).toBe(first!.body);
    expect(signatureVerifies(hook.secret, second!)).toBe(true);
    expect(Number(second!.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(Number(first!.headers['webhook-timestamp']));
    expect(await stack.temporal.workflow.getHandle(webhookResendWorkflowId(resent.body.id)).result()).toEqual({ outcome: 'delivered' });
    const attempts = (await call('GET', `/webhook/${hook.id}/deliveries`)).body.data as Array<{ id: string; outcome: string }>;
    expect(attempts.find((attempt) => attempt.id === resent.body.id)?.outcome).toBe('succeeded');
    expect(attempts.filter((attempt) => attempt.outcome === 'succeeded')).toHaveLength(2);
  });

  test('an unsubscribed type is 400; unknown or other organizations’ events and endpoints are 404; disabled or deleted endpoints 409', async () => {
    const { org, call, hook } = await operator(stack, receiver, ['transaction.created']);
    const stranger = await operator(stack, receiver);
    const userEvent = await recordEvent(stack.pool, { organizationId: org.organizationId, type: 'user.created', data: { id: 'user_x' } });
    const [txnEvent] = await insertEvents(stack, org.organizationId, 1);
    const [strangerEvent] = await insertEvents(stack, stranger.org.organizationId, 1);
    const expectError = async (path: string, body: unknown, status: number, code: string) => {
      const response = await call('POST', path, body);
      expect([response.status, response.body.error?.code]).toEqual([status, code]);
    };
    await expectError(`/webhook/${hook.id}/resend`, { event_id: userEvent }, 400, 'validation_failed');
    await expectError(`/webhook/${hook.id}/resend`, { event_id: 'evt_unknown0000000000000000' }, 404, 'not_found');
    await expectError(`/webhook/${hook.id}/resend`, { event_id: strangerEvent }, 404, 'not_found');
    await expectError(`/webhook/${stranger.hook.id}/resend`, { event_id: txnEvent }, 404, 'not_found');
    await expectError(`/webhook/${hook.id}/resend`, { event_id: txnEvent, extra: 1 }, 400, 'validation_failed');
    await disableEndpoint(stack.pool, hook.id, 'test');
    await expectError(`/webhook/${hook.id}/resend`, { event_id: txnEvent }, 409, 'invalid_state');
    const live = await call('POST', '/webhook', { url: receiver.url });
    expect((await call('DELETE', `/webhook/${live.body.id}`)).status).toBe(200);
    await expectError(`/webhook/${live.body.id}/resend`, { event_id: txnEvent }, 409, 'invalid_state');
    expect(receiver.for(txnEvent!)).toEqual([]);
    expect(receiver.for(strangerEvent!)).toEqual([]);
  });
});

describe('SPEC §17 webhooks: replay', () => {
  let stack: Stack;
  let receiver: Receiver;
  beforeAll(async () => {
    stack = await startStack({ env: { WEBHOOK_SECRET_KEY: SECRET_KEY } });
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await stack.stop();
    await receiver.close();
  });

  test('a replay sends every subscribed event of the range oldest first, signed, and shows its progress here and in Temporal', async () => {
    const { org, call, hook } = await operator(stack, receiver, ['transaction.created']);
    const ids = await insertEvents(stack, org.organizationId, 250);
    await insertEvents(stack, org.organizationId, 5, 'user.created');
    const from = new Date(Date.now() - 10 * 60_000).toISOString();
    const started = await call('POST', `/webhook/${hook.id}/replay`, { created_at_gte: from });
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({
      endpoint_id: hook.id,
      status: 'running',
      events_total: 250,
      types: ['transaction.created'],
      completed_at: null,
    });
    expect(started.body.id).toMatch(/^whr_/);
    const done = await replayDone(call, hook.id, started.body.id);
    expect(done).toMatchObject({ status: 'completed', events_total: 250, events_sent: 250, events_failed: 0 });
    expect(done.completed_at).not.toBeNull();
    const received = ids.map((id) => receiver.for(id));
    expect(received.map((copies) => copies.length)).toEqual(ids.map(() => 1));
    for (const [copy] of received) expect(signatureVerifies(hook.secret, copy!)).toBe(true);
    // Oldest first, batch by batch: every event of a batch arrives before any of the next one's.
    const order = ids.map((id) => receiver.requests.findIndex((request) => request.headers['webhook-id'] === id));
    const batch = WEBHOOK_REPLAY_LIMITS.batchEventsMax;
    for (let start = batch; start < ids.length; start += batch) {
      expect(Math.max(...order.slice(start - batch, start))).toBeLessThan(Math.min(...order.slice(start, start + batch)));
    }
    const handle = stack.temporal.workflow.getHandle(started.body.id);
    expect(await handle.query(webhookReplayProgressQuery)).toEqual({
      status: 'completed',
      eventsTotal: 250,
      eventsSent: 250,
      eventsFailed: 0,
    });
    const description = await handle.describe();
    expect(description.type).toBe(WEBHOOK_REPLAY_WORKFLOW_TYPE);
    expect(description.memo).toMatchObject({ status: 'completed', events_sent: 250 });
    // The endpoint is free for another replay now.
    const again = await call('POST', `/webhook/${hook.id}/replay`, { created_at_gte: from, types: ['transaction.created'] });
    expect(again.status).toBe(200);
    await replayDone(call, hook.id, again.body.id);
  });

  test('failed_only sends only events no delivery of which succeeded; failed sends are counted', async () => {
    const { org, call, hook } = await operator(stack, receiver);
    const ids = await insertEvents(stack, org.organizationId, 6);
    await stack.pool.query(
      `INSERT INTO webhook_deliveries (id, endpoint_id, organization_id, event_id, event_type, attempt, outcome)
       SELECT 'whd_fo' || md5(e), $1, $2, e, 'transaction.created', 1, o FROM unnest($3::text[], $4::text[]) AS t(e, o)`,
      [hook.id, org.organizationId, ids.slice(0, 4), ['succeeded', 'succeeded', 'failed', 'pending']],
    );
    receiver.answer = (request) => (request.headers['webhook-id'] === ids[5] ? 503 : 200);
    const started = await call('POST', `/webhook/${hook.id}/replay`, {
      created_at_gte: new Date(Date.now() - 10 * 60_000).toISOString(),
      failed_only: true,
    });
    expect(started.body).toMatchObject({ status: 'running', events_total: 4, failed_only: true, types: null });
    const done = await replayDone(call, hook.id, started.body.id);
    receiver.answer = () => 200;
    expect(done).toMatchObject({ status: 'completed', events_total: 4, events_sent: 4, events_failed: 1 });
    expect(ids.map((id) => receiver.for(id).length)).toEqual([0, 0, 1, 1, 1, 1]);
  });

  test('a range outside retention or reversed, an unsubscribed type, a running replay or a disabled endpoint are refused', async () => {
    const { org, call, hook } = await operator(stack, receiver, ['transaction.created']);
    const stranger = await operator(stack, receiver);
    const recent = new Date(Date.now() - 60_000).toISOString();
    const expectError = async (hookId: string, body: unknown, status: number, code: string, param?: string) => {
      const response = await call('POST', `/webhook/${hookId}/replay`, body);
      expect([response.status, response.body.error?.code]).toEqual([status, code]);
      if (param) expect(JSON.stringify(response.body.error)).toContain(param);
    };
    await expectError(
      hook.id,
      { created_at_gte: new Date(Date.now() - 31 * DAY_MS).toISOString() },
      400,
      'validation_failed',
      'created_at_gte',
    );
    await expectError(hook.id, { created_at_gte: recent, created_at_lt: recent }, 400, 'validation_failed', 'created_at_lt');
    await expectError(hook.id, { created_at_gte: recent, types: ['user.created'] }, 400, 'validation_failed', 'types');
    await expectError(hook.id, { created_at_gte: recent, types: ['nope'] }, 400, 'validation_failed', 'types');
    await expectError(stranger.hook.id, { created_at_gte: recent }, 404, 'not_found');
    expect((await call('GET', `/webhook/${stranger.hook.id}/replay/whr_nothing000000000000000`)).status).toBe(404);
    await stack.pool.query(
      `INSERT INTO webhook_replays (id, organization_id, endpoint_id, created_at_gte, created_at_lt, failed_only, events_total)
       VALUES ('whr_' || md5($2), $1, $2, now() - interval '1 hour', now(), false, 0)`,
      [org.organizationId, hook.id],
    );
    await expectError(hook.id, { created_at_gte: recent, failed_only: true }, 409, 'invalid_state');
    await stack.pool.query(`UPDATE webhook_replays SET status = 'failed', completed_at = now() WHERE endpoint_id = $1`, [hook.id]);
    await disableEndpoint(stack.pool, hook.id, 'test');
    await expectError(hook.id, { created_at_gte: recent, created_at_lt: new Date().toISOString() }, 409, 'invalid_state');
  });

  test('a POST repeated with the same body is a duplicate (SPEC §5): the same replay, started once', async () => {
    const { org, call, hook } = await operator(stack, receiver);
    await insertEvents(stack, org.organizationId, 3);
    const body = { created_at_gte: new Date(Date.now() - 10 * 60_000).toISOString() };
    const first = await call('POST', `/webhook/${hook.id}/replay`, body);
    const second = await call('POST', `/webhook/${hook.id}/replay`, body);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.id).toBe(first.body.id);
    const { rows } = await stack.pool.query(`SELECT id FROM webhook_replays WHERE endpoint_id = $1`, [hook.id]);
    expect(rows).toHaveLength(1);
    await replayDone(call, hook.id, first.body.id);
  });

  /** `npm run admin -- --json <args>` in this process against the stack; stdout parsed, stderr kept. */
  async function admin(args: string[]): Promise<{ code: number; json: any; stderr: string }> {
    const saved = { ...process.env };
    Object.assign(process.env, {
      DATABASE_URL: stack.config.DATABASE_URL,
      TEMPORAL_ADDRESS: process.env.LEDGER_TEST_TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
    });
    const stdout: string[] = [];
    const stderr: string[] = [];
    const spies = [
      jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => stdout.push(String(chunk)) > 0),
      jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => stderr.push(String(chunk)) > 0),
    ];
    try {
      const code = await runAdmin(['--json', ...args]);
      return { code, json: JSON.parse(stdout.join('')), stderr: stderr.join('') };
    } finally {
      for (const spy of spies) spy.mockRestore();
      process.env = saved;
    }
  }

  test('CLI webhook replay starts a replay, shows a progress bar on stderr and prints the finished replay', async () => {
    const { org, hook } = await operator(stack, receiver);
    const ids = await insertEvents(stack, org.organizationId, 120);
    const from = new Date(Date.now() - 10 * 60_000).toISOString();
    const args = ['webhook', 'replay', '--org', org.organizationId, '--endpoint', hook.id, '--from', from];
    const replayed = await admin(args);
    expect(replayed.code).toBe(0);
    expect(replayed.json).toMatchObject({ endpoint_id: hook.id, status: 'completed', events_total: 120, events_sent: 120 });
    expect(replayed.stderr).toContain('120/120 sent (100%)');
    expect(replayed.stderr).toMatch(/\[#+\.*\] \d+\/120 sent/);
    expect(ids.every((id) => receiver.for(id).length >= 1)).toBe(true);
    const outside = await admin([...args.slice(0, -1), new Date(Date.now() - 40 * DAY_MS).toISOString(), '--failed-only']);
    expect(outside.code).toBe(1);
    expect(outside.json.error).toMatchObject({ code: 'validation_failed' });
    expect(outside.json.error.message).toContain('created_at_gte');
    const stranger = await admin([
      'webhook',
      'replay',
      '--org',
      org.organizationId,
      '--endpoint',
      'whk_nope000000000000000000',
      '--from',
      from,
    ]);
    expect(stranger.json.error).toMatchObject({ code: 'not_found' });
  });

  test('a replay ends failed when its endpoint is deleted midway; a long replay continues as new and sends every event', async () => {
    const { org, call, hook } = await operator(stack, receiver);
    const ids = await insertEvents(stack, org.organizationId, 3 * WEBHOOK_REPLAY_LIMITS.batchEventsMax);
    const { rows } = await stack.pool.query<{ id: string }>(
      `INSERT INTO webhook_replays (id, organization_id, endpoint_id, created_at_gte, created_at_lt, failed_only, events_total)
       VALUES ('whr_' || md5($2), $1, $2, now() - interval '1 hour', now(), false, $3) RETURNING id`,
      [org.organizationId, hook.id, ids.length],
    );
    const replayId = rows[0]!.id;
    const handle = await stack.temporal.workflow.start(WEBHOOK_REPLAY_WORKFLOW_TYPE, {
      taskQueue: stack.config.TEMPORAL_TASK_QUEUE,
      workflowId: replayId,
      args: [{ replayId, batchesPerRunMax: 1 }],
    });
    expect(await handle.result()).toEqual({ status: 'completed', eventsTotal: ids.length, eventsSent: ids.length, eventsFailed: 0 });
    expect((await handle.describe()).runId).not.toBe(handle.firstExecutionRunId);
    expect(ids.every((id) => receiver.for(id).length === 1)).toBe(true);

    await insertEvents(stack, org.organizationId, 2);
    const started = await call('POST', `/webhook/${hook.id}/replay`, { created_at_gte: new Date(Date.now() - 10 * 60_000).toISOString() });
    expect((await call('DELETE', `/webhook/${hook.id}`)).status).toBe(200);
    const done = await replayDone(call, hook.id, started.body.id);
    // The delete may land before the first batch or after the last one; either way the replay ended.
    expect(['failed', 'completed']).toContain(done.status);
    if (done.status === 'failed') expect(done.failure_reason).toBe('The endpoint was deleted.');
  });
});

describe('SPEC §17 webhooks: a replay survives a killed worker', () => {
  let stack: Stack;
  let receiver: Receiver;
  let child: WorkerProcess | null = null;
  let replacement: LedgerWorker | null = null;
  beforeAll(async () => {
    stack = await startStack({ worker: false, env: { WEBHOOK_SECRET_KEY: SECRET_KEY } });
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await child?.kill();
    await replacement?.shutdown();
    await stack.stop();
    await receiver.close();
  });

  test('SIGKILL mid-batch: the next worker resends only that batch, and every event arrives', async () => {
    const { org, call, hook } = await operator(stack, receiver);
    const ids = await insertEvents(stack, org.organizationId, 350);
    const cutAt = ids[150]!;
    // The 151st event's first request hangs, so the worker is killed with its batch in flight.
    receiver.answer = (request, sameEvent) => (request.headers['webhook-id'] === cutAt && sameEvent.length === 1 ? 'hold' : 200);
    const infra = testInfra();
    child = await spawnWorkerProcess(
      {
        DATABASE_URL: stack.config.DATABASE_URL!,
        TEMPORAL_ADDRESS: infra.temporalAddress,
        TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
        LOG_LEVEL: 'silent',
        WEBHOOK_DISPATCHER: 'off',
        WEBHOOK_SECRET_KEY: SECRET_KEY,
      },
      120_000,
    );
    const started = await call('POST', `/webhook/${hook.id}/replay`, { created_at_gte: new Date(Date.now() - 10 * 60_000).toISOString() });
    await eventually(async () => (receiver.for(cutAt).length === 1 ? true : undefined), 60_000, 'the held request');
    const midway = (await call('GET', `/webhook/${hook.id}/replay/${started.body.id}`)).body;
    expect(midway).toMatchObject({ status: 'running', events_sent: 100 });
    await child.kill();
    replacement = await startTestWorker(stack);
    const done = await replayDone(call, hook.id, started.body.id);
    expect(done).toMatchObject({ status: 'completed', events_total: 350, events_sent: 350 });
    const copies = ids.map((id) => receiver.for(id).length);
    expect(copies.every((count) => count >= 1)).toBe(true);
    // Duplicates only in the batch that was cut off (events 101-200).
    copies.forEach((count, index) => {
      if (index < 100 || index >= 200) expect(count).toBe(1);
    });
  }, 180_000);
});
