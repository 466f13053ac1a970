import { DateTime } from 'luxon';
import type { Config } from '../config';
import { SETTLEMENT_ZONE } from '../easternDates';
import { isBusinessDay, nextBusinessDayOnOrAfter, addDays } from '../settlement/contract';
import type { AchWindow } from '../achSettings';

/**
 * When an ACH file is built, dated and settled (SPEC §24, docs/ach.md "Windows" and "Settlement"). Pure: the
 * window activity hands in its clock. Production follows the bank's windows on the Eastern clock; sandbox
 * dates files the same way and settles them when the simulated bank would (src/ach/files.ts, per entry).
 */

/** A next-day file (built after the day's last window) settles at 08:30 Eastern on its effective date. */
export const NEXT_DAY_SETTLEMENT = '08:30';

export interface FileTiming {
  /** The file header's creation date and time (Eastern), and the day its File ID Modifier counts in. */
  fileDate: string;
  creationTime: string;
  /** The window (Eastern HH:MM) this build belongs to: the latest one at or before now; null before the first. */
  windowTime: string | null;
  /** Every batch's effective entry date: today for a same-day window on a business day, else the next business day. */
  effectiveDate: string;
  /** Production: the FedACH settlement time of the window on the effective date. */
  settleAt: Date;
}

const at = (date: string, clock: string) => DateTime.fromISO(`${date}T${clock}`, { zone: SETTLEMENT_ZONE }).toJSDate();

export function fileTimingOf(now: Date, config: Pick<Config, 'ACH_WINDOWS' | 'SETTLEMENT_CALENDAR'>): FileTiming {
  const local = DateTime.fromJSDate(now, { zone: SETTLEMENT_ZONE });
  const fileDate = local.toISODate()!;
  const clock = local.toFormat('HH:mm');
  const windows: readonly AchWindow[] = config.ACH_WINDOWS;
  const current = [...windows].reverse().find((w) => w.window <= clock) ?? null;
  const sameDay = isBusinessDay(fileDate, config.SETTLEMENT_CALENDAR) && clock < (current?.settlement ?? windows[0]?.settlement ?? '00:00');
  if (sameDay) {
    // Before the first window (an operator's `ach window run`) the file makes the first window's settlement.
    const settlement = current?.settlement ?? windows[0]!.settlement;
    return {
      fileDate,
      creationTime: clock,
      windowTime: current?.window ?? null,
      effectiveDate: fileDate,
      settleAt: at(fileDate, settlement),
    };
  }
  const effectiveDate = nextBusinessDayOnOrAfter(addDays(fileDate, 1), config.SETTLEMENT_CALENDAR);
  return {
    fileDate,
    creationTime: clock,
    windowTime: current?.window ?? null,
    effectiveDate,
    settleAt: at(effectiveDate, NEXT_DAY_SETTLEMENT),
  };
}

/** Whether a production window firing at `now` builds a file: only on business days of the §15 calendar. */
export function isAchBusinessDay(now: Date, config: Pick<Config, 'SETTLEMENT_CALENDAR'>): boolean {
  return isBusinessDay(DateTime.fromJSDate(now, { zone: SETTLEMENT_ZONE }).toISODate()!, config.SETTLEMENT_CALENDAR);
}

/**
 * When a delivered production file settles: at the settlement time it was built for, or, when it reached the
 * bank later than that (built while ACH_SFTP_URL was not set, or the bank's server was down for hours), at
 * the settlement of the window its delivery makes: the bank cannot settle a file before it has it.
 */
export function deliveredFileSettlesAt(
  file: { settle_at: Date; delivered_at: Date },
  config: Pick<Config, 'ACH_WINDOWS' | 'SETTLEMENT_CALENDAR'>,
): Date {
  const byDelivery = fileTimingOf(file.delivered_at, config).settleAt;
  return byDelivery > file.settle_at ? byDelivery : file.settle_at;
}
