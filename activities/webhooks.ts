import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { withTransaction } from '../src/db/pool';
import { postWebhook, retryDelayMs } from '../src/webhooks/http';
import { ledgerMetrics } from '../src/metrics';
import { WEBHOOK_LIMITS } from '../src/webhooks/limits';
import { beginAttempt, disableEndpoint, finishAttempt, loadDeliveryTarget, type DeliveryTarget } from '../src/webhooks/repo';
import { openSecret, signPayload } from '../src/webhooks/signing';
import { checkTargetAtDelivery } from '../src/webhooks/ssrf';
import {
  ATTEMPT_FAILED,
  WEBHOOK_INVARIANT,
  type WebhookDeliveryInput,
  type WebhookDeliveryOutcome,
} from '../src/webhooks/workflowContract';
import type { ActivityDeps } from './deps';

function describeError(error: unknown): string {
  const err = error as NodeJS.ErrnoException;
  return [err.code, err.message].filter(Boolean).join(': ') || 'unknown error';
}

/** An endpoint that may still receive, with its event and sealed secret; null when nothing is to be sent. */
interface ActiveTarget extends DeliveryTarget {
  sealedSecret: string;
}

/** What one attempt came to before it is recorded. */
type AttemptResult =
  | { kind: 'refused'; reason: string; durationMs: number }
  | { kind: 'answered'; status: number | null; failure: string | null; durationMs: number };

async function loadActiveTarget(deps: ActivityDeps, input: WebhookDeliveryInput): Promise<ActiveTarget | null> {
  const target = await loadDeliveryTarget(deps.pool, input.eventId, input.endpointId);
  // Deleted or disabled since dispatch (or while retrying): nothing is sent, nothing is recorded.
  if (!target || target.endpoint.deleted || target.endpoint.status !== 'enabled') return null;
  const sealedSecret = target.endpoint.secret_sealed;
  if (sealedSecret === null) return null;
  const { event, endpoint } = target;
  if (event.organization_id !== endpoint.organization_id) {
    // The dispatcher pairs events only with their own organization's endpoints; anything else is a bug.
    throw ApplicationFailure.nonRetryable(
      `event ${event.id} and endpoint ${endpoint.id} belong to different organizations`,
      WEBHOOK_INVARIANT,
    );
  }
  return { ...target, sealedSecret };
}

/**
 * Checks the target's addresses after resolving it, signs and POSTs to the checked addresses only.
 * Heartbeats tell Temporal the attempt is alive; if its worker dies, the heartbeat timeout (not the much
 * longer start-to-close) hands the retry to another worker.
 */
async function sendAttempt(deps: ActivityDeps, target: ActiveTarget): Promise<AttemptResult> {
  const { event } = target;
  const url = new URL(target.endpoint.url);
  const body = JSON.stringify({ id: event.id, type: event.type, created_at: event.created_at.toISOString(), data: event.data });
  const context = Context.current();
  const heartbeat = setInterval(() => context.heartbeat(), WEBHOOK_LIMITS.attemptHeartbeatMs);
  const started = performance.now();
  const elapsedMs = () => performance.now() - started;
  try {
    const check = await checkTargetAtDelivery(deps.config, url);
    if (!check.ok) return { kind: 'refused', reason: check.reason, durationMs: elapsedMs() };
    // The secret is read here, inside the activity, so it never enters workflow history.
    const secret = openSecret(target.sealedSecret, deps.config.WEBHOOK_SECRET_KEY);
    const headers = signPayload(secret, event.id, Math.floor(Date.now() / 1000), body);
    const status = await postWebhook(url, body, { ...headers }, { pinned: check.addresses, signal: context.cancellationSignal });
    return { kind: 'answered', status, failure: null, durationMs: elapsedMs() };
  } catch (error) {
    return { kind: 'answered', status: null, failure: describeError(error), durationMs: elapsedMs() };
  } finally {
    clearInterval(heartbeat);
  }
}

/** Records the attempt's outcome; a failure that should be retried is thrown with a jittered delay. */
async function recordAttempt(
  deps: ActivityDeps,
  delivery: { target: ActiveTarget; attemptId: string; attempt: number; input: WebhookDeliveryInput },
  result: AttemptResult,
): Promise<WebhookDeliveryOutcome> {
  const { target, attemptId, attempt } = delivery;
  const ids = { endpoint_id: target.endpoint.id, event_id: target.event.id };
  const { durationMs } = result;
  if (result.kind === 'refused') {
    await finishAttempt(deps.pool, attemptId, { outcome: 'refused', responseStatusCode: null, durationMs, error: result.reason });
    ledgerMetrics.webhookDeliveriesTotal.inc({ outcome: 'refused' });
    deps.log.warn({ ...ids, reason: result.reason }, 'webhook target refused');
    return 'refused';
  }
  const { status, failure } = result;
  if (status !== null && status >= 200 && status < 300) {
    await finishAttempt(deps.pool, attemptId, { outcome: 'succeeded', responseStatusCode: status, durationMs, error: null });
    ledgerMetrics.webhookDeliveriesTotal.inc({ outcome: 'succeeded' });
    return 'delivered';
  }
  if (status === 410) {
    // 410 Gone is the receiver saying "stop": the endpoint is disabled with the attempt that saw it.
    await withTransaction(deps.pool, async (tx) => {
      const error = 'the endpoint answered 410 Gone; it is now disabled';
      await finishAttempt(tx, attemptId, { outcome: 'failed', responseStatusCode: 410, durationMs, error });
      await disableEndpoint(tx, target.endpoint.id, 'The endpoint answered 410 Gone.');
    });
    ledgerMetrics.webhookDeliveriesTotal.inc({ outcome: 'endpoint_disabled' });
    deps.log.info(ids, 'webhook endpoint disabled after 410');
    return 'endpoint_disabled';
  }
  const error = failure ?? `the endpoint answered ${status}`;
  await finishAttempt(deps.pool, attemptId, { outcome: 'failed', responseStatusCode: status, durationMs, error });
  ledgerMetrics.webhookDeliveriesTotal.inc({ outcome: 'failed' });
  throw ApplicationFailure.create({
    type: ATTEMPT_FAILED,
    message: `attempt ${attempt} failed: ${error}`,
    // Temporal's own retry intervals carry no jitter; this delay replaces them with jittered ones.
    nextRetryDelay: retryDelayMs(attempt, delivery.input.retry),
  });
}

export function createWebhookActivities(deps: ActivityDeps) {
  return {
    /**
     * One HTTP attempt of one event to one endpoint. Every attempt leaves a row in webhook_deliveries,
     * written before the request goes out and completed with its outcome, so GET /webhook/{id}/deliveries
     * shows it even when the worker dies halfway.
     */
    async deliverWebhookAttempt(input: WebhookDeliveryInput): Promise<WebhookDeliveryOutcome> {
      const { attempt } = Context.current().info;
      const target = await loadActiveTarget(deps, input);
      if (!target) return 'endpoint_inactive';
      const attemptId = await beginAttempt(deps.pool, {
        endpointId: target.endpoint.id,
        organizationId: target.endpoint.organization_id,
        eventId: target.event.id,
        eventType: target.event.type,
        attempt,
        id: attempt === 1 ? input.firstAttemptId : undefined,
      });
      const result = await sendAttempt(deps, target);
      return recordAttempt(deps, { target, attemptId, attempt, input }, result);
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
