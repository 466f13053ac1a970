import assert from 'node:assert';
import { bankAccountDisabled } from '../bankAccounts/contract';
import { ApiError, errors } from '../errors';
import { recordEvent } from '../outbox';
import { newId } from '../ids';
import { mergeMetadata, type MetadataUpdateBody } from '../metadata/schemas';
import type { Environment } from '../http/apiKeys';
import type { Op, Outcome } from '../services';
import { takeLimits } from '../limits/contract';
import { getUserStatus } from '../users/contract';
import { lookupIntentParties, type IntentParties, type IntentPartiesRequest } from './accounts';
import { settlementDateOf } from '../easternDates';
import {
  decideIntent,
  getIntentRow,
  insertIntents,
  insertIntentsWithTransactions,
  renderIntent,
  renderIntents,
  updateIntentMetadata,
  type IntentRow,
} from './intents';
import { ledgerMetrics } from '../metrics';
import { enqueueConfirmFunds } from './lifecycleQueue';
import type { CreateIntentBody, DeclineCategory, Intent, Transaction, TransactionType } from './schemas';
import { applyTransition, getTransactionRow, insertTransactions, type NewTransaction, type TransactionRow } from './transactions';
import { rowOf } from '../assert';

/**
 * The ledger's operations (SPEC §8, §9) behind POST /intent, /authorize, refunds and disputes. Each runs inside
 * the caller's database transaction (op.db) and never waits on Temporal (SPEC §20): what Temporal must do
 * (start a lifecycle, deliver a confirmation) is queued in that transaction and drained by the workers.
 */

type TransactionInput = {
  accountId: string;
  direction: TransactionRow['direction'];
  type: TransactionType;
  sourceId: string;
  amountCents: number;
};

/** The transactions `inputs` become: `pending` on today's settlement date, their lifecycles on this process' task queue. */
function newTransactionsOf(op: Op, inputs: readonly TransactionInput[]): NewTransaction[] {
  const date = settlementDateOf(op.now, op.deps.config.SETTLEMENT_CUTOFF);
  return inputs.map((input) => ({
    ...input,
    organizationId: op.organizationId,
    date,
    createdAt: op.now,
    taskQueue: op.deps.services.taskQueue,
  }));
}

/**
 * What follows the commit of new transactions: counts them and wakes the drainers (no Temporal call, nothing
 * to await). It runs after the request's commit, once per executed request (a replay does not).
 */
function afterRecording(op: Op, recorded: ReadonlyArray<Pick<TransactionRow, 'direction' | 'type'>>): () => void {
  return () => {
    for (const row of recorded) ledgerMetrics.transactionsTotal.inc({ direction: row.direction, type: row.type });
    if (recorded.length > 0) op.lifecyclePoke.poke();
  };
}

/**
 * The one way transactions come to exist: the rows in `pending`, their transaction.created events and their
 * queued workflow starts, all in the caller's transaction, in the order given (insertTransactions; with their
 * intents, recordIntents). `afterCommit` is afterRecording's.
 */
export async function recordTransactions(
  op: Op,
  inputs: readonly TransactionInput[],
): Promise<{ rows: TransactionRow[]; afterCommit: () => void }> {
  const rows = await insertTransactions(op.db, newTransactionsOf(op, inputs));
  return { rows, afterCommit: afterRecording(op, rows) };
}

/** recordTransactions of one. */
export async function recordTransaction(op: Op, input: TransactionInput): Promise<{ row: TransactionRow; afterCommit: () => void }> {
  const { rows, afterCommit } = await recordTransactions(op, [input]);
  return { row: rowOf(rows, 'recordTransactions answers a row per input'), afterCommit };
}

/** The transaction an approved intent moves its money with. */
function transactionOfIntent(intent: IntentRow): TransactionInput {
  return {
    accountId: intent.account_id,
    direction: intent.direction,
    type: 'intent',
    sourceId: intent.id,
    amountCents: intent.amount_cents,
  };
}

