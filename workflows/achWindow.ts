import { log, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { AchActivities } from '../activities/ach';
import { ScheduledStartTimeKey } from '../src/platform/searchAttributes';

/**
 * One ACH window (SPEC §24, docs/ach.md "Windows"): build the file of every queued entry, deliver it, wait
 * (a durable timer) for its settlement time, settle its entries. Started by the ACH schedule
 * (src/ach/schedule.ts) or `ach window run`. Each step is an idempotent activity keyed by this run or the
 * file, so a worker killed anywhere resumes to the same file, delivered once, settled once.
 */

export interface AchWindowResult {
  fileId: string | null;
  status: 'none' | 'built' | 'settled';
}

/**
 * The steps heartbeat every 2 s (activities/heartbeat.ts): a step whose worker died is retried elsewhere after
 * heartbeatTimeout, not after its start-to-close timeout. (A replay matches a scheduled activity by its type and
 * id, not its timeouts, so windows already running in the field replay unchanged.)
 */
const HEARTBEAT_TIMEOUT = '15 seconds';

const quick = proxyActivities<AchActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Delivery waits on the bank's server: retried with backoff until it answers (a non-retryable refusal stops it). */
const delivery = proxyActivities<AchActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '10 minutes' },
});

export async function achWindowWorkflow(): Promise<AchWindowResult> {
  const scheduledAt = workflowInfo().typedSearchAttributes.get(ScheduledStartTimeKey);
  const built = await quick.buildAchFile({ scheduledAt: scheduledAt ? scheduledAt.toISOString() : null });
  if (!built) return { fileId: null, status: 'none' };
  const delivered = await delivery.deliverAchFile({ fileId: built.fileId });
  if (delivered.outcome === 'undeliverable') return { fileId: built.fileId, status: 'built' };
  // Workflow time is deterministic (the task's start): the timer is recorded, so a replay waits the same.
  const wait = Date.parse(built.settleAt) - Date.now();
  if (wait > 0) await sleep(wait);
  await quick.settleAchFile({ fileId: built.fileId });
  log.info('ACH window settled', { fileId: built.fileId, entries: built.entryCount });
  return { fileId: built.fileId, status: 'settled' };
}
