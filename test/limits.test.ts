import { withTransaction } from '../src/db/pool';
import { createLogger } from '../src/logger';
import { randomString } from '../src/ids';
import { selfExclude } from '../src/limits/selfExclusion';
import { selfExclusionWorkflowId } from '../src/limits/workflowContract';
import { nextLimitRow } from '../src/limits/service';
import { periodStartsOf } from '../src/limits/periods';
import type { Op } from '../src/services';
import {
  apiClient,
  createTestOrg,
  createTestUser,
  eventually,
  startStack,
  startTestWorker,
  type Stack,
  type TestOrg,
} from './support/harness';
import { admin, idempotencyKey, type Body } from './support/payments';
import { roundTripsAround, statementsSent } from './support/statements';

let stack: Stack;
let org: TestOrg;
let call: ReturnType<typeof apiClient>;

beforeAll(async () => {
  // With a worker: its sidecar starts the self-exclusion timers (and the lifecycle drainer the intents' workflows).
  stack = await startStack();
  org = await createTestOrg(stack.pool, { write: 1_000_000, read: 1_000_000 });
  call = apiClient(stack.url, org.apiKey);
});
/** Workers a test started beside the stack's own, stopped before it. */
const afterAllShutdowns: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const shutdown of afterAllShutdowns) await shutdown();
  await stack?.stop();
});

const HOUR_MS = 3_600_000;
const key = (prefix = 'k') => `${prefix}-${randomString(16)}`;

function cashIn(userId: string, amount: number, patch: Body = {}): Body {
  return { direction: 'cash_in', user_id: userId, amount, currency: 'USD', ...patch };
}
const postIntent = (body: Body) => call('POST', '/intent', body, idempotencyKey());
const putLimits = (userId: string, body: unknown) => call('PUT', `/user/${userId}/limits`, body);

async function eventsOf(type: string, userId: string): Promise<Body[]> {
  const { rows } = await stack.pool.query<{ data: Body }>(
    `SELECT data FROM events WHERE organization_id = $1 AND type = $2 AND (data->>'user_id' = $3 OR data->>'id' = $3) ORDER BY seq`,
    [org.organizationId, type, userId],
  );
  return rows.map((row) => row.data);
}

