import { ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import { ensureSchedule } from '../platform/schedules';
import type { Config } from '../config';
import { settlementTaskQueue } from '../settlement/contract';

/**
 * The Temporal Schedule polling the bank's inbound/ every ACH_INBOUND_POLL_SECONDS (SPEC §25); in sandbox it runs
 * every SANDBOX_RETURN_SECONDS for the simulated bank's returns and changes instead. Overlap SKIP: one poll at a time, a slow one is not
 * queued behind; a missed poll is made up by the next.
 */
export const ACH_INBOUND_WORKFLOW_TYPE = 'achInboundWorkflow';

export function achInboundScheduleId(taskQueue: string): string {
  return `ach-inbound-${taskQueue}`;
}

function scheduleOptions(
  taskQueue: string,
  config: Pick<Config, 'LEDGER_ENVIRONMENT' | 'ACH_INBOUND_POLL_SECONDS' | 'SANDBOX_RETURN_SECONDS'>,
) {
  const every = config.LEDGER_ENVIRONMENT === 'sandbox' ? config.SANDBOX_RETURN_SECONDS : config.ACH_INBOUND_POLL_SECONDS;
  return {
    scheduleId: achInboundScheduleId(taskQueue),
    spec: { intervals: [{ every: `${every} seconds` as const }] },
    action: {
      type: 'startWorkflow' as const,
      workflowType: ACH_INBOUND_WORKFLOW_TYPE,
      workflowId: `ach-inbound-${taskQueue}`,
      taskQueue: settlementTaskQueue(taskQueue),
      args: [] as [],
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute', pauseOnFailure: false },
  } satisfies ScheduleOptions;
}

/** Creates the schedule or brings it up to date: idempotent, safe for every worker to call at start. */
export async function ensureAchInboundSchedule(
  client: Client,
  taskQueue: string,
  config: Pick<Config, 'LEDGER_ENVIRONMENT' | 'ACH_INBOUND_POLL_SECONDS' | 'SANDBOX_RETURN_SECONDS'>,
): Promise<{ scheduleId: string; created: boolean }> {
  return ensureSchedule(client, scheduleOptions(taskQueue, config));
}
