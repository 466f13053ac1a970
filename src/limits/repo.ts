import type { Queryable } from '../db/pool';
import type { Direction } from '../directions';
import type { PeriodStarts } from './periods';
import { LIMIT_PERIODS, type LimitPeriod } from './schemas';

/** The SQL of limits, their defaults and their use (migrations/0030_limits.sql). */

export type PeriodValues = Record<LimitPeriod, number | null>;
export type PeriodUse = Record<LimitPeriod, number>;

/** One (user, direction)'s counters, locked, rolled to the current periods, with the limits in force. */
export interface LockedUse {
  user_id: string;
  direction: Direction;
  used: PeriodUse;
  limits: PeriodValues;
}

/**
 * Locks the use row of each (user, direction) — creating it the first time, starting a counter again when its
 * period has passed — and answers it with the limits in force at `now` (the user's own, a raise whose time has
 * come counting as the limit, else the organization's default). The rows are locked in key order, so two
 * writers that need several never wait on each other in a circle; each stays locked until the caller's
 * transaction ends, which is what serializes a user's approvals. A writer whose clock is behind never moves
 * a counter back to an earlier period.
 *
 * The same statement adds each key's `amountCents` (their sum, for a key given more than once): most approvals
 * are within their limits, so the check and the count take one round trip under the lock, not two. `used`
 * answers the counters before that addition; the caller gives back (addUse with a negative amount) what it then
 * declines, before anything else can read the row.
 */
export async function lockUse(
  db: Queryable,
  input: {
    organizationId: string;
    keys: ReadonlyArray<{ userId: string; direction: Direction; amountCents: number }>;
    now: Date;
    periods: PeriodStarts;
  },
): Promise<LockedUse[]> {
  const { rows } = await db.query<{ user_id: string; direction: Direction; used: PeriodUse; limits: PeriodValues }>({
    name: 'limits_lock_use',
    text: `WITH keys AS (
       SELECT k.user_id, k.direction, sum(k.amount)::bigint AS amount
         FROM unnest($1::text[], $2::text[], $8::bigint[]) AS k (user_id, direction, amount) GROUP BY 1, 2
     ), locked AS (
       INSERT INTO user_limit_usage AS u (user_id, direction, day, day_used_cents, week, week_used_cents, month, month_used_cents)
       SELECT user_id, direction, $3::date, amount, $4::date, amount, $5::date, amount FROM keys ORDER BY user_id, direction
       ON CONFLICT (user_id, direction) DO UPDATE SET
         day_used_cents = CASE WHEN excluded.day > u.day THEN 0 ELSE u.day_used_cents END + excluded.day_used_cents,
         day = greatest(u.day, excluded.day),
         week_used_cents = CASE WHEN excluded.week > u.week THEN 0 ELSE u.week_used_cents END + excluded.week_used_cents,
         week = greatest(u.week, excluded.week),
         month_used_cents = CASE WHEN excluded.month > u.month THEN 0 ELSE u.month_used_cents END + excluded.month_used_cents,
         month = greatest(u.month, excluded.month)
       RETURNING u.user_id, u.direction, u.day_used_cents, u.week_used_cents, u.month_used_cents
     )
     SELECT l.user_id, l.direction,
            jsonb_build_object('day', l.day_used_cents - k.amount, 'week', l.week_used_cents - k.amount,
                               'month', l.month_used_cents - k.amount) AS used,
            (SELECT jsonb_object_agg(p.period, CASE WHEN own.user_id IS NULL THEN d.limit_cents
                                                    WHEN own.pending_effective_at <= $6 THEN own.pending_cents
                                                    ELSE own.limit_cents END)
               FROM unnest(ARRAY['day', 'week', 'month']) AS p (period)
               LEFT JOIN user_limits own ON own.user_id = l.user_id AND own.direction = l.direction AND own.period = p.period
               LEFT JOIN org_limit_defaults d ON d.organization_id = $7 AND d.direction = l.direction AND d.period = p.period
            ) AS limits
       FROM locked l JOIN keys k USING (user_id, direction)`,
    values: [
      input.keys.map((key) => key.userId),
      input.keys.map((key) => key.direction),
      input.periods.day,
      input.periods.week,
      input.periods.month,
      input.now,
      input.organizationId,
      input.keys.map((key) => key.amountCents),
    ],
  });
  return rows;
}

/**
 * Adds to the counters that lockUse locked and rolled (in this transaction), one statement for all: each
 * counter is of the current period, so the amounts simply add. Negative amounts give back what lockUse added
 * for approvals that were then declined.
 */
export async function addUse(
  db: Queryable,
  uses: ReadonlyArray<{ userId: string; direction: Direction; amountCents: number }>,
): Promise<void> {
  if (uses.length === 0) return;
  await db.query({
    name: 'limits_add_use',
    text: `UPDATE user_limit_usage u
          SET day_used_cents = u.day_used_cents + a.amount, week_used_cents = u.week_used_cents + a.amount,
              month_used_cents = u.month_used_cents + a.amount
         FROM (SELECT user_id, direction, sum(amount)::bigint AS amount
                 FROM unnest($1::text[], $2::text[], $3::bigint[]) AS x (user_id, direction, amount) GROUP BY 1, 2) a
        WHERE u.user_id = a.user_id AND u.direction = a.direction`,
    values: [uses.map((use) => use.userId), uses.map((use) => use.direction), uses.map((use) => use.amountCents)],
  });
}

/** What adjustUses moves for one user and direction: per period start, the sum of its approvals' deltas. */
export interface UseAdjustment {
  userId: string;
  direction: Direction;
  day: Record<string, number>;
  week: Record<string, number>;
  month: Record<string, number>;
}

