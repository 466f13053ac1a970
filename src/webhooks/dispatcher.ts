import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { forEachBounded, interruptiblePause } from '../concurrency';
import type { Config } from '../config';
import { withTransaction, type Pool } from '../db/pool';
import { OrganizationIdKey } from '../platform/searchAttributes';
import { WEBHOOK_DELIVERY_WORKFLOW_TYPE, webhookDeliveryWorkflowId, type WebhookDeliveryInput } from './workflowContract';
import { WEBHOOK_LIMITS } from './limits';
import { claimUndispatchedEvents, markDispatched, subscriptionsFor, type Subscription } from './repo';

/**
 * The outbox dispatcher (SPEC §12). Features only call `recordEvent` in their own transactions; this loop,
 * running in every worker process, turns each committed event into one delivery workflow per subscribed
 * endpoint. It claims events with FOR UPDATE SKIP LOCKED, starts the workflows, and marks the events
 * dispatched in that same transaction: a crash before the commit leaves the events to be claimed again, and
 * the deterministic workflow ids make the second start a no-op, so nothing is lost and nothing is doubled.
 */

export interface DispatcherDeps {
  config: Config;
  pool: Pool;
  log: Logger;
  temporal: Client;
  taskQueue: string;
}

async function startDelivery(deps: DispatcherDeps, subscription: Subscription): Promise<void> {
  const input: WebhookDeliveryInput = {
    eventId: subscription.event_id,
    endpointId: subscription.endpoint_id,
    retry: { initialIntervalMs: deps.config.WEBHOOK_RETRY_INITIAL_MS, maxIntervalMs: deps.config.WEBHOOK_RETRY_MAX_MS },
  };
  try {
    await deps.temporal.workflow.start(WEBHOOK_DELIVERY_WORKFLOW_TYPE, {
      taskQueue: deps.taskQueue,
      workflowId: webhookDeliveryWorkflowId(subscription.event_id, subscription.endpoint_id),
      // Also rejects ids of deliveries that already finished: a re-dispatch never sends an event twice.
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      args: [input],
      typedSearchAttributes: [{ key: OrganizationIdKey, value: subscription.organization_id }],
    });
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
  }
}

/** One pass: claims up to a batch of events and dispatches them. Answers how many events it claimed. */
export async function dispatchPendingEvents(deps: DispatcherDeps): Promise<number> {
  return withTransaction(deps.pool, async (tx) => {
    const events = await claimUndispatchedEvents(tx, WEBHOOK_LIMITS.dispatchBatchMax);
    if (events.length === 0) return 0;
    const eventIds = events.map((event) => event.id);
    const subscriptions = await subscriptionsFor(tx, eventIds);
    await forEachBounded(subscriptions, WEBHOOK_LIMITS.dispatchStartsConcurrentMax, (subscription) => startDelivery(deps, subscription));
    await markDispatched(tx, eventIds);
    return events.length;
  });
}

export interface RunningDispatcher {
  stop(): Promise<void>;
}

/**
 * Polls the outbox every WEBHOOK_DISPATCH_INTERVAL_MS, and at once again while batches come back full.
 * Answers null when WEBHOOK_DISPATCHER=off (e.g. worker processes dedicated to other work).
 */
export function startWebhookDispatcher(deps: DispatcherDeps): RunningDispatcher | null {
  if (deps.config.WEBHOOK_DISPATCHER === 'off') return null;
  let stopped = false;
  const { pause, wake } = interruptiblePause();
  const loop = (async () => {
    while (!stopped) {
      let claimed = 0;
      let failed = false;
      try {
        claimed = await dispatchPendingEvents(deps);
      } catch (error) {
        failed = true;
        deps.log.warn({ err: error }, 'webhook dispatch pass failed; the events stay in the outbox');
      }
      if (stopped) break;
      if (failed) await pause(Math.max(deps.config.WEBHOOK_DISPATCH_INTERVAL_MS, 1_000));
      else if (claimed < WEBHOOK_LIMITS.dispatchBatchMax) await pause(deps.config.WEBHOOK_DISPATCH_INTERVAL_MS);
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake();
      await loop;
    },
  };
}
