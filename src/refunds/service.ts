import { ApiError, errors } from '../errors';
import { recordEvent } from '../outbox';
import { newId } from '../ids';
import { getIntentRow, type IntentRow } from '../ledger/contract';
import { recordTransaction } from '../ledger/contract';
import { adjustLimitUse } from '../limits/contract';
import type { Op, Outcome } from '../services';
import { insertRefund, intentReturnedCents, renderRefund } from './repo';
import type { CreateRefundBody, Refund } from './schemas';

/**
 * The intent a refund or dispute draws on, locked FOR UPDATE until the operation's transaction ends so
 * concurrent refunds and disputes of one intent run one at a time, with what it has left. Only approved
 * cash_in intents hold money that can go back; the database guard checks the same again on insert.
 */
export async function lockReturnableIntent(
  op: Op,
  intentId: string,
  action: 'refunded' | 'disputed',
): Promise<{ intent: IntentRow; leftCents: number }> {
  const intent = await getIntentRow(op.db, op.organizationId, intentId, true);
  if (!intent) throw errors.resourceMissing('intent_id', intentId);
  if (intent.direction !== 'cash_in') {
    throw errors.invalidState(`Only cash_in intents can be ${action}; intent ${intent.id} is a cash_out.`);
  }
  if (intent.status !== 'approved') {
    throw errors.invalidState(`Only approved intents can be ${action}; intent ${intent.id} is ${intent.status}.`);
  }
  const leftCents = intent.amount_cents - (await intentReturnedCents(op.db, intent.id));
  return { intent, leftCents };
}

const amountTooLarge = (leftCents: number) =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    code: 'amount_too_large',
    message: `The amount exceeds what is left of the intent: at most ${leftCents} cents can still be refunded.`,
    param: 'amount',
  });

/** Refunds all or part of what is left of an approved cash_in intent with a pending cash_out (SPEC §11). */
export async function createRefund(op: Op, input: CreateRefundBody): Promise<Outcome<Refund>> {
  const { intent, leftCents } = await lockReturnableIntent(op, input.intent_id, 'refunded');
  if (leftCents <= 0) throw errors.invalidState(`Intent ${intent.id} has nothing left to refund.`);
  const amountCents = input.amount ?? leftCents;
  if (amountCents > leftCents) throw amountTooLarge(leftCents);
  // What goes back to the user does not count as used (SPEC §26).
  await adjustLimitUse(op.db, { userId: intent.user_id, direction: 'cash_in', deltaCents: -amountCents, approvedAt: intent.created_at });
  const refund = await insertRefund(op.db, {
    id: newId('refund'),
    organization_id: op.organizationId,
    intent_id: intent.id,
    account_id: intent.account_id,
    amount_cents: amountCents,
    metadata: input.metadata ?? {},
    created_at: op.now,
  });
  const { row, afterCommit } = await recordTransaction(op, {
    accountId: intent.account_id,
    direction: 'cash_out',
    type: 'refund',
    sourceId: refund.id,
    amountCents,
  });
  const body = renderRefund(refund, row.json);
  await recordEvent(op.db, { organizationId: op.organizationId, type: 'refund.created', data: body, createdAt: op.now });
  return { body, afterCommit };
}
