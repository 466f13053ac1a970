import { defineRoute, retrieveRoute } from '../http/route';
import { idParams } from '../ledger/contract';
import { listEnvelope } from '../zod';
import { getDispute, listDisputes } from './repo';
import { createDisputeBody, disputeListQuery, disputeSchema, resolveDisputeBody } from './schemas';
import { openDispute, resolveDispute } from './service';

export const disputeRoutes = [
  defineRoute({
    method: 'post',
    path: '/simulate/dispute',
    tag: 'Simulation',
    summary: 'The network disputes a payment',
    description: `Simulates a chargeback or returned payment of an approved \`cash_in\` intent. The dispute takes back what is left of the intent (its amount minus refunds) and records a cash_out Transaction of type \`dispute\` (\`source_id\` = the dispute) that settles like any other. One dispute per intent.
Events: dispute.created, transaction.created. Errors: 400 \`resource_missing\` (unknown intent), 409 \`invalid_state\` (not an approved cash_in, already disputed, or fully refunded).`,
    sandboxOnly: true,
    body: createDisputeBody,
    errorStatuses: [404, 409],
    response: { schema: disputeSchema, description: 'The dispute, `created`, with its cash_out transaction.' },
    async handler({ op, body }) {
      return openDispute(op, body);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/simulate/dispute/{id}/resolve',
    tag: 'Simulation',
    summary: 'The network decides a dispute',
    description: `\`won\`: the funds come back with a cash_in Transaction of type \`dispute\` (pending until the network confirms it, like any deposit). \`lost\`: nothing moves. Events: dispute.resolved (and transaction.created when won). 409 \`invalid_state\` unless the dispute is \`created\`.`,
    sandboxOnly: true,
    params: idParams,
    body: resolveDisputeBody,
    errorStatuses: [404, 409],
    response: { schema: disputeSchema, description: 'The dispute, now won or lost.' },
    async handler({ op, params, body }) {
      return resolveDispute(op, params.id, body);
    },
  }),
  retrieveRoute({
    path: '/dispute/{id}',
    tag: 'Disputes',
    summary: 'Retrieve a dispute',
    params: idParams,
    response: { schema: disputeSchema, description: 'The dispute with its transactions.' },
    resource: 'dispute',
    find: getDispute,
  }),
  defineRoute({
    method: 'get',
    path: '/dispute',
    tag: 'Disputes',
    summary: 'List disputes, newest first',
    description: 'Filters: `status`, `intent_id`.',
    query: disputeListQuery,
    response: { schema: listEnvelope(disputeSchema).openapi('DisputeList'), description: 'A page of disputes.' },
    async handler({ caller, db, query }) {
      return { body: await listDisputes(db, caller.organization.id, query) };
    },
  }),
];
