import { ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import { ensureSchedule } from '../platform/schedules';
import { SETTLEMENT_ZONE } from '../easternDates';
import { SETTLEMENT_WINDOW_WORKFLOW_TYPE, settlementTaskQueue, type SettlementWindowInput } from './workflowContract';

/**
 * The Temporal Schedule that closes every settlement window (SPEC §10): fires at SETTLEMENT_CUTOFF on the
 * America/New_York wall clock each day and starts settlementWindowWorkflow, which reads the firing's nominal
 * time (TemporalScheduledStartTime) to know which window it closes.
 *
 * Overlap policy BUFFER_ALL: every firing runs, one after another, in order. Each window must close exactly
 * once and in date order: SKIP would drop a window whose predecessor is still running (e.g. the second of two
 * windows caught up after an outage), and ALLOW_ALL would let window D+1 sweep D's transactions before D runs.
 * Buffering costs little because a window run only builds transfers and starts their settlement workflows;
 * it never waits for the network, so the next firing waits seconds, not days.
 *
 * Catch-up window 7 days: when the Temporal service was down at a firing, the missed firings of the last
 * week run when it is back (in order, per BUFFER_ALL). Older ones are not replayed automatically; nothing is
 * lost even then, because a window takes every eligible transaction dated on or before it, so the next run
 * sweeps them up, and an operator can backfill (`settlement run --date D` or a schedule backfill). A worker
 * that is down while Temporal is up needs no catch-up at all: the firing's workflow waits in the task queue.
 *
 * Temporal matches the calendar literally on the wall clock: a cutoff in the skipped hour of the
 * spring-forward day (02:00–02:59) does not fire that day (the next window sweeps its transactions), and one
 * in the repeated hour of the fall-back day (01:00–01:59) fires twice, closing the same window twice, which
 * creates nothing the second time. The default cutoff 00:00 is never affected.
 */
export const SETTLEMENT_SCHEDULE_POLICIES = {
  overlap: ScheduleOverlapPolicy.BUFFER_ALL,
  catchupWindow: '7 days',
  pauseOnFailure: false,
} as const;

/** One schedule per task queue, so deployments (and test stacks) sharing a Temporal namespace stay apart. */
export function settlementScheduleId(taskQueue: string): string {
  return `settlement-windows-${taskQueue}`;
}

function scheduleOptions(input: { taskQueue: string; cutoff: string; scope?: SettlementWindowInput; scheduleId?: string }) {
  const [hour, minute] = input.cutoff.split(':').map(Number) as [number, number];
  return {
    scheduleId: input.scheduleId ?? settlementScheduleId(input.taskQueue),
    spec: {
      calendars: [{ hour, minute, comment: `settlement cutoff ${input.cutoff} ${SETTLEMENT_ZONE}` }],
      timezone: SETTLEMENT_ZONE,
    },
    action: {
      type: 'startWorkflow' as const,
      workflowType: SETTLEMENT_WINDOW_WORKFLOW_TYPE,
      // The scheduler appends the nominal time to this id, so each firing's workflow id is unique and stable.
      workflowId: `settlement-window-${input.taskQueue}`,
      // Named after the lifecycle queue (so an existing schedule is updated, not duplicated), run on settlement's own.
      taskQueue: settlementTaskQueue(input.taskQueue),
      args: [input.scope ?? {}] as [SettlementWindowInput],
    },
    policies: { ...SETTLEMENT_SCHEDULE_POLICIES },
  } satisfies ScheduleOptions;
}

/**
 * Creates the schedule, or brings an existing one up to date (a changed SETTLEMENT_CUTOFF, a new policy):
 * idempotent, safe for every worker process to call at start, concurrently.
 * `scope` limits the windows to one organization or account (tests); production closes every account.
 */
export async function ensureSettlementSchedule(
  client: Client,
  input: { taskQueue: string; cutoff: string; scope?: SettlementWindowInput; scheduleId?: string },
): Promise<{ scheduleId: string; created: boolean }> {
  return ensureSchedule(client, scheduleOptions(input));
}
