import { errors } from '../errors';
import { getEvent } from '../events/contract';
import { retentionStart } from '../events/contract';
import { enqueueTemporalCommand } from '../platform/temporalCommands';
import type { Op, Outcome } from '../services';
import { replayCommand, resendCommand } from './commands';
import { insertReplay, lockReplay, progressOf, replayView } from './replayRepo';
import type { ReplayWebhookBody, ResendWebhookBody, WebhookReplayView } from './replaySchemas';
import { beginAttempt, deliveryView, getEndpointAnyState, type DeliveryRow, type EndpointRow } from './repo';
import { ALL_EVENTS, type WebhookDeliveryView } from './schemas';
import { rowOf } from '../assert';

/**
 * Sending events again (SPEC §17): one event to one endpoint (resend), or a range of them (replay). Both
 * reach only the caller's own endpoints with the caller's own events, and never a deleted or disabled one.
 * Each queues its workflow's start in the request's transaction (docs/temporal-road.md): the request never
 * waits on Temporal, a rolled-back one starts nothing, and a drainer starts the workflow once the commit has
 * made what it reads (the attempt row, the replay row) visible and Temporal answers.
 */

function subscribes(endpoint: EndpointRow, type: string): boolean {
  return endpoint.events.includes(ALL_EVENTS) || endpoint.events.includes(type);
}

/** The caller's endpoint, able to receive: 404 for an unknown or stranger's one, 409 for a deleted or disabled one. */
async function activeEndpoint(op: Op, endpointId: string): Promise<EndpointRow> {
  const endpoint = await getEndpointAnyState(op.db, op.organizationId, endpointId);
  if (!endpoint) throw errors.notFound('webhook endpoint', endpointId);
  if (endpoint.deleted) throw errors.invalidState(`The webhook endpoint ${endpointId} is deleted.`);
  if (endpoint.status !== 'enabled')
    throw errors.invalidState(`The webhook endpoint ${endpointId} is disabled: ${endpoint.disabled_reason ?? ''}`.trim());
  return endpoint;
}

/** POST /webhook/{id}/resend: the event once more, signed afresh, with its own webhook-id; answers the attempt row. */
export async function resendEvent(op: Op, endpointId: string, body: ResendWebhookBody): Promise<Outcome<WebhookDeliveryView>> {
  const endpoint = await activeEndpoint(op, endpointId);
  const event = await getEvent(op.db, op.organizationId, body.event_id);
  if (!event) throw errors.notFound('event', body.event_id);
  if (!subscribes(endpoint, event.type)) {
    throw errors.validation([{ param: 'event_id', message: `is a ${event.type} event, which the endpoint does not subscribe to` }]);
  }
  const attemptId = await beginAttempt(op.db, {
    endpointId: endpoint.id,
    organizationId: op.organizationId,
    eventId: event.id,
    eventType: event.type,
    attempt: 1,
  });
  const { rows } = await op.db.query<DeliveryRow>(
    `SELECT id, endpoint_id, event_id, event_type, attempt, outcome, response_status_code, duration_ms, error, created_at
       FROM webhook_deliveries WHERE id = $1`,
    [attemptId],
  );
  const { config, services } = op.deps;
  const delivery = {
    eventId: event.id,
    endpointId: endpoint.id,
    retry: { initialIntervalMs: config.WEBHOOK_RETRY_INITIAL_MS, maxIntervalMs: config.WEBHOOK_RETRY_MAX_MS },
    firstAttemptId: attemptId,
  };
  const command = resendCommand({ taskQueue: services.taskQueue, organizationId: op.organizationId, delivery });
  await enqueueTemporalCommand(op.db, { drainQueue: services.taskQueue, now: op.now }, command);
  return {
    body: deliveryView(rowOf(rows, 'the attempt beginAttempt inserted in this transaction exists')),
    afterCommit: () => op.lifecyclePoke.poke(),
  };
}

/** The replay's range and types, checked against retention and the endpoint's subscriptions. */
function replayScope(op: Op, endpoint: EndpointRow, body: ReplayWebhookBody) {
  const oldest = retentionStart(op.now, op.deps.config.EVENT_RETENTION_DAYS);
  const gte = new Date(body.created_at_gte);
  const lt = body.created_at_lt === undefined || new Date(body.created_at_lt) > op.now ? op.now : new Date(body.created_at_lt);
  if (gte < oldest) {
    throw errors.validation([
      {
        param: 'created_at_gte',
        message: `must lie within the retention period of ${op.deps.config.EVENT_RETENTION_DAYS} days (on or after ${oldest.toISOString()})`,
      },
    ]);
  }
  if (lt <= gte) throw errors.validation([{ param: 'created_at_lt', message: 'must be after created_at_gte and not after now' }]);
  const unsubscribed = (body.types ?? []).filter((type) => !subscribes(endpoint, type));
  if (unsubscribed.length > 0) {
    throw errors.validation([{ param: 'types', message: `the endpoint does not subscribe to ${unsubscribed.join(', ')}` }]);
  }
  const types = body.types ?? (endpoint.events.includes(ALL_EVENTS) ? null : endpoint.events);
  return {
    createdAtGte: body.created_at_gte,
    // An explicit bound keeps its microseconds; an open or future one ends now.
    createdAtLt: lt === op.now ? op.now.toISOString() : body.created_at_lt!,
    types,
  };
}

/** POST /webhook/{id}/replay: records the replay with its events counted and starts its workflow (id = replay id). */
export async function startReplay(op: Op, endpointId: string, body: ReplayWebhookBody): Promise<Outcome<WebhookReplayView>> {
  const endpoint = await activeEndpoint(op, endpointId);
  const scope = replayScope(op, endpoint, body);
  const replay = await insertReplay(op.db, {
    organizationId: op.organizationId,
    endpointId: endpoint.id,
    ...scope,
    failedOnly: body.failed_only,
  }).catch((error: unknown) => {
    if ((error as { constraint?: string }).constraint === 'webhook_replays_one_running') {
      throw errors.invalidState(`A replay of webhook endpoint ${endpointId} is already running; wait for it to finish.`);
    }
    throw error;
  });
  await lockReplay(op.db, replay.id);
  const { taskQueue } = op.deps.services;
  const command = replayCommand({
    taskQueue,
    organizationId: op.organizationId,
    endpointId: endpoint.id,
    eventsTotal: replay.events_total,
    replay: { replayId: replay.id, progress: progressOf(replay) },
  });
  await enqueueTemporalCommand(op.db, { drainQueue: taskQueue, now: op.now }, command);
  return { body: replayView(replay), afterCommit: () => op.lifecyclePoke.poke() };
}
