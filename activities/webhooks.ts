import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { withTransaction } from '../src/db/pool';
import { postWebhook, retryDelayMs } from '../src/webhooks/http';
import { ledgerMetrics } from '../src/metrics';
import { WEBHOOK_LIMITS } from '../src/webhooks/limits';
import { beginAttempt, disableEndpoint, finishAttempt, loadDeliveryTarget } from '../src/webhooks/repo';
import { openSecret, signPayload } from '../src/webhooks/signing';
import { checkTargetAtDelivery } from '../src/webhooks/ssrf';
import { ATTEMPT_FAILED, WEBHOOK_INVARIANT, type WebhookDeliveryInput, type WebhookDeliveryOutcome } from '../src/webhooks/contract';
import type { ActivityDeps } from './deps';

function describeError(error: unknown): string {
  const err = error as NodeJS.ErrnoException;
  return [err.code, err.message].filter(Boolean).join(': ') || 'unknown error';
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
      const target = await loadDeliveryTarget(deps.pool, input.eventId, input.endpointId);
      // Deleted or disabled since dispatch (or while retrying): nothing is sent, nothing is recorded.
      if (!target || target.endpoint.deleted || target.endpoint.status !== 'enabled') return 'endpoint_inactive';
      const { event, endpoint } = target;
      const sealedSecret = endpoint.secret_sealed;
      if (sealedSecret === null) return 'endpoint_inactive';
      if (event.organization_id !== endpoint.organization_id) {
        // The dispatcher pairs events only with their own organization's endpoints; anything else is a bug.
        throw ApplicationFailure.nonRetryable(
          `event ${event.id} and endpoint ${endpoint.id} belong to different organizations`,
          WEBHOOK_INVARIANT,
        );
      }
      const url = new URL(endpoint.url);
      const body = JSON.stringify({ id: event.id, type: event.type, created_at: event.created_at.toISOString(), data: event.data });
      const attemptId = await beginAttempt(deps.pool, {
        endpointId: endpoint.id,
        organizationId: endpoint.organization_id,
        eventId: event.id,
        eventType: event.type,
        attempt,
        id: attempt === 1 ? input.firstAttemptId : undefined,
      });
      // Heartbeats tell Temporal this attempt is alive; if its worker dies, the heartbeat timeout (not the
      // much longer start-to-close) hands the retry to another worker.
      const context = Context.current();
      const heartbeat = setInterval(() => context.heartbeat(), WEBHOOK_LIMITS.attemptHeartbeatMs);
      const started = performance.now();
      let status: number | null = null;
      let failure: string | null = null;
      try {
        const check = await checkTargetAtDelivery(deps.config, url);
        if (!check.ok) {
          await finishAttempt(deps.pool, attemptId, {
            outcome: 'refused',
            responseStatusCode: null,
            durationMs: performance.now() - started,
            error: check.reason,
          });
          ledgerMetrics.webhookDeliveriesTotal.inc({ outcome: 'refused' });
          deps.log.warn({ endpoint_id: endpoint.id, event_id: event.id, reason: check.reason }, 'webhook target refused');
          return 'refused';
        }
        // The secret is read here, inside the activity, so it never enters workflow history.
        const secret = openSecret(sealedSecret, deps.config.WEBHOOK_SECRET_KEY);
        const headers = signPayload(secret, event.id, Math.floor(Date.now() / 1000), body);
        status = await postWebhook(url, body, { ...headers }, { pinned: check.addresses, signal: context.cancellationSignal });
      } catch (error) {
        failure = describeError(error);
      } finally {
        clearInterval(heartbeat);
      }
      const durationMs = performance.now() - started;

      if (status !== null && status >= 200 && status < 300) {
        await finishAttempt(deps.pool, attemptId, { outcome: 'succeeded', responseStatusCode: status, durationMs, error: null });
        ledgerMetrics.webhookDeliveriesTotal.inc({ outcome: 'succeeded' });
        return 'delivered';
      }
      if (status === 410) {
        // 410 Gone is the receiver saying "stop": the endpoint is disabled with the attempt that saw it.
        await withTransaction(deps.pool, async (tx) => {
          await finishAttempt(tx, attemptId, {
            outcome: 'failed',
            responseStatusCode: 410,
            durationMs,
            error: 'the endpoint answered 410 Gone; it is now disabled',
          });
          await disableEndpoint(tx, endpoint.id, 'The endpoint answered 410 Gone.');
        });
        ledgerMetrics.webhookDeliveriesTotal.inc({ outcome: 'endpoint_disabled' });
        deps.log.info({ endpoint_id: endpoint.id, event_id: event.id }, 'webhook endpoint disabled after 410');
        return 'endpoint_disabled';
      }
      const error = failure ?? `the endpoint answered ${status}`;
      await finishAttempt(deps.pool, attemptId, { outcome: 'failed', responseStatusCode: status, durationMs, error });
      ledgerMetrics.webhookDeliveriesTotal.inc({ outcome: 'failed' });
      throw ApplicationFailure.create({
        type: ATTEMPT_FAILED,
        message: `attempt ${attempt} failed: ${error}`,
        // Temporal's own retry intervals carry no jitter; this delay replaces them with jittered ones.
        nextRetryDelay: retryDelayMs(attempt, input.retry),
      });
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
