import { ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import { ensureSchedule } from '../platform/schedules';
import type { Logger } from 'pino';
import type { Config } from '../config';
import { SETTLEMENT_ZONE } from '../easternDates';
import { settlementTaskQueue } from '../settlement/contract';
import { achDeliveryStatus } from '../achSettings';

/**
 * The Temporal Schedule of the ACH windows (SPEC §24): production fires at each time of ACH_WINDOWS on the
 * America/New_York wall clock (the window workflow skips days that are not business days of the §15
 * calendar: a schedule's calendar cannot name the Federal Reserve's holidays); sandbox fires every
 * SANDBOX_ACH_WINDOW_SECONDS. Runs on settlement's task queue, beside the settlement windows.
 *
 * Overlap ALLOW_ALL: a window's run waits (durable timer) until its file settles, hours later in production;
 * the next window must still build its file on time. Two builds never take the same entry (the claim locks
 * them, and the database refuses a second file for an entry) and never the same File ID Modifier (they
 * build one at a time). Catch-up 1 hour: a window missed longer ago is swept by the next one.
 */
export const ACH_WINDOW_WORKFLOW_TYPE = 'achWindowWorkflow';

export function achScheduleId(taskQueue: string): string {
  return `ach-windows-${taskQueue}`;
}

function scheduleOptions(taskQueue: string, config: Pick<Config, 'LEDGER_ENVIRONMENT' | 'ACH_WINDOWS' | 'SANDBOX_ACH_WINDOW_SECONDS'>) {
  const spec =
    config.LEDGER_ENVIRONMENT === 'sandbox'
      ? { intervals: [{ every: `${config.SANDBOX_ACH_WINDOW_SECONDS} seconds` as const }] }
      : {
          calendars: config.ACH_WINDOWS.map((w) => {
            const [hour, minute] = w.window.split(':').map(Number) as [number, number];
            return { hour, minute, comment: `ACH window ${w.window} ${SETTLEMENT_ZONE}, settles ${w.settlement}` };
          }),
          timezone: SETTLEMENT_ZONE,
        };
  return {
    scheduleId: achScheduleId(taskQueue),
    spec,
    action: {
      type: 'startWorkflow' as const,
      workflowType: ACH_WINDOW_WORKFLOW_TYPE,
      // The scheduler appends the nominal time: each firing's run has its own stable id (the build's key).
      workflowId: `ach-window-${taskQueue}`,
      taskQueue: settlementTaskQueue(taskQueue),
      args: [] as [],
    },
    policies: { overlap: ScheduleOverlapPolicy.ALLOW_ALL, catchupWindow: '1 hour', pauseOnFailure: false },
  } satisfies ScheduleOptions;
}

/** Creates the schedule or brings it up to date: idempotent, safe for every worker to call at start. */
export async function ensureAchSchedule(
  client: Client,
  taskQueue: string,
  config: Pick<Config, 'LEDGER_ENVIRONMENT' | 'ACH_WINDOWS' | 'SANDBOX_ACH_WINDOW_SECONDS'>,
): Promise<{ scheduleId: string; created: boolean }> {
  return ensureSchedule(client, scheduleOptions(taskQueue, config));
}

export function warnIfAchUndeliverable(config: Parameters<typeof achDeliveryStatus>[0], log: Logger): void {
  if (achDeliveryStatus(config) === 'not_configured') {
    log.warn('ACH_SFTP_URL is not set: ACH files are built and kept undelivered (status built) until it is');
  }
}
