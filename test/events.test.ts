import { recordEvent } from '../src/outbox';
import { EVENT_LIMITS } from '../src/events/limits';
import { deleteExpiredEventBatch } from '../src/events/repo';
import { purgeExpiredEvents } from '../src/events/retention';
import { ledgerRegistry } from '../src/metrics';
import { apiClient, createTestOrg, startStack, type Stack, type TestOrg } from './support/harness';

const DAY_MS = 24 * 60 * 60_000;

/** `count` events of `type` one second apart from `from`, already dispatched (no dispatcher sends them); ids oldest first. */
async function insertEvents(
  stack: Stack,
  input: { organizationId: string; count: number; from: Date; type?: string; objectPrefix?: string; dispatchedAt?: Date },
): Promise<string[]> {
  const { rows } = await stack.pool.query<{ id: string }>(
    `INSERT INTO events (organization_id, type, data, created_at, dispatched_at)
     SELECT $1, $2, jsonb_build_object('id', $3 || lpad(g::text, 6, '0'), 'amount', g), $4::timestamptz + g * interval '1 second', $6
       FROM generate_series(1, $5) g
     RETURNING id, created_at`,
    [
      input.organizationId,
      input.type ?? 'transaction.created',
      input.objectPrefix ?? 'txn_',
      input.from,
      input.count,
      input.dispatchedAt ?? new Date(),
    ],
  );
  return rows.map((row) => row.id);
}

async function metricValue(name: string): Promise<number> {
  const metric = (await ledgerRegistry.getMetricsAsJSON()).find((m) => m.name === name);
  return (metric?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

describe('SPEC §17 events API: GET /event and GET /event/{id}', () => {
  let stack: Stack;
  let org: TestOrg;
  let call: ReturnType<typeof apiClient>;
  let other: ReturnType<typeof apiClient>;
  beforeAll(async () => {
    stack = await startStack({ worker: false });
    org = await createTestOrg(stack.pool);
    call = apiClient(stack.url, org.apiKey);
    other = apiClient(stack.url, (await createTestOrg(stack.pool)).apiKey);
  });
  afterAll(async () => {
    await stack.stop();
  });

  test('an event reads exactly as webhooks deliver it; an unknown id or another organization’s event is 404', async () => {
    const data = { id: 'user_evt1', status: 'enabled', nested: { a: 1 } };
    const eventId = await recordEvent(stack.pool, { organizationId: org.organizationId, type: 'user.created', data });
    const found = await call('GET', `/event/${eventId}`);
    expect(found.status).toBe(200);
    expect(Object.keys(found.body)).toEqual(['id', 'type', 'created_at', 'data']);
    expect(found.body).toMatchObject({ id: eventId, type: 'user.created', data });
    expect(new Date(found.body.created_at).toISOString()).toBe(found.body.created_at);
    for (const response of [await other('GET', `/event/${eventId}`), await call('GET', '/event/evt_doesnotexist000000000')]) {
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('not_found');
    }
  });

  test('GET /event pages newest first with a cursor, without skips or repeats, and only the caller’s events', async () => {
    const own = await createTestOrg(stack.pool);
    const list = apiClient(stack.url, own.apiKey);
    const ids = await insertEvents(stack, { organizationId: own.organizationId, count: 7, from: new Date(Date.now() - 60_000) });
    await insertEvents(stack, { organizationId: org.organizationId, count: 3, from: new Date(Date.now() - 60_000) });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: Array<{ id: string }>; has_more: boolean; next_cursor: string | null } } = await list(
        'GET',
        `/event?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      );
      seen.push(...page.body.data.map((event) => event.id));
      cursor = page.body.next_cursor;
      expect(page.body.has_more).toBe(cursor !== null);
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
  });

  test('filters: type (one or a list), created_at range and object_id combine with AND', async () => {
    const own = await createTestOrg(stack.pool);
    const list = apiClient(stack.url, own.apiKey);
    const base = new Date(Date.now() - 3_600_000);
    const created = await insertEvents(stack, { organizationId: own.organizationId, count: 4, from: base, objectPrefix: 'txn_f' });
    const changed = await insertEvents(stack, {
      organizationId: own.organizationId,
      count: 4,
      from: base,
      type: 'transaction.status_changed',
      objectPrefix: 'txn_f',
    });
    const users = await insertEvents(stack, {
      organizationId: own.organizationId,
      count: 2,
      from: base,
      type: 'user.created',
      objectPrefix: 'user_f',
    });
    const ids = async (query: string) =>
      ((await list('GET', `/event?limit=100&${query}`)).body.data as Array<{ id: string }>).map((e) => e.id);
    expect(new Set(await ids('type=user.created'))).toEqual(new Set(users));
    expect(new Set(await ids('type=user.created,transaction.created'))).toEqual(new Set([...users, ...created]));
    // Object txn_f000002 has one created and one status_changed event, newest first (same instant: id order).
    expect(new Set(await ids('object_id=txn_f000002'))).toEqual(new Set([created[1], changed[1]]));
    expect(await ids('object_id=txn_f000002&type=transaction.status_changed')).toEqual([changed[1]]);
    const gte = new Date(base.getTime() + 2_000).toISOString();
    const lt = new Date(base.getTime() + 4_000).toISOString();
    expect(new Set(await ids(`type=transaction.created&created_at.gte=${gte}&created_at.lt=${lt}`))).toEqual(
      new Set([created[1], created[2]]),
    );
    expect(await ids('object_id=txn_nothing')).toEqual([]);
  });

  test('bad filters and unknown query parameters are a 400 naming the parameter', async () => {
    for (const [query, param] of [
      ['type=user.created,nope.nothing', 'type'],
      ['type=user.created,user.created', 'type'],
      ['created_at.gte=yesterday', 'created_at.gte'],
      ['limit=0', 'limit'],
      ['object=txn_1', 'object'],
      ['cursor=evt_notacursor0000000000', 'cursor'],
    ] as const) {
      const response = await call('GET', `/event?${query}`);
      expect(response.status).toBe(400);
      expect(JSON.stringify(response.body.error)).toContain(param);
    }
  });

  test('object_id is answered from the index events_by_object', async () => {
    const client = await stack.pool.connect();
    try {
      // The table is small here, so the planner is told to avoid scans; a query the index cannot serve would still scan.
      await client.query('SET enable_seqscan = off');
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT e.id FROM events e WHERE e.organization_id = $1 AND e.data ->> 'id' = $2 ORDER BY e.created_at DESC, e.id DESC LIMIT 26`,
        [org.organizationId, 'txn_1'],
      );
      expect(rows.map((row) => row['QUERY PLAN']).join('\n')).toContain('events_by_object');
    } finally {
      client.release();
    }
  });
});

