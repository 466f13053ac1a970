import { ScheduleAlreadyRunning, type Client, type ScheduleOptions } from '@temporalio/client';

/**
 * Creates a Temporal Schedule, or brings an existing one up to date (a changed spec, action or policy):
 * idempotent, safe for every worker process to call at start, concurrently. The settlement windows (SPEC §10),
 * the ACH windows (§24) and the ACH inbound poll (§25) each keep one schedule this way.
 */
export async function ensureSchedule(client: Client, options: ScheduleOptions): Promise<{ scheduleId: string; created: boolean }> {
  try {
    await client.schedule.create(options);
    return { scheduleId: options.scheduleId, created: true };
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  await client.schedule.getHandle(options.scheduleId).update((previous) => ({
    ...previous,
    spec: options.spec,
    action: options.action,
    policies: options.policies,
  }));
  return { scheduleId: options.scheduleId, created: false };
}