/**
 * Records decided intents and the approved ones' transactions (recordTransactions' rows) in one statement
 * (insertIntentsWithTransactions): each intent as stored, with its transaction's JSON (null: none).
 */
export async function recordIntents(
  op: Op,
  intents: readonly IntentRow[],
): Promise<{ recorded: Array<{ intent: IntentRow; transaction: Transaction | null }>; afterCommit: () => void }> {
  const approved = intents.filter((intent) => intent.status === 'approved').map(transactionOfIntent);
  const recorded =
    approved.length > 0
      ? await insertIntentsWithTransactions(op.db, intents, newTransactionsOf(op, approved))
      : (await insertIntents(op.db, intents)).map((intent) => ({ intent, transaction: null }));
  return { recorded, afterCommit: afterRecording(op, approved) };
}

/** An approved intent's answer with its transaction, and its intent.approved event recorded with the stored answer. */
function approvedOutcome(op: Op, intent: IntentRow, transaction: Transaction, afterCommit: () => void): Outcome<Intent> {
  const body = renderIntent(intent, [transaction]);
  // Recorded with the stored answer (Outcome.events): the intent's last write, one round trip fewer under its
  // user's limit counter.
  return { body, afterCommit, events: [{ organizationId: op.organizationId, type: 'intent.approved', data: body }] };
}

function decline(op: Op, intent: IntentRow): Outcome<Intent> {
  const body = renderIntent(intent, []);
  return { body, events: [{ organizationId: op.organizationId, type: 'intent.declined', data: body }] };
}

/** An intent as a caller asks for it: POST /intent's body, where `bank_account_id: null` asks for no bank account (a card). */
export type IntentRequest = Omit<CreateIntentBody, 'bank_account_id'> & Pick<IntentPartiesRequest, 'bank_account_id'>;

const bankAccountNotUsers = (bankAccountId: string, userId: string) =>
  new ApiError({
    status: 400,
    type: 'invalid_request_error',
    code: 'resource_missing',
    message: `Bank account '${bankAccountId}' is not one of user '${userId}''s bank accounts (GET /user/${userId}/bank_account lists them).`,
    param: 'bank_account_id',
  });

/** The 400s that refuse an intent before any decision: SPEC §7's account, §6's user, §24's bank account. */
function refusalOf(input: IntentRequest, parties: IntentParties): ApiError | null {
  const { userStatus, account, bankAccount } = parties;
  if (!account.ok)
    return account.reason === 'required' ? errors.accountRequired() : errors.resourceMissing('account_id', input.account_id ?? '');
  if (userStatus === null) return errors.resourceMissing('user_id', input.user_id);
  if (!bankAccount.ok) {
    const id = input.bank_account_id ?? '';
    return bankAccount.reason === 'missing' ? errors.resourceMissing('bank_account_id', id) : bankAccountNotUsers(id, input.user_id);
  }
  return null;
}

/**
 * Why an intent is declined, first reason first: the user, the caller's own check (an expired card), the
 * bank account disabled, and in production no bank account at all (the ACH rail would have nothing to move
 * money with; the sandbox simulates the network as before, SPEC §24).
 */
function declineCategoryOf(parties: IntentParties, context: { environment: Environment; declineCategory?: DeclineCategory | null }) {
  if (parties.userStatus !== 'enabled') return 'user_not_enabled';
  if (context.declineCategory) return context.declineCategory;
  if (parties.bankAccount.ok && parties.bankAccount.disabled) return 'bank_account_disabled';
  if (parties.bankAccount.ok && parties.bankAccount.id === null && context.environment === 'production') return 'no_bank_account';
  return null;
}

/**
 * The decision of POST /intent, as a pure function both the single and the batch path (src/ledger/batch.ts)
 * call: the intent row to record (declined for declineCategoryOf's reasons; pending when manual; approved
 * otherwise), or the 400 that refuses it.
 */