/**
 * Moves the counters of the periods the approvals belong to by their deltas (negative: a refund or return gives
 * use back), where those periods are still the counted ones; a counter of a later period never held those
 * approvals and stays. Never below zero, never a check: money going back to a user is never limited. Locks the
 * rows like an approval, so the change and a concurrent check are ordered. One row per user and direction, in
 * one statement; each counter is moved from its own current value (a concurrent change is not lost).
 */
export async function adjustUses(db: Queryable, adjustments: readonly UseAdjustment[]): Promise<void> {
  if (adjustments.length === 0) return;
  const moved = (period: 'day' | 'week' | 'month') => {
    const key = `to_char(u.${period}, 'YYYY-MM-DD')`;
    return `${period}_used_cents = CASE WHEN a.${period}s ? ${key} THEN greatest(0, u.${period}_used_cents + (a.${period}s ->> ${key})::bigint)
                             ELSE u.${period}_used_cents END`;
  };
  await db.query(
    `UPDATE user_limit_usage u
        SET ${moved('day')}, ${moved('week')}, ${moved('month')}
       FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::jsonb[], $5::jsonb[]) AS a (user_id, direction, days, weeks, months)
      WHERE u.user_id = a.user_id AND u.direction = a.direction`,
    [
      adjustments.map((a) => a.userId),
      adjustments.map((a) => a.direction),
      adjustments.map((a) => JSON.stringify(a.day)),
      adjustments.map((a) => JSON.stringify(a.week)),
      adjustments.map((a) => JSON.stringify(a.month)),
    ],
  );
}

/** What a user has used of the periods of `periods` (a counter of an earlier period counts as 0). */
export async function readUse(db: Queryable, userId: string, periods: PeriodStarts): Promise<Record<Direction, PeriodUse>> {
  const { rows } = await db.query<{ direction: Direction; day: number; week: number; month: number }>(
    `SELECT direction,
            CASE WHEN day >= $2::date THEN day_used_cents ELSE 0 END AS day,
            CASE WHEN week >= $3::date THEN week_used_cents ELSE 0 END AS week,
            CASE WHEN month >= $4::date THEN month_used_cents ELSE 0 END AS month
       FROM user_limit_usage WHERE user_id = $1`,
    [userId, periods.day, periods.week, periods.month],
  );
  const none = { day: 0, week: 0, month: 0 };
  const of = (direction: Direction) => {
    const row = rows.find((each) => each.direction === direction);
    return row ? { day: row.day, week: row.week, month: row.month } : none;
  };
  return { cash_in: of('cash_in'), cash_out: of('cash_out') };
}

export interface UserLimitRow {
  direction: Direction;
  period: LimitPeriod;
  limit_cents: number | null;
  pending_cents: number | null;
  pending_effective_at: Date | null;
  updated_at: Date;
}

/** The user's own limit rows (a change reads them under the user's row lock). */
export async function userLimitRows(db: Queryable, userId: string): Promise<UserLimitRow[]> {
  const { rows } = await db.query<UserLimitRow>(
    `SELECT direction, period, limit_cents, pending_cents, pending_effective_at, updated_at
       FROM user_limits WHERE user_id = $1 ORDER BY direction, period`,
    [userId],
  );
  return rows;
}

export async function upsertUserLimits(db: Queryable, userId: string, rows: readonly UserLimitRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `INSERT INTO user_limits (user_id, direction, period, limit_cents, pending_cents, pending_effective_at, updated_at)
     SELECT $1, direction, period, limit_cents, pending_cents, pending_effective_at, updated_at
       FROM jsonb_to_recordset($2::jsonb) AS r (direction text, period text, limit_cents bigint, pending_cents bigint,
            pending_effective_at timestamptz, updated_at timestamptz)
     ON CONFLICT (user_id, direction, period) DO UPDATE SET limit_cents = excluded.limit_cents, pending_cents = excluded.pending_cents,
       pending_effective_at = excluded.pending_effective_at, updated_at = excluded.updated_at`,
    [userId, JSON.stringify(rows)],
  );
}

export type DefaultLimits = Record<Direction, PeriodValues>;

export async function orgDefaults(db: Queryable, organizationId: string): Promise<DefaultLimits> {
  const { rows } = await db.query<{ direction: Direction; period: LimitPeriod; limit_cents: number }>(
    `SELECT direction, period, limit_cents FROM org_limit_defaults WHERE organization_id = $1`,
    [organizationId],
  );
  const empty = (): PeriodValues => Object.fromEntries(LIMIT_PERIODS.map((period) => [period, null])) as PeriodValues;
  const defaults: DefaultLimits = { cash_in: empty(), cash_out: empty() };
  for (const row of rows) defaults[row.direction][row.period] = row.limit_cents;
  return defaults;
}

/** Sets (a number) or removes (null) an organization's default of one (direction, period). */
export async function setOrgDefault(
  db: Queryable,
  input: { organizationId: string; direction: Direction; period: LimitPeriod; limitCents: number | null; now: Date },
): Promise<void> {
  if (input.limitCents === null) {
    await db.query(`DELETE FROM org_limit_defaults WHERE organization_id = $1 AND direction = $2 AND period = $3`, [
      input.organizationId,
      input.direction,
      input.period,
    ]);
    return;
  }
  await db.query(
    `INSERT INTO org_limit_defaults (organization_id, direction, period, limit_cents, updated_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (organization_id, direction, period) DO UPDATE SET limit_cents = excluded.limit_cents, updated_at = excluded.updated_at`,
    [input.organizationId, input.direction, input.period, input.limitCents, input.now],
  );
}
