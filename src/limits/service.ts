import type { Queryable } from '../db/pool';
import { errors } from '../errors';
import { recordEvent } from '../outbox';
import type { Direction } from '../directions';
import type { Op, Outcome } from '../services';
import { getUserStatus, lockUser } from '../users/contract';
import { periodStartsOf } from './periods';
import * as repo from './repo';
import {
  DIRECTIONS,
  LIMIT_PERIODS,
  type DeclineLimit,
  type LimitPeriod,
  type Limits,
  type LimitsUpdateBody,
  type PendingRaise,
} from './schemas';

/**
 * SPEC §26: per-user limits of what each Eastern day, ISO week and month may approve, per direction. Lowering
 * takes effect at once, raising after LIMIT_RAISE_COOLING_OFF_HOURS; every approval is checked against them
 * and counted, in the approving transaction, one user at a time.
 */

export interface LimitTake {
  userId: string;
  direction: Direction;
  amountCents: number;
}

/** The first limit (day, then week, then month) that `amountCents` more would take over, or null. */
function exceeded(use: repo.LockedUse, amountCents: number): DeclineLimit | null {
  for (const period of LIMIT_PERIODS) {
    const limit = use.limits[period];
    if (limit !== null && use.used[period] + amountCents > limit) {
      return { direction: use.direction, period, limit, used: use.used[period] };
    }
  }
  return null;
}

/**
 * The check at approval, for intents the caller would approve, in order: each one within its user's limits is
 * counted (the next one sees it), each one over a limit answers that limit and counts nothing. The counters'
 * rows stay locked until the caller's transaction commits, so concurrent approvals of one user are decided
 * one after the other against committed use: together they can never exceed a limit. Every approval is
 * counted, with a limit or without, so a limit set later starts from what the period really used.
 */
export async function takeLimits(
  op: Pick<Op, 'db' | 'organizationId' | 'now'>,
  takes: readonly LimitTake[],
): Promise<Array<DeclineLimit | null>> {
  if (takes.length === 0) return [];
  // lockUse counts every take at once; what is declined below is given back in the same transaction.
  const locked = await repo.lockUse(op.db, {
    organizationId: op.organizationId,
    keys: takes,
    now: op.now,
    periods: periodStartsOf(op.now),
  });
  const useOf = new Map(locked.map((use) => [`${use.user_id}/${use.direction}`, use]));
  const givenBack: LimitTake[] = [];
  const decisions = takes.map((take) => {
    const use = useOf.get(`${take.userId}/${take.direction}`);
    if (!use) throw new Error(`limits: no use row locked for ${take.userId}/${take.direction}`);
    const over = exceeded(use, take.amountCents);
    if (over) {
      givenBack.push({ ...take, amountCents: -take.amountCents });
      return over;
    }
    for (const period of LIMIT_PERIODS) use.used[period] += take.amountCents;
    return null;
  });
  await repo.addUse(op.db, givenBack);
  return decisions;
}

/**
 * Gives back (negative `deltaCents`) or takes again the use of an approval made at `approvedAt`: refunds and
 * returns do not count as used (SPEC §26). Never checked against a limit.
 */
export async function adjustLimitUse(
  db: Queryable,
  input: { userId: string; direction: Direction; deltaCents: number; approvedAt: Date },
): Promise<void> {
  await adjustLimitUses(db, [input]);
}

/**
 * adjustLimitUse of many, in one statement (an ACH return file gives back thousands of deposits' use). The
 * adjustments of one user and direction must all give back or all take again: a counter never goes below zero,
 * so applying their sum is then the same as applying them one by one, in any order; with both signs it would not
 * be, and they are refused (the caller applies those one at a time, in their order).
 */
export async function adjustLimitUses(
  db: Queryable,
  inputs: ReadonlyArray<{ userId: string; direction: Direction; deltaCents: number; approvedAt: Date }>,
): Promise<void> {
  const byUse = new Map<string, repo.UseAdjustment & { sign: number }>();
  // periodStartsOf by the approval's UTC minute: the settlement zone's offsets and their changes fall on whole
  // minutes, so one minute is in one local day (luxon's zone arithmetic costs about 0.1 ms a call).
  const periodsOfMinute = new Map<number, ReturnType<typeof periodStartsOf>>();
  const periodsOf = (at: Date) => {
    const minute = Math.floor(at.getTime() / 60_000);
    let periods = periodsOfMinute.get(minute);
    if (!periods) periodsOfMinute.set(minute, (periods = periodStartsOf(at)));
    return periods;
  };
  for (const input of inputs) {
    if (input.deltaCents === 0) continue;
    const key = `${input.userId}/${input.direction}`;
    const sign = Math.sign(input.deltaCents);
    let adjustment = byUse.get(key);
    if (!adjustment) {
      adjustment = { userId: input.userId, direction: input.direction, day: {}, week: {}, month: {}, sign };
      byUse.set(key, adjustment);
    }
    if (adjustment.sign !== sign) throw new Error(`limits: adjustments of ${key} both give back and take again; apply them one by one`);
    const periods = periodsOf(input.approvedAt);
    for (const period of LIMIT_PERIODS) {
      const sums = adjustment[period];
      sums[periods[period]] = (sums[periods[period]] ?? 0) + input.deltaCents;
    }
  }
  await repo.adjustUses(db, [...byUse.values()]);
}

/** A limit value in force now of one own row: a pending value whose time has come is the limit. */
function inForce(row: repo.UserLimitRow, now: Date): number | null {
  return row.pending_effective_at !== null && row.pending_effective_at <= now ? row.pending_cents : row.limit_cents;
}

