import { InvalidArgumentError, type Command } from 'commander';
import type { CommandRegistrar } from '../cli/registrar';
import {
  businessDaysBetween,
  CALENDAR_LIMITS,
  CalendarDateError,
  holidaysBetween,
  isCalendarDateString,
  SETTLEMENT_CALENDARS,
  type SettlementCalendar,
} from './calendar';
import * as repo from './repo';
import { streamTransferCsv, transferTotals } from './report';

function isoDate(value: string): string {
  if (!isCalendarDateString(value))
    throw new InvalidArgumentError(`must be a calendar date YYYY-MM-DD in ${CALENDAR_LIMITS.yearMin}–${CALENDAR_LIMITS.yearMax}`);
  return value;
}

function calendarName(value: string): SettlementCalendar {
  if (!(SETTLEMENT_CALENDARS as readonly string[]).includes(value))
    throw new InvalidArgumentError(`must be one of ${SETTLEMENT_CALENDARS.join(', ')}`);
  return value as SettlementCalendar;
}

/**
 * `calendar --from D --to D [--calendar C]` (SPEC §15): the business days and holidays of a range, by the
 * deployment's SETTLEMENT_CALENDAR unless --calendar names another. With --json exactly
 * `{ "business_days": [...], "holidays": [{ "date", "name" }] }`.
 */
export const registerCalendarCommands: CommandRegistrar = (program, ctx) => {
  program
    .command('calendar')
    .description('business days and holidays of the settlement calendar, both dates included')
    .requiredOption('--from <date>', 'first day (YYYY-MM-DD)', isoDate)
    .requiredOption('--to <date>', `last day (YYYY-MM-DD), at most ${CALENDAR_LIMITS.rangeDaysMax} days after --from`, isoDate)
    .option('--calendar <name>', `${SETTLEMENT_CALENDARS.join(' | ')} (default: SETTLEMENT_CALENDAR)`, calendarName)
    .action(async function (this: Command, options: { from: string; to: string; calendar?: SettlementCalendar }) {
      const calendar = options.calendar ?? ctx().config.SETTLEMENT_CALENDAR;
      let businessDays: string[];
      let holidays: Array<{ date: string; name: string }>;
      try {
        businessDays = businessDaysBetween(options.from, options.to, calendar);
        holidays = holidaysBetween(options.from, options.to, calendar);
      } catch (error) {
        if (error instanceof CalendarDateError) this.error(`error: ${error.message}`, { exitCode: 2, code: 'commander.invalidArgument' });
        throw error;
      }
      const human = [
        `${calendar} calendar, ${options.from} to ${options.to}: ${businessDays.length} business day(s), ${holidays.length} holiday(s)`,
        ...holidays.map((holiday) => {
          const weekday = new Date(`${holiday.date}T12:00:00Z`).toLocaleDateString('en-US', { weekday: 'short', timeZone: 'UTC' });
          return `  holiday       ${holiday.date} ${weekday}  ${holiday.name}`;
        }),
        ...businessDays.map((date) => `  business day  ${date}`),
      ].join('\n');
      ctx().out(human, { business_days: businessDays, holidays: holidays.map(({ date, name }) => ({ date, name })) });
    });
};

/**
 * `settlement report --transfer T [--csv]`: a transfer's reconciliation totals (checked against its amount), or
 * with --csv its full statement streamed to stdout, exactly as GET /transfer/{id}/report?format=csv answers it.
 * Registered after `settlement run`, under the same `settlement` command.
 */
export const registerSettlementReportCommands: CommandRegistrar = (program, ctx) => {
  const settlement = program.commands.find((command) => command.name() === 'settlement') ?? program.command('settlement');
  settlement
    .command('report')
    .description("a transfer's reconciliation report: totals by direction and type (--csv: every member as CSV)")
    .requiredOption('--transfer <id>', 'the transfer')
    .option('--csv', 'print the full statement as CSV instead')
    .action(async (options: { transfer: string; csv?: boolean }) => {
      const { pool, out } = ctx();
      const row = await repo.getTransferRow(pool, options.transfer);
      if (!row) throw new Error(`no transfer ${options.transfer}`);
      const totals = await transferTotals(pool, row);
      if (options.csv) {
        await streamTransferCsv(pool, row, process.stdout);
        return;
      }
      const transfer = repo.renderTransfer(row);
      const side = (s: { count: number; amount: number }) => `${s.count} for ${s.amount}`;
      out(
        [
          `${transfer.id}  ${transfer.account_id}  ${transfer.direction} ${transfer.amount} ${transfer.currency}  ${transfer.status}`,
          `window ${transfer.window_date}, settlement date ${transfer.date}, ${transfer.transaction_count} transactions`,
          `cash_in ${side(totals.cash_in)}, cash_out ${side(totals.cash_out)}, net ${totals.net} (checked against the transfer)`,
          ...Object.entries(totals.by_type).map(
            ([type, t]) => `  ${type.padEnd(8)} cash_in ${side(t.cash_in)}, cash_out ${side(t.cash_out)}, net ${t.net}`,
          ),
        ].join('\n'),
        { transfer, totals },
      );
    });
};
