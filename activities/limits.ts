import { ApplicationFailure } from '@temporalio/common';
import { withTransaction } from '../src/db/pool';
import type { SelfExclusionEnd } from '../src/limits/workflowContract';
import { endSelfExclusion } from '../src/limits/selfExclusion';
import type { ActivityDeps } from './deps';

/** SPEC §26's activities: each one Postgres transaction, keyed by the business id, safe to run again. */
export function createLimitsActivities(deps: ActivityDeps) {
  return {
    /** Returns a self-excluded user at the end of its exclusion; early by the database's clock: retried. */
    async endSelfExclusion(input: { selfExclusionId: string }): Promise<Exclude<SelfExclusionEnd, 'not_due'>> {
      const result = await withTransaction(deps.pool, (tx) => endSelfExclusion(tx, input.selfExclusionId));
      if (result === 'not_due') throw ApplicationFailure.retryable(`self-exclusion ${input.selfExclusionId} is not due yet`, 'NotDue');
      return result;
    },
  };
}

export type LimitsActivities = ReturnType<typeof createLimitsActivities>;
