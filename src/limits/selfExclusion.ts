import { DateTime } from 'luxon';
import type { Queryable } from '../db/pool';
import { errors } from '../errors';
import { recordEvent } from '../outbox';
import { randomString } from '../ids';
import type { Op, Outcome } from '../services';
import { lockUser, setSelfExclusion, setStatusSource } from '../users/contract';
import type { User, UserStatus } from '../users/contract';
import { enqueueTemporalCommand } from '../platform/temporalCommands';
import { selfExclusionEndCommand } from './commands';
import type { SelfExclusionEnd } from './workflowContract';
import { LIMITS_LIMITS, type SelfExclusionBody } from './schemas';

/**
 * SPEC §26 self-exclusion: the user asks to be kept from moving money until a date (or for good). It suspends
 * the user at once; nothing but its end returns them — no API call or CLI command (src/users/service.ts
 * refuses, and the database's guard refuses any writer) — and its end comes from a durable Temporal timer
 * (workflows/selfExclusion.ts), whose start is queued with the exclusion on the one road to Temporal
 * (src/limits/commands.ts, docs/temporal-road.md).
 */

const DAY_MS = 86_400_000;

/** The end a request asks for, or the 400 naming `until`: 1 day to 5 years ahead, or indefinite ('infinity'). */
export function selfExclusionEndOf(body: SelfExclusionBody, now: Date): Date | 'infinity' {
  if (body.until === 'indefinite') return 'infinity';
  const until = new Date(body.until);
  const earliest = now.getTime() + LIMITS_LIMITS.selfExclusionDaysMin * DAY_MS;
  const latest = DateTime.fromJSDate(now).plus({ years: LIMITS_LIMITS.selfExclusionYearsMax }).toMillis();
  if (until.getTime() < earliest || until.getTime() > latest) {
    throw errors.validation([
      {
        param: 'until',
        message: `must be ${LIMITS_LIMITS.selfExclusionDaysMin} day to ${LIMITS_LIMITS.selfExclusionYearsMax} years ahead, or "indefinite"`,
      },
    ]);
  }
  return until;
}

/** An end as epoch ms: a Date, 'infinity' (a request's indefinite) or the API's text ('indefinite' or a date-time). */
const endMs = (end: Date | string) =>
  end === 'infinity' || end === 'indefinite' ? Infinity : end instanceof Date ? end.getTime() : Date.parse(end);

/** Where the user's current exclusion returns it: the status before the first of a chain of extensions. */
async function statusBeforeCurrent(db: Queryable, userId: string): Promise<UserStatus> {
  const { rows } = await db.query<{ status_before: UserStatus }>(
    `SELECT status_before FROM self_exclusions WHERE user_id = $1 AND ended_at IS NULL ORDER BY created_at DESC LIMIT 1`,
    [userId],
  );
  if (!rows[0]) throw new Error(`user ${userId} is self-excluded without a self_exclusions row`);
  return rows[0].status_before;
}

/**
 * POST /user/{id}/self_exclusion: suspends the user until `until` ('infinity': indefinitely), or extends the
 * exclusion already running; shortening one is 409 (nobody can lift it early), the same end again changes
 * nothing. Only an `enabled` or `suspended` user can be excluded (a `created` one moves no money yet, a
 * `disabled` one never will). Emits `user.self_excluded`, and `user.status_changed` when the status moved.
 */
export async function selfExclude(op: Op, userId: string, until: Date | 'infinity'): Promise<Outcome<User>> {
  const current = await lockUser(op.db, userId, op.organizationId);
  if (!current) throw errors.notFound('user', userId);
  const { organization_id: organizationId, ...user } = current;
  if (user.status !== 'enabled' && user.status !== 'suspended')
    throw errors.invalidState(`User ${userId} is ${user.status}; only an enabled or suspended user can self-exclude.`);
  let statusBefore: UserStatus = user.status;
  if (user.self_excluded_until !== null) {
    const currentEndMs = endMs(user.self_excluded_until);
    if (endMs(until) < currentEndMs)
      throw errors.invalidState(
        `User ${userId} is self-excluded until ${user.self_excluded_until}; an exclusion can be extended, never shortened.`,
      );
    if (endMs(until) === currentEndMs) return { body: user };
    statusBefore = await statusBeforeCurrent(op.db, userId);
  }
  const selfExclusionId = `sx_${randomString(24)}`;
  await op.db.query(
    `INSERT INTO self_exclusions (id, organization_id, user_id, until, status_before, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
    [selfExclusionId, organizationId, userId, until, statusBefore, op.now],
  );
  if (until !== 'infinity') {
    const input = { selfExclusionId, userId, untilMs: until.getTime() };
    const context = { drainQueue: op.deps.services.taskQueue, now: op.now };
    await enqueueTemporalCommand(op.db, context, selfExclusionEndCommand(op.deps.services.taskQueue, organizationId, input));
  }
  await setStatusSource(op.db, 'self_exclusion');
  const excluded = await setSelfExclusion(op.db, { userId, status: 'suspended', until, now: op.now });
  if (user.status !== 'suspended') {
    const data = { ...excluded, previous_status: user.status };
    await recordEvent(op.db, { organizationId, type: 'user.status_changed', data, createdAt: op.now });
  }
  await recordEvent(op.db, { organizationId, type: 'user.self_excluded', data: excluded, createdAt: op.now });
  return { body: excluded, afterCommit: () => op.lifecyclePoke.poke() };
}

/**
 * The end of one self-exclusion, at or after its `until` by the database's clock: the user returns to the
 * status it had before (emitting `user.status_changed`). An exclusion that a later one extended ends nothing.
 * Keyed by the exclusion's id: running it again finds it ended.
 */
export async function endSelfExclusion(db: Queryable, selfExclusionId: string): Promise<SelfExclusionEnd> {
  const { rows } = await db.query<{
    user_id: string;
    organization_id: string;
    status_before: UserStatus;
    ended: boolean;
    due: boolean;
    current: boolean;
  }>(
    `SELECT x.user_id, x.organization_id, x.status_before, x.ended_at IS NOT NULL AS ended, x.until <= now() AS due,
            u.self_excluded_until IS NOT DISTINCT FROM x.until AS current
       FROM self_exclusions x JOIN users u ON u.id = x.user_id WHERE x.id = $1 FOR UPDATE OF x, u`,
    [selfExclusionId],
  );
  const exclusion = rows[0];
  if (!exclusion) throw new Error(`no self-exclusion ${selfExclusionId}`);
  if (exclusion.ended) return 'already_ended';
  if (!exclusion.current) {
    await db.query(`UPDATE self_exclusions SET ended_at = now() WHERE id = $1`, [selfExclusionId]);
    return 'superseded';
  }
  if (!exclusion.due) return 'not_due';
  const now = new Date();
  await setStatusSource(db, 'self_exclusion');
  const user = await setSelfExclusion(db, { userId: exclusion.user_id, status: exclusion.status_before, until: null, now });
  await db.query(`UPDATE self_exclusions SET ended_at = now() WHERE user_id = $1 AND ended_at IS NULL`, [exclusion.user_id]);
  if (user.status !== 'suspended') {
    const data = { ...user, previous_status: 'suspended' };
    await recordEvent(db, { organizationId: exclusion.organization_id, type: 'user.status_changed', data, createdAt: now });
  }
  return 'ended';
}