export function planIntent(
  input: IntentRequest,
  parties: IntentParties,
  context: {
    organizationId: string;
    now: Date;
    environment: Environment;
    idempotencyKey: string;
    declineCategory?: DeclineCategory | null;
  },
): IntentRow {
  const refusal = refusalOf(input, parties);
  if (refusal) throw refusal;
  const { account, bankAccount } = parties;
  assert(account.ok && bankAccount.ok, 'refusalOf refuses every intent whose account or bank account is not ok');
  const declineCategory = declineCategoryOf(parties, context);
  return {
    id: newId(context.environment === 'production' ? 'intent_production' : 'intent_sandbox'),
    organization_id: context.organizationId,
    account_id: account.accountId,
    user_id: input.user_id,
    idempotency_key: context.idempotencyKey,
    direction: input.direction,
    amount_cents: input.amount,
    currency: 'USD',
    approval_mode: input.approval_mode,
    status: declineCategory ? 'declined' : input.approval_mode === 'manual' ? 'pending' : 'approved',
    decline_category: declineCategory,
    bank_account_id: bankAccount.id,
    decline_limit: null,
    metadata: input.metadata ?? {},
    created_at: context.now,
  };
}

/**
 * The check at approval (SPEC §26) of intents planned `approved`, in order: each one within its user's limits
 * stays approved and is counted; each one over a limit becomes declined `limit_exceeded`. Every path that
 * approves an intent passes here, inside its own transaction (src/limits/service.ts serializes per user).
 */
export async function withinLimits(op: Op, planned: readonly IntentRow[]): Promise<IntentRow[]> {
  const approved = planned.filter((intent) => intent.status === 'approved');
  const decisions = await takeLimits(
    op,
    approved.map((intent) => ({ userId: intent.user_id, direction: intent.direction, amountCents: intent.amount_cents })),
  );
  const declineOf = new Map(approved.map((intent, i) => [intent.id, decisions[i] ?? null]));
  return planned.map((intent) => {
    const over = declineOf.get(intent.id);
    return over ? { ...intent, status: 'declined', decline_category: 'limit_exceeded', decline_limit: over } : intent;
  });
}

/**
 * Creates an intent and decides it (planIntent, then the limits): declined, pending (manual), or approved
 * with its transaction. POST /intent and POST /authorize both create intents through here.
 */
export async function createIntent(
  op: Op,
  input: IntentRequest,
  options: {
    environment: Environment;
    idempotencyKey: string;
    declineCategory?: DeclineCategory | null;
    /** The parties read already (POST /intent's opening read); null or absent: read them here. */
    parties?: IntentParties | null;
  },
): Promise<Outcome<Intent>> {
  const parties = options.parties ?? (await lookupIntentParties(op.db, op.organizationId, input));
  const planned = planIntent(input, parties, { ...options, organizationId: op.organizationId, now: op.now });
  const [decided] = await withinLimits(op, [planned]);
  assert(decided, 'withinLimits answers one decision per planned intent');
  const { recorded, afterCommit } = await recordIntents(op, [decided]);
  const { intent, transaction } = rowOf(recorded, 'recordIntents answers each intent it was given');
  if (intent.status === 'approved') {
    assert(transaction, 'recordIntents records a transaction with every approved intent');
    return approvedOutcome(op, intent, transaction, afterCommit);
  }
  if (intent.status === 'declined') return decline(op, intent);
  return { body: renderIntent(intent, []) };
}

async function pendingIntent(op: Op, intentId: string, action: 'approved' | 'canceled'): Promise<IntentRow> {
  const intent = await getIntentRow(op.db, op.organizationId, intentId, true);
  if (!intent) throw errors.notFound('intent', intentId);
  if (intent.status !== 'pending') throw errors.invalidState(`This intent is ${intent.status}; only a pending intent can be ${action}.`);
  return intent;
}

/**
 * Approves a pending (manual) intent; a user no longer `enabled`, its bank account disabled since, or a limit the
 * intent would now exceed, declines it instead.
 */
