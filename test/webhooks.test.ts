import { WorkflowNotFoundError } from '@temporalio/client';
import { recordEvent } from '../src/outbox';
import { webhookDeliveryWorkflowId } from '../src/webhooks/workflowContract';
import { createEndpoint, INTERRUPTED_ATTEMPT_ERROR } from '../src/webhooks/repo';
import { retryDelayMs } from '../src/webhooks/http';
import { generateSecret, openSecret, sealSecret, signPayload } from '../src/webhooks/signing';
import { forbiddenRange } from '../src/webhooks/ssrf';
import type { LedgerWorker } from '../src/worker';
import { apiClient, createTestOrg, eventually, startStack, startTestWorker, testInfra, type Stack, type TestOrg } from './support/harness';
import { spawnWorkerProcess, type WorkerProcess } from './support/spawnWorker';
import { Receiver, signatureVerifies } from './support/receiver';

async function dispatchedAt(stack: Stack, eventId: string): Promise<Date | null> {
  const { rows } = await stack.pool.query<{ dispatched_at: Date | null }>(`SELECT dispatched_at FROM events WHERE id = $1`, [eventId]);
  return rows[0]!.dispatched_at;
}

/** The delivery workflow's result, once the dispatcher has started it. */
async function deliveryOutcome(stack: Stack, eventId: string, endpointId: string): Promise<{ outcome: string }> {
  const handle = stack.temporal.workflow.getHandle(webhookDeliveryWorkflowId(eventId, endpointId));
  await eventually(() => handle.describe(), 20_000, `the delivery workflow of ${eventId}`);
  return handle.result();
}

const SECRET_KEY = Buffer.alloc(32, 7).toString('base64');

/**
 * Fast retries and a quick outbox poll, so the suite waits milliseconds where production waits seconds;
 * secrets sealed, so every delivery below also opens a sealed secret.
 */
const DELIVERY_ENV = {
  WEBHOOK_SECRET_KEY: SECRET_KEY,
  WEBHOOK_DISPATCHER: 'on',
  WEBHOOK_DISPATCH_INTERVAL_MS: '50',
  WEBHOOK_RETRY_INITIAL_MS: '100',
  WEBHOOK_RETRY_MAX_MS: '400',
};

describe('SPEC §12 webhooks: Standard Webhooks signing', () => {
  test('signatures match the Standard Webhooks reference vector', () => {
    // The test vector of the Standard Webhooks reference libraries: same secret, id, timestamp and body.
    const headers = signPayload(
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      1614265330,
      '{"test": 2432232314}',
    );
    expect(headers).toEqual({
      'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'webhook-timestamp': '1614265330',
      'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    });
  });

  test('retry delays grow exponentially from the initial interval, capped, with jitter in the upper half', () => {
    const retry = { initialIntervalMs: 5_000, maxIntervalMs: 3_600_000 };
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, retry, () => 1))).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, retry, () => 0))).toEqual([2_500, 5_000, 10_000, 20_000]);
    expect(retryDelayMs(30, retry, () => 1)).toBe(3_600_000);
    expect(retryDelayMs(1_000, retry, () => 0.5)).toBe(2_700_000);
  });
});