describe('SPEC §17 events API: retention', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ worker: false });
  });
  afterAll(async () => {
    await stack.stop();
  });

  test('the sweep deletes events past EVENT_RETENTION_DAYS with their attempts, keeps any still needed, and counts them', async () => {
    const org = await createTestOrg(stack.pool);
    const now = new Date();
    const old = new Date(now.getTime() - 40 * DAY_MS);
    const longDispatched = new Date(now.getTime() - 39 * DAY_MS);
    const expired = await insertEvents(stack, { organizationId: org.organizationId, count: 3, from: old, dispatchedAt: longDispatched });
    const [undispatched] = await insertEvents(stack, { organizationId: org.organizationId, count: 1, from: old });
    await stack.pool.query(`UPDATE events SET dispatched_at = NULL WHERE id = $1`, [undispatched]);
    const [resent] = await insertEvents(stack, { organizationId: org.organizationId, count: 1, from: old, dispatchedAt: longDispatched });
    const [recent] = await insertEvents(stack, { organizationId: org.organizationId, count: 1, from: new Date(now.getTime() - DAY_MS) });
    const hook = (await apiClient(stack.url, org.apiKey)('POST', '/webhook', { url: 'http://127.0.0.1:9/hooks' })).body as { id: string };
    // An old attempt of an expired event goes with it; a resend within the retry window keeps its event.
    await stack.pool.query(
      `INSERT INTO webhook_deliveries (id, endpoint_id, organization_id, event_id, event_type, attempt, outcome, created_at)
       VALUES ('whd_retentionold0000000001', $1, $2, $3, 'transaction.created', 1, 'failed', $5),
              ('whd_retentionnew0000000001', $1, $2, $4, 'transaction.created', 1, 'pending', now())`,
      [hook.id, org.organizationId, expired[0], resent, longDispatched],
    );
    const before = await metricValue('ledger_events_deleted_total');
    const deleted = await purgeExpiredEvents(stack.pool, { now, retentionDays: 30 });
    expect(deleted).toBeGreaterThanOrEqual(expired.length);
    expect(await metricValue('ledger_events_deleted_total')).toBe(before + deleted);
    const { rows } = await stack.pool.query<{ id: string }>(`SELECT id FROM events WHERE organization_id = $1`, [org.organizationId]);
    expect(new Set(rows.map((row) => row.id))).toEqual(new Set([undispatched, resent, recent]));
    const attempts = await stack.pool.query(`SELECT id FROM webhook_deliveries WHERE endpoint_id = $1`, [hook.id]);
    expect(attempts.rows.map((row) => row.id)).toEqual(['whd_retentionnew0000000001']);
  });

  test('one batch deletes at most its limit; events in the range of a running replay stay', async () => {
    const org = await createTestOrg(stack.pool);
    const now = new Date();
    const old = new Date(now.getTime() - 50 * DAY_MS);
    const dispatchedAt = new Date(now.getTime() - 49 * DAY_MS);
    await insertEvents(stack, { organizationId: org.organizationId, count: 5, from: old, dispatchedAt });
    expect(await deleteExpiredEventBatch(stack.pool, { olderThan: new Date(now.getTime() - 30 * DAY_MS), now, limit: 2 })).toBe(2);
    expect(EVENT_LIMITS.retentionDeleteBatchMax).toBeGreaterThan(0);

    const held = await createTestOrg(stack.pool);
    const kept = await insertEvents(stack, { organizationId: held.organizationId, count: 3, from: old, dispatchedAt });
    const hook = (await apiClient(stack.url, held.apiKey)('POST', '/webhook', { url: 'http://127.0.0.1:9/hooks' })).body as { id: string };
    await stack.pool.query(
      `INSERT INTO webhook_replays (id, organization_id, endpoint_id, created_at_gte, created_at_lt, failed_only, events_total)
       VALUES ('whr_retentionheld000000001', $1, $2, $3, $4, false, 3)`,
      [held.organizationId, hook.id, old, now],
    );
    await purgeExpiredEvents(stack.pool, { now, retentionDays: 30 });
    const { rows } = await stack.pool.query<{ id: string }>(`SELECT id FROM events WHERE organization_id = $1`, [held.organizationId]);
    expect(rows.map((row) => row.id).sort()).toEqual([...kept].sort());
    await stack.pool.query(`UPDATE webhook_replays SET status = 'completed', completed_at = now() WHERE id = 'whr_retentionheld000000001'`);
    await purgeExpiredEvents(stack.pool, { now, retentionDays: 30 });
    expect((await stack.pool.query(`SELECT id FROM events WHERE organization_id = $1`, [held.organizationId])).rows).toEqual([]);
  });
});
