import { defineRoute, retrieveRoute } from '../http/route';
import { renderPage } from '../db/paging';
import { eventView, getEvent, listEvents } from './repo';
import { eventIdParams, eventList, eventListQuery, eventSchema } from './schemas';

const TAG = 'Events';

export const eventRoutes = [
  defineRoute({
    method: 'get',
    path: '/event',
    tag: TAG,
    operationId: 'listEvents',
    summary: 'List events',
    description:
      'Every event of the last `EVENT_RETENTION_DAYS` (30 by default), newest first, exactly as webhooks deliver it. Filters combine ' +
      'with AND: `type` (one type or a comma-separated list), `created_at.gte` / `created_at.lt`, and `object_id` (the id of the ' +
      'resource the event is about, `data.id`).',
    query: eventListQuery,
    response: { schema: eventList, description: 'A page of events.' },
    errorStatuses: [400],
    async handler({ caller, db, query }) {
      return { body: await renderPage(await listEvents(db, caller.organization.id, query), (rows) => rows.map(eventView)) };
    },
  }),
  retrieveRoute({
    path: '/event/{id}',
    tag: TAG,
    operationId: 'retrieveEvent',
    summary: 'Retrieve an event',
    description: 'The event exactly as webhooks deliver it, while it is within the retention period.',
    params: eventIdParams,
    response: { schema: eventSchema, description: 'The event.' },
    resource: 'event',
    find: async (db, organizationId, id) => {
      const row = await getEvent(db, organizationId, id);
      return row && eventView(row);
    },
  }),
];
