import { proxyActivities, sleep } from '@temporalio/workflow';
import type { LimitsActivities } from '../activities/limits';
import type { SelfExclusionEnd, SelfExclusionWorkflowInput } from '../src/limits/workflowContract';

const { endSelfExclusion } = proxyActivities<LimitsActivities>({
  startToCloseTimeout: '30s',
  // No maximumAttempts: an end that cannot reach the database, or that the database's clock finds early,
  // waits and tries again; the user must come back.
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
});

/**
 * The end of one self-exclusion (SPEC §26): a durable timer until `until`, then the activity that returns the
 * user. The timer lives in Temporal's history, so it survives any worker or server restart.
 */
export async function selfExclusionWorkflow(input: SelfExclusionWorkflowInput): Promise<SelfExclusionEnd> {
  const waitMs = input.untilMs - Date.now();
  if (waitMs > 0) await sleep(waitMs);
  return endSelfExclusion({ selfExclusionId: input.selfExclusionId });
}