describe('SPEC §12 webhooks: endpoint management', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: ReturnType<typeof apiClient>;
  beforeAll(async () => {
    stack = await startStack();
    org = await createTestOrg(stack.pool);
    call = apiClient(stack.url, org.apiKey);
  });
  afterAll(async () => {
    await stack.stop();
  });

  test('POST /webhook answers the endpoint with a whsec_ secret that is never shown again', async () => {
    const created = await call('POST', '/webhook', {
      url: 'https://operator.example.invalid/hooks',
      events: ['user.created', 'transaction.status_changed'],
    });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^whk_[A-Za-z0-9]{16,}$/),
      url: 'https://operator.example.invalid/hooks',
      events: ['user.created', 'transaction.status_changed'],
      status: 'enabled',
      disabled_reason: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
      created_at: expect.any(String),
    });
    expect(Buffer.from(created.body.secret.slice(6), 'base64')).toHaveLength(24);

    const fetched = await call('GET', `/webhook/${created.body.id}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body).not.toHaveProperty('secret');
    expect(fetched.text).not.toContain(created.body.secret);
    const listed = await call('GET', '/webhook');
    expect(listed.text).not.toContain(created.body.secret);
    expect(listed.body.data.every((endpoint: object) => !('secret' in endpoint))).toBe(true);
  });

  test('events defaults to every event type', async () => {
    const created = await call('POST', '/webhook', { url: 'http://localhost:9/all' });
    expect(created.status).toBe(200);
    expect(created.body.events).toEqual(['*']);
  });

  test.each([
    [{ url: 'ftp://operator.example.invalid/hooks' }, 'url'],
    [{ url: 'not a url' }, 'url'],
    [{ url: 'https://user:pass@operator.example.invalid/hooks' }, 'url'],
    [{ url: 'https://operator.example.invalid/hooks', events: ['user.exploded'] }, 'events.0'],
    [{ url: 'https://operator.example.invalid/hooks', events: [] }, 'events'],
    [{ url: 'https://operator.example.invalid/hooks', events: ['*', 'user.created'] }, 'events'],
    [{ url: 'https://operator.example.invalid/hooks', extra: true }, '(body)'],
  ])('an invalid body %j is 400 validation_failed naming %s', async (body, param) => {
    const response = await call('POST', '/webhook', body);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'validation_failed', param });
  });

  test('GET /webhook pages newest first with a cursor, without skips or repeats', async () => {
    const own = await createTestOrg(stack.pool);
    const ownCall = apiClient(stack.url, own.apiKey);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await ownCall('POST', '/webhook', { url: `https://operator.example.invalid/hooks/${i}` })).body.id);
    const first = await ownCall('GET', '/webhook?limit=2');
    expect(first.body).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
    // A row inserted between pages lands before the cursor, so the next pages neither skip nor repeat.
    await ownCall('POST', '/webhook', { url: 'https://operator.example.invalid/hooks/late' });
    const second = await ownCall('GET', `/webhook?limit=2&cursor=${first.body.next_cursor}`);
    const third = await ownCall('GET', `/webhook?limit=2&cursor=${second.body.next_cursor}`);
    expect(third.body).toMatchObject({ has_more: false, next_cursor: null });
    const seen = [...first.body.data, ...second.body.data, ...third.body.data].map((endpoint: { id: string }) => endpoint.id);
    expect(seen).toEqual([...ids].reverse());
    expect((await ownCall('GET', '/webhook?cursor=whk_doesnotexist000000000')).status).toBe(400);
  });

  test("DELETE /webhook/{id} removes the endpoint; another organization's endpoint is 404 everywhere", async () => {
    const created = await call('POST', '/webhook', { url: 'https://operator.example.invalid/hooks/delete-me' });
    const other = apiClient(stack.url, (await createTestOrg(stack.pool)).apiKey);
    for (const [method, path] of [
      ['GET', ''],
      ['GET', '/deliveries'],
      ['DELETE', ''],
    ] as const) {
      const response = await other(method, `/webhook/${created.body.id}${path}`);
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('not_found');
    }
    expect((await other('GET', '/webhook')).body.data).toEqual([]);

    const deleted = await call('DELETE', `/webhook/${created.body.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: created.body.id, deleted: true });
    expect((await call('GET', `/webhook/${created.body.id}`)).status).toBe(404);
    expect((await call('DELETE', `/webhook/${created.body.id}`)).status).toBe(404);
    const { rows } = await stack.pool.query(`SELECT secret_sealed FROM webhook_endpoints WHERE id = $1`, [created.body.id]);
    expect(rows[0].secret_sealed).toBeNull();
  });

  test('a new endpoint has no delivery attempts', async () => {
    const created = await call('POST', '/webhook', { url: 'https://operator.example.invalid/hooks/quiet' });
    const deliveries = await call('GET', `/webhook/${created.body.id}/deliveries`);
    expect(deliveries.status).toBe(200);
    expect(deliveries.body).toEqual({ data: [], has_more: false, next_cursor: null });
  });

  test('/openapi.json documents the endpoints and the signed event request', async () => {
    const document = (await (await fetch(`${stack.url}/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
      webhooks: { event: { post: { parameters: Array<{ name: string }> } } };
    };
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/webhook', '/webhook/{id}', '/webhook/{id}/deliveries']));
    expect(document.webhooks.event.post.parameters.map((p) => p.name)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
  });

  test('the secret is stored sealed when WEBHOOK_SECRET_KEY is configured, and opens only with that key', async () => {
    const secret = generateSecret();
    const sealed = sealSecret(secret, SECRET_KEY);
    expect(sealed).toMatch(/^gcm1:/);
    expect(sealed).not.toContain(secret.slice(6));
    expect(openSecret(sealed, SECRET_KEY)).toBe(secret);
    expect(() => openSecret(sealed, Buffer.alloc(32, 1).toString('base64'))).toThrow();
    expect(() => openSecret(sealed, undefined)).toThrow(/WEBHOOK_SECRET_KEY/);
    expect(openSecret(sealSecret(secret, undefined), SECRET_KEY)).toBe(secret);
  });
});

