import { DateTime } from 'luxon';
import { SETTLEMENT_ZONE } from '../easternDates';
import type { LimitPeriod } from './schemas';

/** The Eastern calendar periods of an instant (SPEC §26), each named by its first day, YYYY-MM-DD. */
export type PeriodStarts = Record<LimitPeriod, string>;

/**
 * The day, the ISO week (Monday first) and the month an instant falls in on the Eastern wall clock. Plain
 * calendar periods: SETTLEMENT_CUTOFF shifts settlement windows, not limits.
 */
export function periodStartsOf(at: Date): PeriodStarts {
  const local = DateTime.fromJSDate(at, { zone: SETTLEMENT_ZONE });
  return {
    day: local.toISODate()!,
    // luxon's weeks are ISO weeks: they start on Monday.
    week: local.startOf('week').toISODate()!,
    month: local.startOf('month').toISODate()!,
  };
}
