/**
 * The settlement calendar (SPEC §15): which calendar days money moves between banks. Pure and dependency-free
 * (no clock, no I/O, no time zones: calendar dates as `YYYY-MM-DD` strings), so workflow code may import it.
 *
 * `federal_reserve`: the Federal Reserve's holidays computed from their rules, plus weekends. A fixed-date
 * holiday on a Sunday is observed the Monday after; one on a Saturday is NOT moved to the Friday before (the
 * Fed stays open that Friday), so it costs no weekday. `every_day`: every calendar day is a business day.
 */

import { SETTLEMENT_CALENDARS, type SettlementCalendar } from '../settlementCalendars';

export { SETTLEMENT_CALENDARS, type SettlementCalendar };

export interface Holiday {
  /** The day the Fed is closed for it: the holiday's own date, or the Monday after a Sunday holiday. */
  date: string;
  name: string;
}

/** Years the calendar answers for; dates outside are refused rather than guessed. */
export const CALENDAR_LIMITS = { yearMin: 1900, yearMax: 2999, rangeDaysMax: 3_700 };

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAY_MS = 86_400_000;

export class CalendarDateError extends Error {
  override name = 'CalendarDateError';
}

/** Days since 1970-01-01 of a valid `YYYY-MM-DD` in the supported years; throws CalendarDateError otherwise. */
function dayNumber(date: string): number {
  const match = ISO_DATE.exec(date);
  if (!match) throw new CalendarDateError(`not a date YYYY-MM-DD: ${JSON.stringify(date)}`);
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const ms = Date.UTC(year, month - 1, day);
  const back = new Date(ms);
  if (back.getUTCFullYear() !== year || back.getUTCMonth() !== month - 1 || back.getUTCDate() !== day) {
    throw new CalendarDateError(`not a calendar date: ${date}`);
  }
  if (year < CALENDAR_LIMITS.yearMin || year > CALENDAR_LIMITS.yearMax) {
    throw new CalendarDateError(`${date}: outside the years ${CALENDAR_LIMITS.yearMin}–${CALENDAR_LIMITS.yearMax}`);
  }
  return ms / DAY_MS;
}

function dateOf(days: number): string {
  return new Date(days * DAY_MS).toISOString().slice(0, 10);
}

/** 0 = Sunday … 6 = Saturday. */
function weekdayOf(days: number): number {
  return new Date(days * DAY_MS).getUTCDay();
}

export function isCalendarDateString(value: string): boolean {
  try {
    dayNumber(value);
    return true;
  } catch {
    return false;
  }
}

export function addDays(date: string, days: number): string {
  return dateOf(dayNumber(date) + days);
}

/** The nth (1-based) given weekday of a month; n = -1 is the last. */
function nthWeekday(year: number, month: number, weekday: number, n: number): number {
  if (n > 0) {
    const first = Date.UTC(year, month - 1, 1) / DAY_MS;
    return first + ((weekday - weekdayOf(first) + 7) % 7) + (n - 1) * 7;
  }
  const last = Date.UTC(year, month, 0) / DAY_MS;
  return last - ((weekdayOf(last) - weekday + 7) % 7);
}

const MONDAY = 1;
const THURSDAY = 4;