describe('SPEC §12 webhooks: signed, durable delivery', () => {
  let stack: Stack;
  let receiver: Receiver;
  const extraWorkers: LedgerWorker[] = [];
  beforeAll(async () => {
    stack = await startStack({ env: DELIVERY_ENV });
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    for (const worker of extraWorkers) await worker.shutdown();
    await stack.stop();
    await receiver.close();
  });

  /** Each test gets an organization of its own, so no other test's endpoint receives its events. */
  async function operator() {
    const org = await createTestOrg(stack.pool);
    const call = apiClient(stack.url, org.apiKey);
    return {
      org,
      call,
      endpoint: async (events?: string[], url = receiver.url): Promise<{ id: string; secret: string }> => {
        const created = await call('POST', '/webhook', events ? { url, events } : { url });
        expect(created.status).toBe(200);
        return created.body;
      },
      deliveries: async (endpointId: string) => {
        return (await call('GET', `/webhook/${endpointId}/deliveries`)).body.data as Array<Record<string, unknown>>;
      },
    };
  }

  function outcome(eventId: string, endpointId: string): Promise<{ outcome: string }> {
    return deliveryOutcome(stack, eventId, endpointId);
  }

  test('an event recorded in the outbox is POSTed as { id, type, created_at, data } with a Standard Webhooks signature that verifies', async () => {
    const { org, endpoint, deliveries } = await operator();
    receiver.answer = () => 200;
    const hook = await endpoint();
    const data = { id: 'user_abc', status: 'enabled' };
    const recordedFromSeconds = Math.floor(Date.now() / 1000);
    const eventId = await recordEvent(stack.pool, { organizationId: org.organizationId, type: 'user.created', data });
    const [request] = await eventually(async () => (receiver.for(eventId).length ? receiver.for(eventId) : undefined), 20_000, 'delivery');
    const receivedBySeconds = Math.ceil(Date.now() / 1000);
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['webhook-id']).toBe(eventId);
    // The attempt's own time: after the event was recorded, before it arrived.
    const timestamp = Number(request!.headers['webhook-timestamp']);
    expect(timestamp).toBeGreaterThanOrEqual(recordedFromSeconds);
    expect(timestamp).toBeLessThanOrEqual(receivedBySeconds);
    expect(request!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(signatureVerifies(hook.secret, request!)).toBe(true);
    expect(signatureVerifies(generateSecret(), request!)).toBe(false);
    expect(JSON.parse(request!.body)).toEqual({ id: eventId, type: 'user.created', created_at: expect.any(String), data });

    expect(await outcome(eventId, hook.id)).toEqual({ outcome: 'delivered' });
    expect(await dispatchedAt(stack, eventId)).toBeInstanceOf(Date);
    const { rows } = await stack.pool.query(`SELECT secret_sealed FROM webhook_endpoints WHERE id = $1`, [hook.id]);
    expect(rows[0].secret_sealed).toMatch(/^gcm1:/);
    const attempts = await deliveries(hook.id);
    expect(attempts).toEqual([
      {
        id: expect.stringMatching(/^whd_/),
        endpoint_id: hook.id,
        event_id: eventId,
        event_type: 'user.created',
        attempt: 1,
        outcome: 'succeeded',
        response_status_code: 200,
        duration_ms: expect.any(Number),
        error: null,
        created_at: expect.any(String),
      },
    ]);
  });

  test('an endpoint receives only the event types it subscribed to, and only events after it was registered', async () => {
    const { org, endpoint, deliveries } = await operator();
    const before = await recordEvent(stack.pool, {
      organizationId: org.organizationId,
      type: 'transfer.settled',
      data: { id: 'transfer_before' },
    });
    await eventually(async () => ((await dispatchedAt(stack, before)) ? true : undefined), 20_000, 'dispatch of the earlier event');
    const hook = await endpoint(['transfer.settled']);
    const skipped = await recordEvent(stack.pool, {
      organizationId: org.organizationId,
      type: 'user.created',
      data: { id: 'user_skipped' },
    });
    const wanted = await recordEvent(stack.pool, {
      organizationId: org.organizationId,
      type: 'transfer.settled',
      data: { id: 'transfer_1' },
    });
    // "After" is the outbox's order, not the clock: an event stamped with an earlier time still arrives.
    const backdated = await recordEvent(stack.pool, {
      organizationId: org.organizationId,
      type: 'transfer.settled',
      data: { id: 'transfer_2' },
      createdAt: new Date('2020-01-01T00:00:00Z'),
    });
    expect(await outcome(wanted, hook.id)).toEqual({ outcome: 'delivered' });
    expect(await outcome(backdated, hook.id)).toEqual({ outcome: 'delivered' });
    expect(JSON.parse(receiver.for(backdated)[0]!.body).created_at).toBe('2020-01-01T00:00:00.000Z');
    await eventually(async () => ((await dispatchedAt(stack, skipped)) ? true : undefined), 20_000, 'dispatch');
    // Dispatched, yet no delivery workflow was ever started for the unsubscribed pair.
    for (const eventId of [skipped, before]) {
      await expect(stack.temporal.workflow.getHandle(webhookDeliveryWorkflowId(eventId, hook.id)).describe()).rejects.toBeInstanceOf(
        WorkflowNotFoundError,
      );
    }
    expect((await deliveries(hook.id)).map((attempt) => attempt.event_id).sort()).toEqual([wanted, backdated].sort());
  });

  test('a 500 is retried with backoff and the next 200 delivers it; every attempt is recorded', async () => {
    const { org, endpoint, deliveries } = await operator();
    const hook = await endpoint(['transaction.created']);
    receiver.answer = (_request, sameEvent) => (sameEvent.length === 1 ? 500 : 200);
    const eventId = await recordEvent(stack.pool, {
      organizationId: org.organizationId,
      type: 'transaction.created',
      data: { id: 'txn_retry' },
    });
    expect(await outcome(eventId, hook.id)).toEqual({ outcome: 'delivered' });
    const attempts = await deliveries(hook.id);
    expect(attempts.map((a) => [a.attempt, a.outcome, a.response_status_code])).toEqual([
      [2, 'succeeded', 200],
      [1, 'failed', 500],
    ]);
    expect(attempts[1]!.error).toBe('the endpoint answered 500');
    expect(receiver.for(eventId)).toHaveLength(2);
  });

  test('duplicate deliveries of one event share one webhook-id and body, each freshly signed', async () => {
    const { org, endpoint } = await operator();
    const hook = await endpoint(['refund.created']);
    receiver.answer = (_request, sameEvent) => (sameEvent.length < 3 ? 503 : 200);
    const eventId = await recordEvent(stack.pool, {
      organizationId: org.organizationId,
      type: 'refund.created',
      data: { id: 'refund_dup' },
    });
    expect(await outcome(eventId, hook.id)).toEqual({ outcome: 'delivered' });
    const copies = receiver.for(eventId);
    expect(copies).toHaveLength(3);
    expect(new Set(copies.map((copy) => copy.headers['webhook-id']))).toEqual(new Set([eventId]));
    expect(new Set(copies.map((copy) => copy.body)).size).toBe(1);
    for (const copy of copies) expect(signatureVerifies(hook.secret, copy)).toBe(true);

    // Dispatching the same event again (a dispatcher that crashed before its commit) starts nothing new.
    const { runId } = await stack.temporal.workflow.getHandle(webhookDeliveryWorkflowId(eventId, hook.id)).describe();
    await stack.pool.query(`UPDATE events SET dispatched_at = NULL WHERE id = $1`, [eventId]);
    await eventually(async () => ((await dispatchedAt(stack, eventId)) ? true : undefined), 20_000, 'second dispatch');
    expect((await stack.temporal.workflow.getHandle(webhookDeliveryWorkflowId(eventId, hook.id)).describe()).runId).toBe(runId);
    expect(receiver.for(eventId)).toHaveLength(3);
  });

  test('a 410 answer disables the endpoint and nothing more is sent to it', async () => {
    const { org, call, endpoint, deliveries } = await operator();
    const gone = await Receiver.start();
    try {
      gone.answer = () => 410;
      const hook = await endpoint(['dispute.created'], gone.url);
      const first = await recordEvent(stack.pool, {
        organizationId: org.organizationId,
        type: 'dispute.created',
        data: { id: 'dispute_1' },
      });
      expect(await outcome(first, hook.id)).toEqual({ outcome: 'endpoint_disabled' });
      const fetched = await call('GET', `/webhook/${hook.id}`);
      expect(fetched.body).toMatchObject({ status: 'disabled', disabled_reason: expect.stringContaining('410') });
      expect((await deliveries(hook.id)).map((a) => [a.attempt, a.outcome, a.response_status_code])).toEqual([[1, 'failed', 410]]);

      const second = await recordEvent(stack.pool, {
        organizationId: org.organizationId,
        type: 'dispute.created',
        data: { id: 'dispute_2' },
      });
      await eventually(async () => ((await dispatchedAt(stack, second)) ? true : undefined), 20_000, 'dispatch');
      await expect(stack.temporal.workflow.getHandle(webhookDeliveryWorkflowId(second, hook.id)).describe()).rejects.toBeInstanceOf(
        WorkflowNotFoundError,
      );
      expect(gone.requests).toHaveLength(1);
    } finally {
      await gone.close();
    }
  });

  test('deleting an endpoint ends its retries in progress', async () => {
    const { org, call, endpoint } = await operator();
    const failing = await Receiver.start();
    try {
      failing.answer = () => 500;
      const hook = await endpoint(['dispute.resolved'], failing.url);
      const eventId = await recordEvent(stack.pool, {
        organizationId: org.organizationId,
        type: 'dispute.resolved',
        data: { id: 'dispute_3' },
      });
      await eventually(async () => (failing.requests.length >= 2 ? true : undefined), 20_000, 'two failed attempts');
      expect((await call('DELETE', `/webhook/${hook.id}`)).status).toBe(200);
      expect(await outcome(eventId, hook.id)).toEqual({ outcome: 'endpoint_inactive' });
    } finally {
      await failing.close();
    }
  });

  test('a worker shut down between retries, with events still in the outbox, loses nothing: a new worker delivers them all', async () => {
    const { org, endpoint } = await operator();
    const hook = await endpoint(['transfer.created']);
    let receiverUp = false;
    receiver.answer = () => (receiverUp ? 200 : 500);
    const inFlight = await recordEvent(stack.pool, {
      organizationId: org.organizationId,
      type: 'transfer.created',
      data: { id: 'transfer_inflight' },
    });
    const handle = stack.temporal.workflow.getHandle(webhookDeliveryWorkflowId(inFlight, hook.id));
    // Wait until Temporal holds a retry for it: the first attempt failed and was reported.
    await eventually(
      async () => {
        const description = await handle.describe();
        return (description.raw.pendingActivities?.[0]?.attempt ?? 0) >= 2 ? true : undefined;
      },
      20_000,
      'a pending retry',
    );

    await stack.worker!.shutdown();
    // No worker, no dispatcher: this event waits in the outbox.
    const waiting = await recordEvent(stack.pool, {
      organizationId: org.organizationId,
      type: 'transfer.created',
      data: { id: 'transfer_waiting' },
    });
    expect(await dispatchedAt(stack, waiting)).toBeNull();

    receiverUp = true;
    extraWorkers.push(await startTestWorker(stack));
    expect(await handle.result()).toEqual({ outcome: 'delivered' });
    expect(await outcome(waiting, hook.id)).toEqual({ outcome: 'delivered' });
    expect(receiver.for(inFlight).at(-1)!.headers['webhook-id']).toBe(inFlight);
    expect(receiver.for(waiting)).toHaveLength(1);
  });
});

