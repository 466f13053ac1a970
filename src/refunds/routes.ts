import { defineRoute, retrieveRoute } from '../http/edge';
import type { Queryable } from '../db/pool';
import { ApiError, errors } from '../http/errors';
import { listEnvelope } from '../http/zod';
import { newId } from '../ids';
import { recordEvent } from '../events/outbox';
import { settlementDateOf } from '../ledger/dates';
import { afterCommitStart } from '../ledger/lifecycle';
import * as ledger from '../ledger/repo';
import { paged } from '../ledger/routes';
import { idParams } from '../ledger/schemas';
import { insertRefund, getRefund, intentReturnedCents, listRefunds, renderRefund } from './repo';
import { createRefundBody, refundListQuery, refundSchema, type CreateRefundBody } from './schemas';

/**
 * The intent a refund or dispute draws on, locked FOR UPDATE until the request's transaction ends so
 * concurrent refunds and disputes of one intent run one at a time, with what it has left. Only approved
 * cash_in intents hold money that can go back; the database guard checks the same again on insert.
 */
export async function lockReturnableIntent(db: Queryable, organizationId: string, intentId: string, action: 'refunded' | 'disputed') {
  const intent = await ledger.getIntentRow(db, organizationId, intentId, true);
  if (!intent) throw errors.resourceMissing('intent_id', intentId);
  if (intent.direction !== 'cash_in') {
    throw errors.invalidState(`Only cash_in intents can be ${action}; intent ${intent.id} is a cash_out.`);
  }
  if (intent.status !== 'approved') {
    throw errors.invalidState(`Only approved intents can be ${action}; intent ${intent.id} is ${intent.status}.`);
  }
  const leftCents = intent.amount_cents - (await intentReturnedCents(db, intent.id));
  return { intent, leftCents };
}

const amountTooLarge = (leftCents: number) =>
  new ApiError(400, 'invalid_request_error', 'amount_too_large',
    `The amount exceeds what is left of the intent: at most ${leftCents} cents can still be refunded.`, { param: 'amount' });

export const refundRoutes = [
  defineRoute({
    method: 'post',
    path: '/refund',
    tag: 'Refunds',
    summary: 'Refund an approved cash_in intent, fully or partly',
    description: `Returns money to the user of an approved \`cash_in\` intent. \`amount\` (cents) may be any part of what is left: the intent's amount minus earlier refunds and minus disputes not won; omitted, it is all that is left. The total returned never exceeds the intent, also under concurrent requests (the intent is locked while a refund is recorded, and the database checks the sum again).
Records a cash_out Transaction of type \`refund\` (\`source_id\` = the refund) in \`pending\`; it lives the cash_out lifecycle and is collected in the next settlement window. Events: refund.created, transaction.created.
Errors: 400 \`resource_missing\` (unknown intent), 409 \`invalid_state\` (not an approved cash_in intent, or nothing left), 400 \`amount_too_large\` (more than is left).`,
    body: createRefundBody,
    errorStatuses: [409],
    response: { schema: refundSchema, description: 'The refund with its transaction.' },
    async handler(ctx) {
      const { caller, db, now, deps } = ctx;
      const input = ctx.body as CreateRefundBody;
      const orgId = caller.organization.id;
      const { intent, leftCents } = await lockReturnableIntent(db, orgId, input.intent_id, 'refunded');
      if (leftCents <= 0) throw errors.invalidState(`Intent ${intent.id} has nothing left to refund.`);
      const amountCents = input.amount ?? leftCents;
      if (amountCents > leftCents) throw amountTooLarge(leftCents);
      const refund = await insertRefund(db, {
        id: newId('refund'), organization_id: orgId, intent_id: intent.id, account_id: intent.account_id, amount_cents: amountCents, created_at: now,
      });
      const txn = await ledger.insertTransaction(db, {
        organizationId: orgId,
        accountId: intent.account_id,
        direction: 'cash_out',
        type: 'refund',
        sourceId: refund.id,
        amountCents,
        date: settlementDateOf(now, deps.config.SETTLEMENT_CUTOFF),
        createdAt: now,
      });
      const body = renderRefund(refund, ledger.renderTransaction(txn));
      await recordEvent(db, orgId, 'refund.created', body, now);
      return { body, afterCommit: afterCommitStart(deps.services.temporal, deps.services.taskQueue, deps.log, deps.pool, [txn]) };
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
    query: refundListQuery,
    response: { schema: listEnvelope(refundSchema).openapi('RefundList'), description: 'A page of refunds.' },
    async handler({ caller, db, query }) {
      return { body: await paged(() => listRefunds(db, caller.organization.id, query)) };
    },
  }),
];
