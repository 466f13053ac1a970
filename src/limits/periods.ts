import { DateTime } from 'luxon';
import { SETTLEMENT_ZONE } from '../easternDates';
import type { LimitPeriod } from './schemas';

/** The Eastern calendar periods of an instant (SPEC §26), each named by its first day, YYYY-MM-DD. */
export type PeriodStarts = Record<LimitPeriod, string>;

/** The Eastern day periodStartsOf answered last: its bounds as epoch milliseconds and its periods. */
let lastDay: { start: number; end: number; periods: PeriodStarts } | null = null;

/**
 * The day, the ISO week (Monday first) and the month an instant falls in on the Eastern wall clock. Plain
 * calendar periods: SETTLEMENT_CUTOFF shifts settlement windows, not limits.
 */
export function periodStartsOf(at: Date): PeriodStarts {
  // Every approval asks, nearly always about the Eastern day of the one before: that day's bounds answer without
  // luxon's zone arithmetic (about 0.1 ms a call, a twentieth of the api's CPU for a POST /intent).
  const ms = at.getTime();
  const last = lastDay;
  if (last !== null && ms >= last.start && ms < last.end) return last.periods;
  const local = DateTime.fromJSDate(at, { zone: SETTLEMENT_ZONE });
  const periods: PeriodStarts = Object.freeze({
    day: local.toISODate()!,
    // luxon's weeks are ISO weeks: they start on Monday.
    week: local.startOf('week').toISODate()!,
    month: local.startOf('month').toISODate()!,
  });
  const dayStart = local.startOf('day');
  lastDay = { start: dayStart.toMillis(), end: dayStart.plus({ days: 1 }).toMillis(), periods };
  return periods;
}