describe('SPEC §12 webhooks: a killed worker', () => {
  let stack: Stack;
  let receiver: Receiver;
  let child: WorkerProcess | null = null;
  let replacement: LedgerWorker | null = null;
  beforeAll(async () => {
    // The api only: the worker runs in a child process this suite can SIGKILL.
    stack = await startStack({ worker: false, env: DELIVERY_ENV });
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await child?.kill();
    await replacement?.shutdown();
    await stack.stop();
    await receiver.close();
  });

  test('an attempt cut short by SIGKILL, and events recorded while no worker runs, are delivered by the next worker', async () => {
    const org = await createTestOrg(stack.pool);
    const call = apiClient(stack.url, org.apiKey);
    const hook = (await call('POST', '/webhook', { url: receiver.url })).body as { id: string; secret: string };
    // The first request hangs, so the worker is killed with the attempt in flight; later ones succeed.
    receiver.answer = (_request, sameEvent) => (sameEvent.length === 1 ? 'hold' : 200);
    const infra = testInfra();
    child = await spawnWorkerProcess({
      DATABASE_URL: stack.config.DATABASE_URL!,
      TEMPORAL_ADDRESS: infra.temporalAddress,
      TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
      LOG_LEVEL: 'silent',
      ...DELIVERY_ENV,
    });

    const inFlight = await recordEvent(stack.pool, {
      organizationId: org.organizationId,
      type: 'transaction.status_changed',
      data: {
        id: 'txn_killed',
        previous_status: 'pending',
      },
    });
    await eventually(async () => (receiver.for(inFlight).length === 1 ? true : undefined), 30_000, 'the first attempt to arrive');
    const pending = (await call('GET', `/webhook/${hook.id}/deliveries`)).body.data;
    expect(pending).toMatchObject([{ event_id: inFlight, attempt: 1, outcome: 'pending', duration_ms: null }]);

    await child.kill();
    const waiting = await recordEvent(stack.pool, {
      organizationId: org.organizationId,
      type: 'transaction.created',
      data: { id: 'txn_waiting' },
    });
    expect(await dispatchedAt(stack, waiting)).toBeNull();

    replacement = await startTestWorker(stack);
    expect(await deliveryOutcome(stack, inFlight, hook.id)).toEqual({ outcome: 'delivered' });
    expect(await deliveryOutcome(stack, waiting, hook.id)).toEqual({ outcome: 'delivered' });

    const copies = receiver.for(inFlight);
    expect(copies).toHaveLength(2);
    for (const copy of copies) expect(signatureVerifies(hook.secret, copy)).toBe(true);
    const attempts = (await call('GET', `/webhook/${hook.id}/deliveries?limit=100`)).body.data as Array<Record<string, unknown>>;
    expect(attempts.filter((a) => a.event_id === inFlight).map((a) => [a.attempt, a.outcome, a.response_status_code, a.error])).toEqual([
      [2, 'succeeded', 200, null],
      [1, 'failed', null, INTERRUPTED_ATTEMPT_ERROR],
    ]);
  }, 180_000);
});

