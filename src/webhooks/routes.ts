import { defineRoute, retrieveRoute } from '../http/edge';
import { errors } from '../http/errors';
import { listEnvelope, pageQuery } from '../http/zod';
import {
  createEndpoint, CursorError, deleteEndpoint, deliveryView, EndpointLimitError, endpointView, getEndpoint, listDeliveries, listEndpoints,
} from './repo';
import {
  ALL_EVENTS, createdWebhookEndpoint, createWebhookBody, deletedWebhookEndpoint, WEBHOOK_LIMITS, webhookDelivery, webhookEndpoint, webhookIdParams,
} from './schemas';
import { generateSecret, sealSecret } from './signing';
import { checkTargetAtRegistration } from './ssrf';

function withCursorErrors<T>(work: () => Promise<T>): Promise<T> {
  return work().catch((error: unknown) => {
    if (error instanceof CursorError) throw errors.validation([{ param: 'cursor', message: 'is not a cursor of this list' }]);
    throw error;
  });
}

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
    async handler({ caller, db, body, deps }) {
      const refusal = await checkTargetAtRegistration(deps.config, body.url);
      if (refusal) throw errors.validation([{ param: 'url', message: refusal }]);
      const secret = generateSecret();
      try {
        const row = await createEndpoint(db, {
          organizationId: caller.organization.id,
          url: body.url,
          events: body.events ?? [ALL_EVENTS],
          secretSealed: sealSecret(secret, deps.config.WEBHOOK_SECRET_KEY),
        });
        return { body: { ...endpointView(row), secret } };
      } catch (error) {
        if (error instanceof EndpointLimitError) {
          throw errors.invalidState(`An organization may have at most ${WEBHOOK_LIMITS.endpointsPerOrganizationMax} webhook endpoints; delete one first.`);
        }
        throw error;
      }
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
      const found = await withCursorErrors(() => listEndpoints(db, caller.organization.id, query));
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
      const found = await withCursorErrors(() => listDeliveries(db, caller.organization.id, endpoint.id, query));
      return { body: { ...found, data: found.data.map(deliveryView) } };
    },
  }),
];
