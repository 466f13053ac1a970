import { DateTime } from 'luxon';

/** Settlement windows are Eastern-time days (SPEC §8, §10). */
export const SETTLEMENT_ZONE = 'America/New_York';

const CUTOFF = /^([01]\d|2[0-3]):([0-5]\d)$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

function parseCutoff(cutoff: string): { hour: number; minute: number } {
  const match = CUTOFF.exec(cutoff);
  if (!match) throw new Error(`settlement cutoff must be HH:MM, got ${JSON.stringify(cutoff)}`);
  return { hour: Number(match[1]), minute: Number(match[2]) };
}

/** The window settlementDateOf answered last, with its bounds in epoch ms. */
let lastWindow: { cutoff: string; date: string; start: number; end: number } | null = null;

/**
 * The settlement window (YYYY-MM-DD) a moment belongs to. Window D is the span ending at the cutoff on D
 * Eastern time and starting at the cutoff on D−1, so with cutoff 17:00, 18:00 on the 5th belongs to the
 * 6th. The default cutoff 00:00 is midnight at the END of D, so window D is simply the Eastern calendar
 * day D. The arithmetic is on the Eastern wall clock, never on fixed 24-hour offsets, so the 23- and
 * 25-hour days of DST changes get exactly their own hours. A moment exactly at the cutoff opens the next
 * window. A cutoff that falls in the skipped hour of the spring-forward day moves to the first instant after
 * it (luxon's rule), on that day only.
 */
export function settlementDateOf(createdAt: Date, cutoff: string): string {
  // Every write asks, nearly always about the window of the one before: its bounds answer without luxon.
  const at = createdAt.getTime();
  const last = lastWindow;
  if (last !== null && last.cutoff === cutoff && at >= last.start && at < last.end) return last.date;
  const date = windowOf(createdAt, cutoff);
  const { start, end } = windowBounds(date, cutoff);
  if (at >= start.getTime() && at < end.getTime()) lastWindow = { cutoff, date, start: start.getTime(), end: end.getTime() };
  return date;
}

function windowOf(createdAt: Date, cutoff: string): string {
  const { hour, minute } = parseCutoff(cutoff);
  const local = DateTime.fromJSDate(createdAt, { zone: SETTLEMENT_ZONE });
  if (!local.isValid) throw new Error(`not a valid moment: ${String(createdAt)}`);
  const day = local.startOf('day');
  if (hour === 0 && minute === 0) return day.toISODate();
  const cutoffToday = day.set({ hour, minute });
  return (local < cutoffToday ? day : day.plus({ days: 1 })).toISODate();
}

/** The half-open span [start, end) of window `date`: every moment m in it has settlementDateOf(m) === date. */
export function windowBounds(date: string, cutoff: string): { start: Date; end: Date } {
  const { hour, minute } = parseCutoff(cutoff);
  if (!DATE.test(date)) throw new Error(`window date must be YYYY-MM-DD, got ${JSON.stringify(date)}`);
  const day = DateTime.fromISO(date, { zone: SETTLEMENT_ZONE });
  if (!day.isValid) throw new Error(`not a calendar date: ${date}`);
  if (hour === 0 && minute === 0) {
    return { start: day.toJSDate(), end: day.plus({ days: 1 }).toJSDate() };
  }
  return {
    start: day.minus({ days: 1 }).set({ hour, minute }).toJSDate(),
    end: day.set({ hour, minute }).toJSDate(),
  };
}