/** The Federal Reserve's holidays of one year, in date order, each on the day the Fed is closed for it. */
export function federalReserveHolidays(year: number): Holiday[] {
  const fixed = (month: number, day: number, name: string): Holiday => {
    const days = Date.UTC(year, month - 1, day) / DAY_MS;
    // Sunday → the Monday after; Saturday stays on the Saturday (no weekday is lost).
    return weekdayOf(days) === 0 ? { date: dateOf(days + 1), name: `${name} (observed)` } : { date: dateOf(days), name };
  };
  const floating = (month: number, weekday: number, n: number, name: string): Holiday => ({
    date: dateOf(nthWeekday(year, month, weekday, n)),
    name,
  });
  const holidays = [
    fixed(1, 1, "New Year's Day"),
    floating(1, MONDAY, 3, 'Martin Luther King Jr. Day'),
    floating(2, MONDAY, 3, "Washington's Birthday"),
    floating(5, MONDAY, -1, 'Memorial Day'),
    // A federal holiday since 2021.
    ...(year >= 2021 ? [fixed(6, 19, 'Juneteenth National Independence Day')] : []),
    fixed(7, 4, 'Independence Day'),
    floating(9, MONDAY, 1, 'Labor Day'),
    floating(10, MONDAY, 2, 'Columbus Day'),
    fixed(11, 11, 'Veterans Day'),
    floating(11, THURSDAY, 4, 'Thanksgiving Day'),
    fixed(12, 25, 'Christmas Day'),
  ];
  return holidays.sort((a, b) => (a.date < b.date ? -1 : a.date > b.date ? 1 : 0));
}

const holidayCache = new Map<number, Map<string, string>>();
function holidaysOfYear(year: number): Map<string, string> {
  let found = holidayCache.get(year);
  if (!found) {
    found = new Map(federalReserveHolidays(year).map((holiday) => [holiday.date, holiday.name]));
    holidayCache.set(year, found);
  }
  return found;
}

/** The holiday the Fed is closed for on `date`, if any (also on a Saturday, where it changes nothing). */
export function holidayOn(date: string, calendar: SettlementCalendar = 'federal_reserve'): string | null {
  dayNumber(date);
  if (calendar === 'every_day') return null;
  return holidaysOfYear(Number(date.slice(0, 4))).get(date) ?? null;
}

export function isBusinessDay(date: string, calendar: SettlementCalendar = 'federal_reserve'): boolean {
  const days = dayNumber(date);
  if (calendar === 'every_day') return true;
  const weekday = weekdayOf(days);
  return weekday !== 0 && weekday !== 6 && holidayOn(date, calendar) === null;
}

/** The first business day on or after `date` (the date itself when it is one). */
export function nextBusinessDayOnOrAfter(date: string, calendar: SettlementCalendar = 'federal_reserve'): string {
  let days = dayNumber(date);
  // At most a weekend plus a Monday holiday (or a Friday holiday plus the weekend) in a row; the bound only
  // guards against a rule table that ever closes every day.
  for (let step = 0; step < 14; step += 1) {
    const candidate = dateOf(days);
    if (isBusinessDay(candidate, calendar)) return candidate;
    days += 1;
  }
  throw new Error(`no business day within two weeks of ${date}`);
}

function checkedRange(from: string, to: string): [number, number] {
  const [start, end] = [dayNumber(from), dayNumber(to)];
  if (end < start) throw new CalendarDateError(`${to} is before ${from}`);
  if (end - start + 1 > CALENDAR_LIMITS.rangeDaysMax) throw new CalendarDateError(`at most ${CALENDAR_LIMITS.rangeDaysMax} days at a time`);
  return [start, end];
}

/** The holidays from `from` to `to`, both included, in date order. */
export function holidaysBetween(from: string, to: string, calendar: SettlementCalendar = 'federal_reserve'): Holiday[] {
  const [start, end] = checkedRange(from, to);
  if (calendar === 'every_day') return [];
  const result: Holiday[] = [];
  for (let year = Number(from.slice(0, 4)); year <= Number(to.slice(0, 4)); year += 1) {
    for (const holiday of federalReserveHolidays(year)) {
      const days = dayNumber(holiday.date);
      if (days >= start && days <= end) result.push(holiday);
    }
  }
  return result;
}

/** The business days from `from` to `to`, both included. */
export function businessDaysBetween(from: string, to: string, calendar: SettlementCalendar = 'federal_reserve'): string[] {
  const [start, end] = checkedRange(from, to);
  const result: string[] = [];
  for (let days = start; days <= end; days += 1) {
    const date = dateOf(days);
    if (isBusinessDay(date, calendar)) result.push(date);
  }
  return result;
}