describe('SPEC §12 webhooks: targets refused in production', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: ReturnType<typeof apiClient>;
  let receiver: Receiver;
  beforeAll(async () => {
    stack = await startStack({ env: { ...DELIVERY_ENV, LEDGER_ENVIRONMENT: 'production' } });
    org = await createTestOrg(stack.pool, { environment: 'production' });
    call = apiClient(stack.url, org.apiKey);
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await stack.stop();
    await receiver.close();
  });

  test.each([
    'http://127.0.0.1/hooks',
    'http://127.1.2.3:8080/hooks',
    'http://localhost/hooks',
    'http://api.localhost/hooks',
    'http://[::1]/hooks',
    'http://[::ffff:127.0.0.1]/hooks',
    'http://0.0.0.0/hooks',
    'http://[::]/hooks',
    'http://10.1.2.3/hooks',
    'http://172.16.0.1/hooks',
    'http://172.31.255.255/hooks',
    'http://192.168.1.10/hooks',
    'http://[fc00::1]/hooks',
    'http://[fd12:3456::1]/hooks',
    'http://169.254.169.254/latest/meta-data',
    'http://169.254.1.1/hooks',
    'http://[fe80::1]/hooks',
    'http://[fd00:ec2::254]/hooks',
    'http://2130706433/hooks',
    'http://0x7f.1/hooks',
    'ftp://93.184.215.14/hooks',
    'file:///etc/passwd',
  ])('registering %s is 400 validation_failed on url', async (url) => {
    const response = await call('POST', '/webhook', { url });
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ code: 'validation_failed', param: 'url' });
  });

  test('a public address is accepted', async () => {
    const response = await call('POST', '/webhook', { url: 'https://93.184.215.14/hooks' });
    expect(response.status).toBe(200);
    expect(forbiddenRange('2606:4700:4700::1111')).toBeNull();
    expect(forbiddenRange('8.8.8.8')).toBeNull();
  });

  test('a target that resolves to a forbidden address at delivery time is refused, recorded and not retried', async () => {
    // As if the name pointed somewhere public at registration and was re-pointed since: insert it directly.
    const secret = generateSecret();
    const port = new URL(receiver.url).port;
    const hooks = [];
    for (const url of [`http://localhost:${port}/hooks`, `http://127.0.0.1:${port}/hooks`]) {
      hooks.push(
        await createEndpoint(stack.pool, {
          organizationId: org.organizationId,
          url,
          events: ['*'],
          secretSealed: sealSecret(secret, undefined),
        }),
      );
    }
    const eventId = await recordEvent(stack.pool, {
      organizationId: org.organizationId,
      type: 'intent.approved',
      data: { id: 'intent_production_x' },
    });
    for (const hook of hooks) {
      expect(await deliveryOutcome(stack, eventId, hook.id)).toEqual({ outcome: 'refused' });
      const attempts = (await call('GET', `/webhook/${hook.id}/deliveries`)).body.data;
      expect(attempts).toHaveLength(1);
      expect(attempts[0]).toMatchObject({
        attempt: 1,
        outcome: 'refused',
        response_status_code: null,
        error: expect.stringMatching(/127\.0\.0\.1|::1/),
      });
    }
    expect(receiver.requests).toHaveLength(0);
  });
});
