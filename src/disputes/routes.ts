import { defineRoute, retrieveRoute } from '../http/edge';
import { errors } from '../http/errors';
import { listEnvelope } from '../http/zod';
import { newId } from '../ids';
import { recordEvent } from '../events/outbox';
import { settlementDateOf } from '../ledger/dates';
import { afterCommitStart } from '../ledger/lifecycle';
import * as ledger from '../ledger/repo';
import { paged } from '../ledger/routes';
import { idParams } from '../ledger/schemas';
import { renderLedgerTransactions } from '../refunds/repo';
import { lockReturnableIntent } from '../refunds/routes';
import { disputeOfIntent, getDispute, getDisputeRow, insertDispute, listDisputes, renderDispute, resolveDispute } from './repo';
import {
  createDisputeBody, disputeListQuery, disputeSchema, resolveDisputeBody, type CreateDisputeBody, type ResolveDisputeBody,
} from './schemas';

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
    async handler(ctx) {
      const { caller, db, now, deps } = ctx;
      const input = ctx.body as CreateDisputeBody;
      const orgId = caller.organization.id;
      const { intent, leftCents } = await lockReturnableIntent(db, orgId, input.intent_id, 'disputed');
      const existing = await disputeOfIntent(db, intent.id);
      if (existing) throw errors.invalidState(`Intent ${intent.id} is already disputed (${existing.id}, ${existing.status}).`);
      if (leftCents <= 0) throw errors.invalidState(`Intent ${intent.id} was fully refunded; there is nothing left to dispute.`);
      const dispute = await insertDispute(db, {
        id: newId('dispute'), organization_id: orgId, intent_id: intent.id, account_id: intent.account_id, amount_cents: leftCents,
        code: input.code, created_at: now,
      });
      const txn = await ledger.insertTransaction(db, {
        organizationId: orgId, accountId: intent.account_id, direction: 'cash_out', type: 'dispute', sourceId: dispute.id,
        amountCents: leftCents, date: settlementDateOf(now, deps.config.SETTLEMENT_CUTOFF), createdAt: now,
      });
      const body = renderDispute(dispute, [ledger.renderTransaction(txn)]);
      await recordEvent(db, orgId, 'dispute.created', body, now);
      return { body, afterCommit: afterCommitStart(deps.services.temporal, deps.services.taskQueue, deps.log, deps.pool, [txn]) };
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
    async handler(ctx) {
      const { caller, db, params, now, deps } = ctx;
      const input = ctx.body as ResolveDisputeBody;
      const orgId = caller.organization.id;
      const open = await getDisputeRow(db, orgId, params.id, true);
      if (!open) throw errors.notFound('dispute', params.id);
      if (open.status !== 'created') throw errors.invalidState(`Dispute ${open.id} was already ${open.status}; only a created dispute can be resolved.`);
      const resolved = await resolveDispute(db, open.id, input.result, now);
      const created: ledger.TransactionRow[] = [];
      if (resolved.status === 'won') {
        created.push(await ledger.insertTransaction(db, {
          organizationId: orgId, accountId: resolved.account_id, direction: 'cash_in', type: 'dispute', sourceId: resolved.id,
          amountCents: resolved.amount_cents, date: settlementDateOf(now, deps.config.SETTLEMENT_CUTOFF), createdAt: now,
        }));
      }
      const txns = (await ledger.transactionsOfSources(db, orgId, [resolved.id], 'dispute')).get(resolved.id) ?? [];
      const body = renderDispute(resolved, await renderLedgerTransactions(db, txns));
      await recordEvent(db, orgId, 'dispute.resolved', body, now);
      return { body, afterCommit: afterCommitStart(deps.services.temporal, deps.services.taskQueue, deps.log, deps.pool, created) };
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
      return { body: await paged(() => listDisputes(db, caller.organization.id, query)) };
    },
  }),
];
