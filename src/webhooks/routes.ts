import { defineRoute, retrieveRoute } from '../http/route';
import { errors } from '../errors';
import { listEnvelope, pageQuery } from '../zod';
import { deleteEndpoint, deliveryView, endpointView, getEndpoint, listDeliveries, listEndpoints } from './repo';
import {
  createdWebhookEndpoint,
  createWebhookBody,
  deletedWebhookEndpoint,
  webhookDelivery,
  webhookEndpoint,
  webhookIdParams,
} from './schemas';
import { registerEndpoint } from './service';
import { resendEvent, startReplay } from './redelivery';
import { getReplay, replayView } from './replayRepo';
import { replayWebhookBody, resendWebhookBody, webhookReplay, webhookReplayParams } from './replaySchemas';

const TAG = 'Webhooks';

export const webhookRoutes = [
  defineRoute({
    method: 'post',
    path: '/webhook',
    tag: TAG,
    summary: 'Register a webhook endpoint',
    description:
      'Events of the chosen types (all when `events` is omitted) are POSTed to `url`, signed per Standard Webhooks with the ' +
      '`secret` returned here and only here. In production, URLs on loopback, private, link-local or metadata addresses are refused.',
    body: createWebhookBody,
    response: { schema: createdWebhookEndpoint, description: 'The endpoint, with its signing secret (shown once).' },
    errorStatuses: [400, 409],
    idempotency: { sealsAnswer: true },
    async handler({ op, body }) {
      return registerEndpoint(op, body);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/webhook',
    tag: TAG,
    summary: 'List webhook endpoints',
    description: 'Newest first. Secrets are never listed.',
    query: pageQuery,
    response: { schema: listEnvelope(webhookEndpoint).openapi('WebhookEndpointList'), description: 'A page of endpoints.' },
    errorStatuses: [400],
    async handler({ caller, db, query }) {
      const found = await listEndpoints(db, caller.organization.id, query);
      return { body: { ...found, data: found.data.map(endpointView) } };
    },
  }),
  retrieveRoute({
    path: '/webhook/{id}',
    tag: TAG,
    summary: 'Retrieve a webhook endpoint',
    description: 'The secret is not returned; it was shown once, when the endpoint was created.',
    params: webhookIdParams,
    response: { schema: webhookEndpoint, description: 'The endpoint.' },
    resource: 'webhook endpoint',
    find: async (db, organizationId, id) => {
      const row = await getEndpoint(db, organizationId, id);
      return row && endpointView(row);
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/webhook/{id}',
    tag: TAG,
    summary: 'Delete a webhook endpoint',
    description: 'Stops every delivery to it, including retries in progress. Its secret is erased.',
    params: webhookIdParams,
    response: { schema: deletedWebhookEndpoint, description: 'The endpoint is deleted.' },
    errorStatuses: [404],
    async handler({ caller, db, params }) {
      if (!(await deleteEndpoint(db, caller.organization.id, params.id))) throw errors.notFound('webhook endpoint', params.id);
      return { body: { id: params.id, deleted: true } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/webhook/{id}/deliveries',
    tag: TAG,
    summary: "List a webhook endpoint's delivery attempts",
    description: 'Every attempt, newest first: its outcome, the HTTP status the endpoint answered, how long it took and any error.',
    params: webhookIdParams,
    query: pageQuery,
    response: { schema: listEnvelope(webhookDelivery).openapi('WebhookDeliveryAttemptList'), description: 'A page of attempts.' },
    errorStatuses: [400, 404],
    async handler({ caller, db, params, query }) {
      const endpoint = await getEndpoint(db, caller.organization.id, params.id);
      if (!endpoint) throw errors.notFound('webhook endpoint', params.id);
      const found = await listDeliveries(db, caller.organization.id, endpoint.id, query);
      return { body: { ...found, data: found.data.map(deliveryView) } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/webhook/{id}/resend',
    tag: TAG,
    summary: 'Send one event to a webhook endpoint again',
    description:
      'The event goes once more to this endpoint (retried like any delivery until a 2xx), signed afresh, with the same `webhook-id` ' +
      'as every earlier delivery of it, so a receiver that deduplicates on it sees one event. Answers the attempt, `pending` until ' +
      'it is sent; `GET /webhook/{id}/deliveries` shows its outcome. An event type the endpoint does not subscribe to is a 400; a ' +
      'disabled or deleted endpoint a 409 `invalid_state`.',
    params: webhookIdParams,
    body: resendWebhookBody,
    response: { schema: webhookDelivery, description: 'The delivery attempt, pending.' },
    errorStatuses: [400, 404, 409],
    async handler({ op, params, body }) {
      return resendEvent(op, params.id, body);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/webhook/{id}/replay',
    tag: TAG,
    summary: 'Replay a range of events to a webhook endpoint',
    description:
      'Sends again, oldest first, every event of the range that the endpoint subscribes to (or only `types`; with `failed_only`, only ' +
      'events no delivery of which to this endpoint succeeded), each signed afresh with its event id as `webhook-id`. One durable ' +
      'Temporal workflow per replay (workflow id = replay id); follow it with `GET /webhook/{id}/replay/{replay_id}`. The range must ' +
      'lie within the retention period (400). One replay per endpoint runs at a time, and a disabled or deleted endpoint takes none ' +
      '(409 `invalid_state`). A POST with the same body within 24 hours is a duplicate (SPEC §5): send a new `X-Idempotency-Key` to ' +
      'replay the same range again.',
    params: webhookIdParams,
    body: replayWebhookBody,
    response: { schema: webhookReplay, description: 'The replay, running.' },
    errorStatuses: [400, 404, 409],
    async handler({ op, params, body }) {
      return startReplay(op, params.id, body);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/webhook/{id}/replay/{replay_id}',
    tag: TAG,
    summary: "A webhook replay's progress",
    description: 'Its status and how many of its events were sent, committed after every batch.',
    params: webhookReplayParams,
    response: { schema: webhookReplay, description: 'The replay.' },
    errorStatuses: [404],
    async handler({ caller, db, params }) {
      const row = await getReplay(db, { organizationId: caller.organization.id, endpointId: params.id, id: params.replay_id });
      if (!row) throw errors.notFound('webhook replay', params.replay_id);
      return { body: replayView(row) };
    },
  }),
];