function render(input: {
  userId: string;
  own: readonly repo.UserLimitRow[];
  defaults: repo.DefaultLimits;
  used: Record<Direction, repo.PeriodUse>;
  now: Date;
}): Limits {
  const { own, defaults, now } = input;
  const limitsOf = (direction: Direction) =>
    Object.fromEntries(
      LIMIT_PERIODS.map((period) => {
        const row = own.find((each) => each.direction === direction && each.period === period);
        return [period, row ? inForce(row, now) : defaults[direction][period]];
      }),
    ) as repo.PeriodValues;
  const pending: PendingRaise[] = own
    .filter((row) => row.pending_effective_at !== null && row.pending_effective_at > now)
    .map((row) => ({
      direction: row.direction,
      period: row.period,
      amount: row.pending_cents,
      effective_at: row.pending_effective_at!.toISOString(),
    }));
  const updatedAt = own.reduce<Date | null>((latest, row) => (latest === null || row.updated_at > latest ? row.updated_at : latest), null);
  return {
    user_id: input.userId,
    cash_in: limitsOf('cash_in'),
    cash_out: limitsOf('cash_out'),
    pending,
    used: input.used,
    updated_at: updatedAt?.toISOString() ?? null,
  };
}

async function view(db: Queryable, organizationId: string, userId: string, now: Date, own: readonly repo.UserLimitRow[]): Promise<Limits> {
  const [defaults, used] = await Promise.all([repo.orgDefaults(db, organizationId), repo.readUse(db, userId, periodStartsOf(now))]);
  return render({ userId, own, defaults, used, now });
}

/** GET /user/{id}/limits: the limits in force, the pending raises and the current periods' use. */
export async function getLimits(db: Queryable, organizationId: string, userId: string, now: Date): Promise<Limits | null> {
  if ((await getUserStatus(db, organizationId, userId)) === null) return null;
  return view(db, organizationId, userId, now, await repo.userLimitRows(db, userId));
}

/** Whether `to` is a raise of `from` (null: no limit, the highest of all). */
const isRaise = (from: number | null, to: number | null) => from !== null && (to === null || to > from);

/**
 * The own row of one (direction, period) after setting `to`: a lowering (or the same value) is the limit at
 * once and drops any pending raise; a raise waits `coolingOffMs`, except that the same raise asked again keeps
 * its time (a PUT repeated changes nothing) and a smaller raise than the one already waiting keeps that one's.
 */
export function nextLimitRow(input: {
  current: repo.UserLimitRow | undefined;
  fallback: number | null;
  direction: Direction;
  period: LimitPeriod;
  to: number | null;
  now: Date;
  coolingOffMs: number;
}): repo.UserLimitRow {
  const { current, now, to } = input;
  const limit = current ? inForce(current, now) : input.fallback;
  const waiting = current && current.pending_effective_at !== null && current.pending_effective_at > now ? current : null;
  const base = { direction: input.direction, period: input.period, updated_at: now };
  if (!isRaise(limit, to)) return { ...base, limit_cents: to, pending_cents: null, pending_effective_at: null };
  if (waiting && waiting.pending_cents === to) return { ...waiting, updated_at: waiting.updated_at };
  const keepsTime = waiting !== null && !isRaise(waiting.pending_cents, to);
  const effectiveAt = keepsTime ? waiting.pending_effective_at! : new Date(now.getTime() + input.coolingOffMs);
  return { ...base, limit_cents: limit, pending_cents: to, pending_effective_at: effectiveAt };
}

const sameRow = (a: repo.UserLimitRow | undefined, b: repo.UserLimitRow) =>
  a !== undefined &&
  a.limit_cents === b.limit_cents &&
  a.pending_cents === b.pending_cents &&
  (a.pending_effective_at?.getTime() ?? null) === (b.pending_effective_at?.getTime() ?? null);

/**
 * PUT /user/{id}/limits: each period given is set (nextLimitRow), under the lock of the user. A request that changes nothing writes nothing and emits nothing, so repeating it is harmless;
 * one that changes something emits `user.limits_changed` with the limits and their pending raises.
 */
export async function setLimits(op: Op, userId: string, body: LimitsUpdateBody): Promise<Outcome<Limits>> {
  // The user's row lock orders concurrent changes of one user's limits, rows or not yet.
  if (!(await lockUser(op.db, userId, op.organizationId))) throw errors.notFound('user', userId);
  const own = await repo.userLimitRows(op.db, userId);
  const defaults = await repo.orgDefaults(op.db, op.organizationId);
  const coolingOffMs = op.deps.config.LIMIT_RAISE_COOLING_OFF_HOURS * 3_600_000;
  const changed: repo.UserLimitRow[] = [];
  for (const direction of DIRECTIONS) {
    for (const period of LIMIT_PERIODS) {
      const to = body[direction]?.[period];
      if (to === undefined) continue;
      const current = own.find((row) => row.direction === direction && row.period === period);
      const next = nextLimitRow({ current, fallback: defaults[direction][period], direction, period, to, now: op.now, coolingOffMs });
      if (!sameRow(current, next)) changed.push(next);
    }
  }
  await repo.upsertUserLimits(op.db, userId, changed);
  const after = changed.length > 0 ? await repo.userLimitRows(op.db, userId) : own;
  const limits = await view(op.db, op.organizationId, userId, op.now, after);
  if (changed.length > 0)
    await recordEvent(op.db, { organizationId: op.organizationId, type: 'user.limits_changed', data: limits, createdAt: op.now });
  return { body: limits };
}