describe('SPEC §26 PUT/GET /user/{id}/limits', () => {
  it('answers no limits for a new user, and 404 for an unknown one', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const got = await call('GET', `/user/${userId}/limits`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      user_id: userId,
      cash_in: { day: null, week: null, month: null },
      cash_out: { day: null, week: null, month: null },
      pending: [],
      used: { cash_in: { day: 0, week: 0, month: 0 }, cash_out: { day: 0, week: 0, month: 0 } },
      updated_at: null,
    });
    expect((await call('GET', `/user/user_${randomString(24)}/limits`)).status).toBe(404);
    expect((await putLimits(`user_${randomString(24)}`, { cash_in: { day: 1 } })).status).toBe(404);
  });

  it('lowers at once, holds a raise for the cooling-off, and a lower value replaces the pending raise', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const set = await putLimits(userId, { cash_in: { day: 10_000, month: 50_000 } });
    expect(set.status).toBe(200);
    // From no limit to one is a lowering: at once.
    expect(set.body.cash_in).toEqual({ day: 10_000, week: null, month: 50_000 });
    expect(set.body.pending).toEqual([]);

    const before = Date.now();
    const raised = await putLimits(userId, { cash_in: { day: 20_000, month: null } });
    expect(raised.status).toBe(200);
    expect(raised.body.cash_in).toEqual({ day: 10_000, week: null, month: 50_000 });
    expect(raised.body.pending).toHaveLength(2);
    const dayRaise = raised.body.pending.find((each: Body) => each.period === 'day');
    expect(dayRaise).toMatchObject({ direction: 'cash_in', period: 'day', amount: 20_000 });
    const effective = Date.parse(dayRaise.effective_at);
    expect(effective).toBeGreaterThanOrEqual(before + 24 * HOUR_MS - 1_000);
    expect(effective).toBeLessThanOrEqual(Date.now() + 24 * HOUR_MS);
    expect(raised.body.pending.find((each: Body) => each.period === 'month')).toMatchObject({ amount: null });

    // The same PUT again changes nothing: the raise keeps its time, no event.
    const eventsBefore = (await eventsOf('user.limits_changed', userId)).length;
    const again = await putLimits(userId, { cash_in: { day: 20_000, month: null } });
    expect(again.body).toEqual(raised.body);
    expect((await eventsOf('user.limits_changed', userId)).length).toBe(eventsBefore);

    const lowered = await putLimits(userId, { cash_in: { day: 5_000 } });
    expect(lowered.body.cash_in.day).toBe(5_000);
    expect(lowered.body.pending.map((each: Body) => each.period)).toEqual(['month']);
    expect((await call('GET', `/user/${userId}/limits`)).body).toEqual(lowered.body);

    const events = await eventsOf('user.limits_changed', userId);
    expect(events).toHaveLength(3);
    expect(events.at(-1)).toEqual(lowered.body);
  });

  it('treats a raise whose cooling-off has passed as the limit', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    await putLimits(userId, { cash_out: { week: 1_000 } });
    await putLimits(userId, { cash_out: { week: 3_000 } });
    await stack.pool.query(`UPDATE user_limits SET pending_effective_at = now() - interval '1 second' WHERE user_id = $1`, [userId]);
    const got = await call('GET', `/user/${userId}/limits`);
    expect(got.body.cash_out.week).toBe(3_000);
    expect(got.body.pending).toEqual([]);
    const body = { direction: 'cash_out', user_id: userId, amount: 2_500, currency: 'USD' };
    expect((await postIntent(body)).body.status).toBe('approved');
  });

  it('computes each raise from the limit in force (nextLimitRow)', () => {
    const now = new Date('2026-11-21T12:00:00Z');
    const base = { direction: 'cash_in' as const, period: 'day' as const, now, coolingOffMs: HOUR_MS };
    const waiting = nextLimitRow({ ...base, current: undefined, fallback: 100, to: 500 });
    expect(waiting).toMatchObject({ limit_cents: 100, pending_cents: 500, pending_effective_at: new Date(now.getTime() + HOUR_MS) });
    // A smaller raise than the one already waiting keeps that one's time; a bigger one starts again.
    const later = new Date(now.getTime() + 10 * 60_000);
    expect(nextLimitRow({ ...base, now: later, current: waiting, fallback: null, to: 300 }).pending_effective_at).toEqual(
      waiting.pending_effective_at,
    );
    expect(nextLimitRow({ ...base, now: later, current: waiting, fallback: null, to: 900 }).pending_effective_at).toEqual(
      new Date(later.getTime() + HOUR_MS),
    );
    expect(nextLimitRow({ ...base, now: later, current: waiting, fallback: null, to: 50 })).toMatchObject({
      limit_cents: 50,
      pending_cents: null,
      pending_effective_at: null,
    });
  });

  it('refuses bad input with a 400 naming the field, and changes nothing', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    await putLimits(userId, { cash_in: { day: 1_000 } });
    const before = (await call('GET', `/user/${userId}/limits`)).body as Body;
    const cases: Array<[unknown, string]> = [
      [{ cash_in: { day: -1 } }, 'cash_in.day'],
      [{ cash_in: { week: 10.5 } }, 'cash_in.week'],
      [{ cash_in: { year: 100 } }, 'cash_in.year'],
      [{ cash_sideways: { day: 100 } }, 'cash_sideways'],
      [{ cash_out: { month: '100' } }, 'cash_out.month'],
    ];
    for (const [body, param] of cases) {
      const response = await putLimits(userId, body);
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe('validation_failed');
      expect(response.body.error.details.map((detail: Body) => detail.param)).toContain(param);
    }
    // A valid period beside a bad one changes nothing either.
    expect((await putLimits(userId, { cash_in: { day: 5, week: -5 } })).status).toBe(400);
    expect((await call('GET', `/user/${userId}/limits`)).body).toEqual(before);
  });

  it('applies the organization defaults set with `org limits set` to users without their own', async () => {
    const own = await createTestOrg(stack.pool, { write: 10_000, read: 10_000 });
    const ownCall = apiClient(stack.url, own.apiKey);
    const userId = await createTestUser(stack.pool, own.organizationId);
    const bad = await admin(['org', 'limits', 'set', '--org', own.organizationId, '--cash-in-day', '-3']);
    expect(bad.code).toBe(2);
    const set = await admin([
      '--json',
      'org',
      'limits',
      'set',
      '--org',
      own.organizationId,
      '--cash-in-day',
      '2000',
      '--cash-out-month',
      '9000',
    ]);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ cash_in: { day: 2_000, week: null }, cash_out: { month: 9_000 } });
    expect((await ownCall('GET', `/user/${userId}/limits`)).body.cash_in).toEqual({ day: 2_000, week: null, month: null });

    const first = await ownCall('POST', '/intent', cashIn(userId, 1_500), idempotencyKey());
    expect(first.body.status).toBe('approved');
    const second = await ownCall('POST', '/intent', cashIn(userId, 600), idempotencyKey());
    expect(second.body).toMatchObject({
      status: 'declined',
      decline_category: 'limit_exceeded',
      decline_limit: { direction: 'cash_in', period: 'day', limit: 2_000, used: 1_500 },
      transactions: [],
    });
    // The user's own raise above the default waits out the cooling-off; the default holds meanwhile.
    const raised = await ownCall('PUT', `/user/${userId}/limits`, { cash_in: { day: 5_000 } });
    expect(raised.body.cash_in.day).toBe(2_000);
    expect(raised.body.pending).toMatchObject([{ direction: 'cash_in', period: 'day', amount: 5_000 }]);
  });
});

