import { proxyActivities } from '@temporalio/workflow';
import type { AchInboundActivities } from '../activities/achInbound';

/**
 * One poll of the bank's inbound/ (SPEC §25): list the files not seen yet, ingest each (download and apply in
 * one database transaction). Started by the inbound schedule (src/ach/inboundSchedule.ts). Every step is
 * idempotent by content, so a run retried or repeated applies each file once.
 */

/**
 * The steps heartbeat every 2 s (activities/heartbeat.ts): a step whose worker died is retried elsewhere after
 * heartbeatTimeout. Without it a poll whose worker was killed held the schedule (overlap: skip) for its
 * 10-minute start-to-close timeout, and no return was read meanwhile (the simulation with the SFTP bank, seed 20,
 * docs/reliability.md). A replay matches a scheduled activity by its type and id, not its timeouts, so polls
 * already running replay unchanged (test/achInbound.replay.test.ts).
 */
const sftp = proxyActivities<AchInboundActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '15 seconds',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 10 },
});

export interface AchInboundResult {
  files: number;
  ingested: number;
  exceptions: number;
  /** Sandbox: returns and changes its simulated bank sent. */
  simulated: number;
}

export async function achInboundWorkflow(): Promise<AchInboundResult> {
  const simulated = await sftp.sandboxBankSweep();
  const names = await sftp.listAchInbound();
  let ingested = 0;
  let exceptions = 0;
  for (const name of names) {
    const result = await sftp.ingestAchInbound({ name });
    if (result.outcome === 'ingested') ingested += 1;
    exceptions += result.exceptions;
  }
  return { files: names.length, ingested, exceptions, simulated: simulated.returned + simulated.changed };
}
