import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import type { Logger } from 'pino';
import { interruptiblePause } from '../concurrency';
import { withTransaction, type Pool } from '../db/pool';
import { SELF_EXCLUSION_WORKFLOW_TYPE, selfExclusionWorkflowId, type SelfExclusionWorkflowInput } from './contract';

/**
 * Starts the workflow whose durable timer ends each self-exclusion (SPEC §26), from the self_exclusions table
 * used as a durable queue: a row with workflow_started_at NULL is a start still owed. Self-contained on
 * purpose — one claim, one start, one mark — so that it can move onto a general durable command queue as it
 * is. Rows are rare (a person's decision, not a payment), so a poll is enough; its delay is nothing against
 * an end at least a day away.
 *
 * What a crash can lose: nothing. A row is marked in the database transaction that held its lock while
 * Temporal accepted the start; a starter that dies before that commit leaves it unmarked and the next pass
 * starts it again, which Temporal answers already-started (REJECT_DUPLICATE on the exclusion's own id).
 */

export const SELF_EXCLUSION_START_LIMITS = {
  /** Rows per pass: one pass is one database transaction held while Temporal answers. */
  batchMax: 50,
  pollMs: 1_000,
  /** How long one start may take before the pass gives up (the row stays owed). */
  callDeadlineMs: 5_000,
};

export async function startSelfExclusionWorkflow(client: Client, taskQueue: string, input: SelfExclusionWorkflowInput): Promise<void> {
  try {
    await client.workflow.start(SELF_EXCLUSION_WORKFLOW_TYPE, {
      workflowId: selfExclusionWorkflowId(input.selfExclusionId),
      taskQueue,
      args: [input],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      staticSummary: `self-exclusion of ${input.userId} until ${new Date(input.untilMs).toISOString()}`,
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

/** One pass: claims owed starts (skipping rows another worker holds), starts each, marks the started ones. */
export async function startOwedSelfExclusions(deps: { pool: Pool; client: Client; taskQueue: string }): Promise<number> {
  return withTransaction(deps.pool, async (db) => {
    const { rows } = await db.query<{ id: string; user_id: string; until: Date }>(
      `SELECT id, user_id, until FROM self_exclusions
        WHERE task_queue = $1 AND workflow_started_at IS NULL AND until <> 'infinity'
        ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
      [deps.taskQueue, SELF_EXCLUSION_START_LIMITS.batchMax],
    );
    const started: string[] = [];
    try {
      for (const row of rows) {
        const input = { selfExclusionId: row.id, userId: row.user_id, untilMs: row.until.getTime() };
        await deps.client.withDeadline(Date.now() + SELF_EXCLUSION_START_LIMITS.callDeadlineMs, () =>
          startSelfExclusionWorkflow(deps.client, deps.taskQueue, input),
        );
        started.push(row.id);
      }
    } finally {
      // What Temporal accepted is marked even when a later start failed; the rest stays owed.
      await db.query(`UPDATE self_exclusions SET workflow_started_at = now() WHERE id = ANY($1::text[])`, [started]);
    }
    return started.length;
  });
}

/** The worker's loop over startOwedSelfExclusions until stopped; a failed pass waits one poll and tries again. */
export function startSelfExclusionStarter(deps: { pool: Pool; client: Client; taskQueue: string; log: Logger }): { stop(): Promise<void> } {
  let stopped = false;
  const pause = interruptiblePause();
  const loop = (async () => {
    while (!stopped) {
      try {
        await startOwedSelfExclusions(deps);
      } catch (error) {
        deps.log.warn({ err: error }, 'self-exclusion workflow starts failed; they stay owed');
      }
      if (!stopped) await pause.pause(SELF_EXCLUSION_START_LIMITS.pollMs);
    }
  })();
  return {
    async stop() {
      stopped = true;
      pause.wake();
      await loop;
    },
  };
}