describe('SPEC §26 the check at approval', () => {
  it('declines over a limit with decline_limit; declined and refunded amounts are not used; refunds are never limited', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    await putLimits(userId, { cash_in: { day: 1_000 } });
    const approved = await postIntent(cashIn(userId, 700));
    expect(approved.body).toMatchObject({ status: 'approved', decline_category: null, decline_limit: null });
    const declined = await postIntent(cashIn(userId, 400));
    expect(declined.status).toBe(200);
    expect(declined.body).toMatchObject({
      status: 'declined',
      decline_category: 'limit_exceeded',
      decline_limit: { direction: 'cash_in', period: 'day', limit: 1_000, used: 700 },
    });
    const [event] = (await eventsOf('intent.declined', userId)).filter((each) => each.id === declined.body.id);
    expect(event).toEqual(declined.body);
    expect((await call('GET', `/intent/${declined.body.id}`)).body).toEqual(declined.body);
    expect((await call('GET', `/user/${userId}/limits`)).body.used.cash_in).toEqual({ day: 700, week: 700, month: 700 });

    // Lowering below what was used is allowed; the refund gives the use back and is itself never checked.
    await putLimits(userId, { cash_in: { day: 100 } });
    const refund = await call('POST', '/refund', { intent_id: approved.body.id, amount: 650 }, idempotencyKey());
    expect(refund.status).toBe(200);
    expect((await call('GET', `/user/${userId}/limits`)).body.used.cash_in.day).toBe(50);
    expect((await postIntent(cashIn(userId, 50))).body.status).toBe('approved');
    expect((await postIntent(cashIn(userId, 1))).body.decline_limit).toEqual({
      direction: 'cash_in',
      period: 'day',
      limit: 100,
      used: 100,
    });
  });

  it('gives back a disputed deposit, and counts it again when the dispute is won', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    await putLimits(userId, { cash_in: { week: 5_000 } });
    const intent = (await postIntent(cashIn(userId, 3_000))).body;
    const dispute = await call('POST', '/simulate/dispute', { intent_id: intent.id, code: 'R10' }, idempotencyKey());
    expect(dispute.status).toBe(200);
    expect((await call('GET', `/user/${userId}/limits`)).body.used.cash_in.week).toBe(0);
    const won = await call('POST', `/simulate/dispute/${dispute.body.id}/resolve`, { result: 'won' }, idempotencyKey());
    expect(won.status).toBe(200);
    expect((await call('GET', `/user/${userId}/limits`)).body.used.cash_in.week).toBe(3_000);
  });

  it('checks a manual cash_out at its approval, not when it is created', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const manual = (direction = 'cash_out', amount = 800) =>
      postIntent({ direction, user_id: userId, amount, currency: 'USD', approval_mode: 'manual' });
    const first = (await manual()).body;
    const second = (await manual()).body;
    expect([first.status, second.status]).toEqual(['pending', 'pending']);
    await putLimits(userId, { cash_out: { day: 1_000 } });
    const approveFirst = await call('POST', `/intent/${first.id}/approve`, undefined, idempotencyKey());
    expect(approveFirst.body.status).toBe('approved');
    const approveSecond = await call('POST', `/intent/${second.id}/approve`, undefined, idempotencyKey());
    expect(approveSecond.body).toMatchObject({
      status: 'declined',
      decline_category: 'limit_exceeded',
      decline_limit: { direction: 'cash_out', period: 'day', limit: 1_000, used: 800 },
    });
  });

  it('holds the counter for four round trips of an approval, and records its events in order', async () => {
    const user = await createTestUser(stack.pool, org.organizationId);
    let intent: Body = {};
    const sent = await statementsSent(async () => {
      const response = await postIntent(cashIn(user, 500));
      expect(response.status).toBe(200);
      intent = response.body;
    });
    // BEGIN with the key's lock, its stored answer and the user and accounts; the counter locked and counted; the
    // intent with its transaction (its event and queued start); the answer with intent.approved; COMMIT (9 before
    // issue 37, 7 at stop 47).
    expect(roundTripsAround(sent, 'INSERT INTO intents')).toBe(5);
    // From the counter's lock to the COMMIT that releases it: one user's approvals wait on these, one by one.
    expect(roundTripsAround(sent, 'INSERT INTO intents', 'INSERT INTO user_limit_usage')).toBe(4);
    const transactionId = (intent.transactions as Body[])[0]!.id as string;
    const { rows } = await stack.pool.query<{ type: string; id: string }>(
      `SELECT type, data->>'id' AS id FROM events WHERE organization_id = $1 AND data->>'id' = ANY($2) ORDER BY seq`,
      [org.organizationId, [intent.id, transactionId]],
    );
    expect(rows).toEqual([
      { type: 'transaction.created', id: transactionId },
      { type: 'intent.approved', id: intent.id },
    ]);
    expect((await call('GET', `/user/${user}/limits`)).body.used.cash_in).toEqual({ day: 500, week: 500, month: 500 });
  });

  it('checks batch items in request order, each seeing the ones before it', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    await putLimits(userId, { cash_in: { month: 2_500 } });
    const intents = [1_000, 1_000, 1_000, 500].map((amount) => ({ idempotency_key: key('item'), ...cashIn(userId, amount) }));
    const response = await call('POST', '/intent/batch', { intents }, { 'X-Idempotency-Key': key('batch') });
    expect(response.status).toBe(200);
    const statuses = (response.body.data as Body[]).map((item) => item.intent.status);
    expect(statuses).toEqual(['approved', 'approved', 'declined', 'approved']);
    expect(response.body.data[2].intent.decline_limit).toEqual({ direction: 'cash_in', period: 'month', limit: 2_500, used: 2_000 });
  });

  it('counts on the Eastern calendar: day, ISO week from Monday, month', () => {
    // 2026-03-08 is the spring-forward Sunday; 04:30Z is still the 7th in New York.
    expect(periodStartsOf(new Date('2026-03-08T04:30:00Z'))).toEqual({ day: '2026-03-07', week: '2026-03-02', month: '2026-03-01' });
    expect(periodStartsOf(new Date('2026-03-09T05:00:00Z'))).toEqual({ day: '2026-03-09', week: '2026-03-09', month: '2026-03-01' });
    expect(periodStartsOf(new Date('2026-02-01T04:59:59Z'))).toEqual({ day: '2026-01-31', week: '2026-01-26', month: '2026-01-01' });
    // The day DST starts is 23 hours long: answered from the day before's bounds, it would end an hour late.
    expect(periodStartsOf(new Date('2026-03-08T05:00:00Z'))).toEqual({ day: '2026-03-08', week: '2026-03-02', month: '2026-03-01' });
    expect(periodStartsOf(new Date('2026-03-09T03:59:59.999Z'))).toEqual({ day: '2026-03-08', week: '2026-03-02', month: '2026-03-01' });
    expect(periodStartsOf(new Date('2026-03-09T04:00:00Z'))).toEqual({ day: '2026-03-09', week: '2026-03-09', month: '2026-03-01' });
    expect(periodStartsOf(new Date('2026-03-08T04:59:59.999Z'))).toEqual({ day: '2026-03-07', week: '2026-03-02', month: '2026-03-01' });
  });

  it('64 concurrent $10 intents against a $100 day limit approve exactly 10, over single, batch and /authorize paths, 20 times', async () => {
    const card = { number: '4000056655665556', exp_month: 12, exp_year: new Date().getUTCFullYear() + 3, cvc: '123' };
    for (let run = 0; run < 20; run += 1) {
      const userId = await createTestUser(stack.pool, org.organizationId);
      expect((await putLimits(userId, { cash_in: { day: 10_000 } })).status).toBe(200);
      const tokens = await Promise.all(
        Array.from(
          { length: 8 },
          async () => (await call('POST', '/token', { user_id: userId, card }, idempotencyKey())).body.id as string,
        ),
      );
      const singles = Array.from({ length: 24 }, () => postIntent(cashIn(userId, 1_000)));
      const batches = Array.from({ length: 4 }, () =>
        call(
          'POST',
          '/intent/batch',
          { intents: Array.from({ length: 8 }, () => ({ idempotency_key: key('item'), ...cashIn(userId, 1_000) })) },
          { 'X-Idempotency-Key': key('batch') },
        ),
      );
      const authorizations = tokens.map((token) =>
        call('POST', '/authorize', { token, amount: 1_000, currency: 'USD', direction: 'cash_in' }, idempotencyKey()),
      );
      const [singleAnswers, batchAnswers, authorizeAnswers] = await Promise.all([
        Promise.all(singles),
        Promise.all(batches),
        Promise.all(authorizations),
      ]);
      const intents = [
        ...singleAnswers.map((response) => response.body as Body),
        ...batchAnswers.flatMap((response) => (response.body.data as Body[]).map((item) => item.intent as Body)),
        ...authorizeAnswers.map((response) => response.body as Body),
      ];
      expect(intents).toHaveLength(64);
      const approved = intents.filter((intent) => intent.status === 'approved');
      const declined = intents.filter((intent) => intent.status === 'declined');
      expect({ run, approved: approved.length, declined: declined.length }).toEqual({ run, approved: 10, declined: 54 });
      expect(declined.every((intent) => intent.decline_category === 'limit_exceeded')).toBe(true);
      const { rows } = await stack.pool.query<{ total: number }>(
        `SELECT coalesce(sum(amount_cents), 0)::bigint AS total FROM intents WHERE user_id = $1 AND status = 'approved'`,
        [userId],
      );
      expect(rows[0]!.total).toBe(10_000);
    }
  }, 300_000);

  it('intents, refunds and disputes of one user at once never deadlock: every writer locks the counter before a balance slot', async () => {
    // An intent that took its balance slot (one of 16 per account) first and the counter last would wait in a
    // circle with a refund or dispute that holds the counter and wants that slot: Postgres aborts one (503). On
    // 2026-11-28 such a variant (intents counter-last, the others as they are) answered 6 of 48 here with 503.
    for (let run = 0; run < 3; run += 1) {
      const userId = await createTestUser(stack.pool, org.organizationId);
      const deposits = await Promise.all(Array.from({ length: 24 }, async () => (await postIntent(cashIn(userId, 1_000))).body as Body));
      expect(deposits.every((deposit) => deposit.status === 'approved')).toBe(true);
      const answers = await Promise.all([
        ...Array.from({ length: 24 }, () => postIntent(cashIn(userId, 100))),
        ...deposits.slice(0, 16).map((deposit) => call('POST', '/refund', { intent_id: deposit.id, amount: 400 }, idempotencyKey())),
        ...deposits.slice(16).map((deposit) => call('POST', '/simulate/dispute', { intent_id: deposit.id, code: 'R10' }, idempotencyKey())),
      ]);
      expect({ run, statuses: answers.map((answer) => answer.status) }).toEqual({ run, statuses: answers.map(() => 200) });
      // 24 deposits of $10 and 24 of $1, less 16 refunds of $4 and 8 disputed deposits of $10.
      expect((await call('GET', `/user/${userId}/limits`)).body.used.cash_in.month).toBe(24 * 1_000 + 24 * 100 - 16 * 400 - 8 * 1_000);
    }
  }, 120_000);
});

