import { defineRoute, retrieveRoute } from '../http/route';
import { idParams } from '../ledger/contract';
import { listEnvelope } from '../zod';
import { getRefund, listRefunds } from './repo';
import { createRefundBody, refundListQuery, refundSchema } from './schemas';
import { createRefund } from './service';

export const refundRoutes = [
  defineRoute({
    method: 'post',
    path: '/refund',
    tag: 'Refunds',
    summary: 'Refund an approved cash_in intent, fully or partly',
    description: `Returns money to the user of an approved \`cash_in\` intent. \`amount\` (cents) may be any part of what is left: the intent's amount minus earlier refunds and minus disputes not won; omitted, it is all that is left. The total returned never exceeds the intent, also under concurrent requests (the intent is locked while a refund is recorded, and the database checks the sum again).
Records a cash_out Transaction of type \`refund\` (\`source_id\` = the refund) in \`pending\`; it lives the cash_out lifecycle and is collected in the next settlement window. Events: refund.created, transaction.created. \`metadata\` (optional) is the operator's own key/value pairs, returned on the refund and filterable on GET /refund and GET /transaction.
Errors: 400 \`resource_missing\` (unknown intent), 409 \`invalid_state\` (not an approved cash_in intent, or nothing left), 400 \`amount_too_large\` (more than is left).`,
    body: createRefundBody,
    errorStatuses: [409],
    response: { schema: refundSchema, description: 'The refund with its transaction.' },
    async handler({ op, body }) {
      return createRefund(op, body);
    },
  }),
  retrieveRoute({
    path: '/refund/{id}',
    tag: 'Refunds',
    summary: 'Retrieve a refund',
    params: idParams,
    response: { schema: refundSchema, description: 'The refund with its transaction as it is now.' },
    resource: 'refund',
    find: getRefund,
  }),
  defineRoute({
    method: 'get',
    path: '/refund',
    tag: 'Refunds',
    summary: 'List refunds, newest first',
    description: '`metadata[KEY]=VALUE` keeps refunds whose metadata holds exactly that value (several keys: all of them).',
    query: refundListQuery,
    response: { schema: listEnvelope(refundSchema).openapi('RefundList'), description: 'A page of refunds.' },
    async handler({ caller, db, query }) {
      return { body: await listRefunds(db, caller.organization.id, query) };
    },
  }),
];
