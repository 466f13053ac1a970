import { errors } from '../errors';
import { recordEvent } from '../outbox';
import { newId } from '../ids';
import { getIntentRow } from '../ledger/contract';
import { recordTransaction } from '../ledger/contract';
import { adjustLimitUse } from '../limits/contract';
import { transactionsOfSources } from '../ledger/contract';
import { lockReturnableIntent } from '../refunds/contract';
import type { Op, Outcome } from '../services';
import { disputeOfIntent, getDisputeRow, insertDispute, renderDispute, resolveDispute as markResolved } from './repo';
import type { CreateDisputeBody, Dispute, ResolveDisputeBody } from './schemas';

/** Sandbox network disputes (SPEC §11): opening one takes back what is left of an intent; winning one returns it. */

export async function openDispute(op: Op, input: CreateDisputeBody): Promise<Outcome<Dispute>> {
  const { intent, leftCents } = await lockReturnableIntent(op, input.intent_id, 'disputed');
  const existing = await disputeOfIntent(op.db, intent.id);
  if (existing) throw errors.invalidState(`Intent ${intent.id} is already disputed (${existing.id}, ${existing.status}).`);
  if (leftCents <= 0) throw errors.invalidState(`Intent ${intent.id} was fully refunded; there is nothing left to dispute.`);
  // A deposit the network took back does not count as used (SPEC §26); winning the dispute counts it again.
  await adjustLimitUse(op.db, { userId: intent.user_id, direction: 'cash_in', deltaCents: -leftCents, approvedAt: intent.created_at });
  const dispute = await insertDispute(op.db, {
    id: newId('dispute'),
    organization_id: op.organizationId,
    intent_id: intent.id,
    account_id: intent.account_id,
    amount_cents: leftCents,
    code: input.code,
    created_at: op.now,
  });
  const { row, afterCommit } = await recordTransaction(op, {
    accountId: intent.account_id,
    direction: 'cash_out',
    type: 'dispute',
    sourceId: dispute.id,
    amountCents: leftCents,
  });
  const body = renderDispute(dispute, [row.json]);
  await recordEvent(op.db, { organizationId: op.organizationId, type: 'dispute.created', data: body, createdAt: op.now });
  return { body, afterCommit };
}

/** The deposit a won dispute brings back counts as used again, in the periods it was approved in; never limited. */
async function countWonDeposit(op: Op, intentId: string, amountCents: number): Promise<void> {
  const intent = await getIntentRow(op.db, op.organizationId, intentId);
  if (!intent) throw new Error(`dispute of intent ${intentId}, which does not exist`);
  await adjustLimitUse(op.db, {
    userId: intent.user_id,
    direction: intent.direction,
    deltaCents: amountCents,
    approvedAt: intent.created_at,
  });
}

export async function resolveDispute(op: Op, disputeId: string, input: ResolveDisputeBody): Promise<Outcome<Dispute>> {
  const open = await getDisputeRow(op.db, op.organizationId, disputeId, true);
  if (!open) throw errors.notFound('dispute', disputeId);
  if (open.status !== 'created')
    throw errors.invalidState(`Dispute ${open.id} was already ${open.status}; only a created dispute can be resolved.`);
  const resolved = await markResolved(op.db, open.id, input.result, op.now);
  if (resolved.status === 'won') await countWonDeposit(op, resolved.intent_id, resolved.amount_cents);
  const recorded =
    resolved.status === 'won'
      ? await recordTransaction(op, {
          accountId: resolved.account_id,
          direction: 'cash_in',
          type: 'dispute',
          sourceId: resolved.id,
          amountCents: resolved.amount_cents,
        })
      : null;
  const txns = (await transactionsOfSources(op.db, [resolved], 'dispute')).get(resolved.id) ?? [];
  const body = renderDispute(resolved, txns);
  await recordEvent(op.db, { organizationId: op.organizationId, type: 'dispute.resolved', data: body, createdAt: op.now });
  return { body, ...(recorded ? { afterCommit: recorded.afterCommit } : {}) };
}
