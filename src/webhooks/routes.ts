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
];
