import { continueAsNew, proxyActivities, setHandler, upsertMemo, workflowInfo } from '@temporalio/workflow';
import type { WebhookReplayActivities } from '../activities/webhookReplay';
import {
  REPLAY_MISSING,
  WEBHOOK_REPLAY_LIMITS,
  webhookReplayProgressQuery,
  type WebhookReplayInput,
  type WebhookReplayProgress,
} from '../src/webhooks/replayContract';

const { sendWebhookReplayBatch } = proxyActivities<WebhookReplayActivities>({
  startToCloseTimeout: WEBHOOK_REPLAY_LIMITS.batchActivityTimeoutMs,
  heartbeatTimeout: WEBHOOK_REPLAY_LIMITS.batchHeartbeatTimeoutMs,
  // No maximumAttempts: a batch that cannot reach the database waits for it; its progress is in the table.
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m', nonRetryableErrorTypes: [REPLAY_MISSING] },
});

/**
 * Replays a range of events to one endpoint (SPEC §17), one batch per activity until the range is sent. The
 * replay's row holds its cursor and counts, committed by each batch, so this workflow carries no state of its
 * own: after a worker dies, the batch it was sending runs again from the last committed cursor (its events
 * may reach the receiver twice, which dedupes on webhook-id; none is skipped). Progress is also the run's
 * memo and the answer of webhookReplayProgressQuery, for the Temporal UI.
 */
export async function webhookReplayWorkflow(input: WebhookReplayInput): Promise<WebhookReplayProgress> {
  let progress: WebhookReplayProgress | null = input.progress ?? null;
  const batchesPerRunMax = input.batchesPerRunMax ?? WEBHOOK_REPLAY_LIMITS.batchesPerRunMax;
  setHandler(webhookReplayProgressQuery, () => progress);
  for (let batches = 0; ; batches += 1) {
    progress = await sendWebhookReplayBatch({ replayId: input.replayId });
    upsertMemo({
      status: progress.status,
      events_total: progress.eventsTotal,
      events_sent: progress.eventsSent,
      events_failed: progress.eventsFailed,
    });
    if (progress.status !== 'running') return progress;
    if (workflowInfo().continueAsNewSuggested || batches + 1 >= batchesPerRunMax) {
      return continueAsNew<typeof webhookReplayWorkflow>({ ...input, progress });
    }
  }
}
