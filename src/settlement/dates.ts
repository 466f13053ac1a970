import { DateTime } from 'luxon';
import { SETTLEMENT_ZONE, windowBounds } from '../easternDates';
import { nextBusinessDayOnOrAfter, type SettlementCalendar } from './calendar';

/**
 * Window arithmetic of settlement (SPEC §10), on top of the ledger's settlementDateOf/windowBounds. Pure
 * functions of their arguments: never the wall clock, so a backfilled or late run computes the same dates.
 */

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/**
 * The window a schedule firing closes, from the firing's NOMINAL time (TemporalScheduledStartTime), which is
 * the cutoff on the Eastern clock. A cutoff of 00:00 is the END of window D (midnight opening D+1), so the
 * firing at 00:00 on D+1 closes D; any other cutoff ends window D on D itself. Read from the calendar day of
 * the firing, not from "one instant before it", because on the fall-back day a cutoff in 01:00–01:59 fires
 * twice (Temporal matches the wall clock literally) and both firings must close the same window.
 */
export function windowDateOfScheduledTime(scheduledAt: Date, cutoff: string): string {
  const local = DateTime.fromJSDate(scheduledAt, { zone: SETTLEMENT_ZONE });
  if (!local.isValid) throw new Error(`not a valid moment: ${String(scheduledAt)}`);
  const day = local.startOf('day');
  return (cutoff === '00:00' ? day.minus({ days: 1 }) : day).toISODate();
}

/**
 * The Eastern calendar day on which window D closes (D+1 with the default cutoff 00:00, D with a cutoff during
 * the day): the day its transfer is built.
 */
export function windowCloseDateOf(windowDate: string, cutoff: string): string {
  const { end } = windowBounds(windowDate, cutoff);
  return DateTime.fromJSDate(end, { zone: SETTLEMENT_ZONE }).toISODate()!;
}

/**
 * The settlement date of window D's transfer (SPEC §15): the first business day on or after the day the window
 * closes. The transfer goes to the rail on that date.
 */
export function transferDateOf(windowDate: string, cutoff: string, calendar: SettlementCalendar = 'federal_reserve'): string {
  return nextBusinessDayOnOrAfter(windowCloseDateOf(windowDate, cutoff), calendar);
}

/** The moment a transfer dated `date` may be handed to the rail: that day's start on the Eastern clock. */
export function handOffTimeOf(transferDate: string): Date {
  const start = DateTime.fromISO(transferDate, { zone: SETTLEMENT_ZONE }).startOf('day');
  if (!start.isValid) throw new Error(`not a calendar date: ${transferDate}`);
  return start.toJSDate();
}

export function isCalendarDate(value: string): boolean {
  return DATE.test(value) && DateTime.fromISO(value, { zone: SETTLEMENT_ZONE }).isValid;
}