export async function approveIntent(op: Op, intentId: string): Promise<Outcome<Intent>> {
  const intent = await pendingIntent(op, intentId, 'approved');
  const enabled = (await getUserStatus(op.db, op.organizationId, intent.user_id)) === 'enabled';
  const declineCategory: DeclineCategory | null = !enabled
    ? 'user_not_enabled'
    : intent.bank_account_id !== null && (await bankAccountDisabled(op.db, intent.bank_account_id))
      ? 'bank_account_disabled'
      : null;
  if (declineCategory)
    return decline(op, await decideIntent(op.db, { intentId: intent.id, status: 'declined', declineCategory, now: op.now }));
  const [over] = await takeLimits(op, [{ userId: intent.user_id, direction: intent.direction, amountCents: intent.amount_cents }]);
  if (over)
    return decline(
      op,
      await decideIntent(op.db, {
        intentId: intent.id,
        status: 'declined',
        declineCategory: 'limit_exceeded',
        declineLimit: over,
        now: op.now,
      }),
    );
  const decided = await decideIntent(op.db, { intentId: intent.id, status: 'approved', declineCategory: null, now: op.now });
  const { row, afterCommit } = await recordTransaction(op, transactionOfIntent(decided));
  return approvedOutcome(op, decided, row.json, afterCommit);
}

export async function cancelIntent(op: Op, intentId: string): Promise<Outcome<Intent>> {
  const intent = await pendingIntent(op, intentId, 'canceled');
  return {
    body: renderIntent(await decideIntent(op.db, { intentId: intent.id, status: 'canceled', declineCategory: null, now: op.now }), []),
  };
}

/**
 * POST /intent/{id} (SPEC §18): merges the given metadata keys into the stored ones (`null` deletes a key)
 * under the row's lock, whatever the intent's status; money and status are untouched. Emits intent.updated.
 */
export async function updateIntent(op: Op, intentId: string, body: MetadataUpdateBody): Promise<Outcome<Intent>> {
  const intent = await getIntentRow(op.db, op.organizationId, intentId, true);
  if (!intent) throw errors.notFound('intent', intentId);
  const updated = await updateIntentMetadata(op.db, intent.id, mergeMetadata(intent.metadata, body.metadata), op.now);
  const [rendered] = await renderIntents(op.db, [updated]);
  await recordEvent(op.db, { organizationId: op.organizationId, type: 'intent.updated', data: rendered, createdAt: op.now });
  return { body: rendered! };
}

/**
 * Sandbox: the network confirms a pending cash_in now (SPEC §9: "at once"). The confirmation is a fact the ledger
 * learns here, so it is recorded here: the move to `available` (applyTransition, the one transition, with its
 * history row, balance effect and transaction.status_changed event) commits with the request, and the answer is
 * the transaction as it is then. The lifecycle is told: its confirmFunds signal is queued in the same
 * transaction and delivered by a drainer (signalWithStart), so it is not lost while the workflow has not
 * started yet or Temporal is down; the workflow's own step then finds the row available and writes nothing
 * (applyTransition is idempotent per target), as when the settlement moves rows itself. Before issue 37 the
 * move waited for the signal's round trip through Temporal (bench/results/2026-11-28-confirm-at-once.md).
 */
export async function confirmCashIn(op: Op, transactionId: string): Promise<Outcome<Transaction>> {
  const row = await getTransactionRow(op.db, transactionId, op.organizationId);
  if (!row) throw errors.notFound('transaction', transactionId);
  if (row.direction !== 'cash_in' || row.status !== 'pending') {
    throw errors.invalidState(`Only a pending cash_in can be confirmed; this is a ${row.status} ${row.direction}.`);
  }
  // Locks the row; a timer's confirmation that committed since the read above leaves it as it found it.
  const moved = await applyTransition(op.db, { transactionId: row.id, toStatus: 'available', now: op.now });
  await enqueueConfirmFunds(op.db, { transactionId: row.id, taskQueue: op.deps.services.taskQueue, now: op.now });
  return {
    body: moved.transaction,
    afterCommit: () => {
      if (moved.changed) ledgerMetrics.transitionsTotal.inc({ to_status: moved.status });
      op.lifecyclePoke.poke();
    },
  };
}