describe('SPEC §26 self-exclusion', () => {
  const exclude = (userId: string, until: unknown) => call('POST', `/user/${userId}/self_exclusion`, { until }, idempotencyKey());

  it('refuses an until in the past, under a day or beyond five years, naming the field', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    for (const until of [
      new Date(Date.now() - 60_000).toISOString(),
      new Date(Date.now() + 2 * HOUR_MS).toISOString(),
      new Date(Date.now() + 5 * 366 * 24 * HOUR_MS).toISOString(),
      'tomorrow',
    ]) {
      const response = await exclude(userId, until);
      expect(response.status).toBe(400);
      expect(response.body.error.details.map((detail: Body) => detail.param)).toEqual(['until']);
    }
    expect((await call('GET', `/user/${userId}`)).body.status).toBe('enabled');
  });

  it('suspends the user, and nothing — API, CLI or a hand-written UPDATE — lifts it early', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const until = new Date(Date.now() + 30 * 24 * HOUR_MS).toISOString();
    const excluded = await exclude(userId, until);
    expect(excluded.status).toBe(200);
    expect(excluded.body).toMatchObject({
      id: userId,
      status: 'suspended',
      suspended_reason: 'self_exclusion',
      self_excluded_until: until,
    });
    expect(await eventsOf('user.self_excluded', userId)).toEqual([excluded.body]);
    expect((await eventsOf('user.status_changed', userId)).at(-1)).toMatchObject({ status: 'suspended', previous_status: 'enabled' });

    expect((await postIntent(cashIn(userId, 100))).body).toMatchObject({ status: 'declined', decline_category: 'user_not_enabled' });
    const cli = await admin(['--json', 'user', 'set-status', userId, 'enabled']);
    expect(cli.code).toBe(1);
    expect(JSON.parse(cli.stdout).error.code).toBe('invalid_state');
    expect((await admin(['user', 'set-status', userId, 'disabled'])).code).toBe(1);
    const simulated = await call('POST', `/simulate/user/${userId}/suspend`, undefined, idempotencyKey());
    expect(simulated.body.status).toBe('suspended');
    const shorter = await exclude(userId, new Date(Date.now() + 10 * 24 * HOUR_MS).toISOString());
    expect(shorter.status).toBe(409);
    await expect(
      stack.pool.query(`UPDATE users SET status = 'enabled', self_excluded_until = NULL WHERE id = $1`, [userId]),
    ).rejects.toThrow(/self-excluded/);
    await expect(
      stack.pool.query(`UPDATE users SET self_excluded_until = now() + interval '2 days' WHERE id = $1`, [userId]),
    ).rejects.toThrow(/self-excluded/);

    // Extending is allowed, and indefinite is the longest of all.
    const longer = await exclude(userId, 'indefinite');
    expect(longer.body).toMatchObject({ status: 'suspended', self_excluded_until: 'indefinite' });
    expect((await call('GET', `/user/${userId}`)).body.self_excluded_until).toBe('indefinite');
  });

  it('returns the user at `until` by a durable timer that outlives its worker', async () => {
    const userId = await createTestUser(stack.pool, org.organizationId);
    const op: Omit<Op, 'db'> = {
      organizationId: org.organizationId,
      now: new Date(),
      deps: {
        config: stack.config,
        pool: stack.pool,
        log: createLogger('silent'),
        services: { taskQueue: stack.config.TEMPORAL_TASK_QUEUE },
      },
      lifecyclePoke: { poke: () => undefined },
    };
    // Past the API's one-day minimum only through the domain function: the timer is what is under test.
    const until = new Date(Date.now() + 8_000);
    await withTransaction(stack.pool, (db) => selfExclude({ ...op, db }, userId, until));
    const { rows } = await stack.pool.query<{ id: string }>(`SELECT id FROM self_exclusions WHERE user_id = $1`, [userId]);
    const exclusionId = rows[0]!.id;
    await eventually(
      async () => {
        const description = await stack.temporal.workflow
          .getHandle(selfExclusionWorkflowId(exclusionId))
          .describe()
          .catch(() => undefined);
        return description?.status.name === 'RUNNING' ? description : undefined;
      },
      20_000,
      'the self-exclusion workflow to start',
    );
    // The worker that started the timer stops; another takes over before `until`.
    await stack.worker!.shutdown();
    expect(Date.now()).toBeLessThan(until.getTime());
    expect((await call('GET', `/user/${userId}`)).body.status).toBe('suspended');
    const replacement = await startTestWorker(stack);
    afterAllShutdowns.push(() => replacement.shutdown());
    const back = await eventually(
      async () => {
        const user = (await call('GET', `/user/${userId}`)).body as Body;
        return user.status === 'enabled' ? user : undefined;
      },
      40_000,
      'the user to be enabled again',
    );
    expect(Date.now()).toBeGreaterThanOrEqual(until.getTime());
    expect(back).toMatchObject({ suspended_reason: null, self_excluded_until: null });
    const handle = stack.temporal.workflow.getHandle(`self-exclusion-end:${exclusionId}`);
    expect(await handle.result()).toBe('ended');
    expect((await eventsOf('user.status_changed', userId)).at(-1)).toMatchObject({ status: 'enabled', previous_status: 'suspended' });
    expect((await postIntent(cashIn(userId, 100))).body.status).toBe('approved');
  }, 90_000);
});
