import { ActivityFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks';
import { WEBHOOK_INVARIANT, type WebhookDeliveryInput, type WebhookDeliveryResult } from '../src/webhooks/workflowContract';
import { WEBHOOK_LIMITS } from '../src/webhooks/limits';

/**
 * Delivers one event to one endpoint (SPEC §12): at least once, 15 s per attempt, exponential backoff with
 * jitter (the activity sets each jittered delay) for up to 3 days. The attempt decides what an answer means;
 * this workflow only carries the retry schedule across worker restarts.
 */
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  const { deliverWebhookAttempt } = proxyActivities<WebhookActivities>({
    startToCloseTimeout: WEBHOOK_LIMITS.attemptActivityTimeoutMs,
    heartbeatTimeout: WEBHOOK_LIMITS.attemptHeartbeatTimeoutMs,
    scheduleToCloseTimeout: WEBHOOK_LIMITS.retryWindowMs,
    retry: {
      initialInterval: input.retry.initialIntervalMs,
      backoffCoefficient: 2,
      maximumInterval: input.retry.maxIntervalMs,
      // No maximumAttempts: the 3-day window is the budget.
      nonRetryableErrorTypes: [WEBHOOK_INVARIANT],
    },
  });
  try {
    return { outcome: await deliverWebhookAttempt(input) };
  } catch (error) {
    if (error instanceof ActivityFailure && error.cause instanceof TimeoutFailure) return { outcome: 'expired' };
    throw error;
  }
}
