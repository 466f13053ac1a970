import { defineRoute, retrieveRoute, type RouteContext, type RouteResult } from '../http/edge';
import { errors } from '../http/errors';
import { listEnvelope, pageQuery } from '../http/zod';
import { newId } from '../ids';
import { recordEvent } from '../events/outbox';
import { settlementDateOf } from './dates';
import { afterCommitStart, signalConfirmFunds } from './lifecycle';
import * as repo from './repo';
import {
  accountSchema, createIntentBody, idParams, intentListQuery, intentSchema, transactionListQuery, transactionSchema,
  type CreateIntentBody, type DeclineCategory,
} from './schemas';

/** Cursor errors are the client's: a 400 naming the parameter. */
export async function paged<T>(list: () => Promise<T>): Promise<T> {
  try {
    return await list();
  } catch (error) {
    if (error instanceof repo.BadCursorError) throw errors.validation([{ param: 'cursor', message: 'not a cursor this API returned' }]);
    throw error;
  }
}

/** Approves: records the transaction (pending) and its events; the workflow starts after commit. */
async function approve(ctx: RouteContext<unknown, unknown, unknown>, intent: repo.IntentRow, now: Date) {
  const txn = await repo.insertTransaction(ctx.db, {
    organizationId: intent.organization_id,
    accountId: intent.account_id,
    direction: intent.direction,
    type: 'intent',
    sourceId: intent.id,
    amountCents: intent.amount_cents,
    date: settlementDateOf(now, ctx.deps.config.SETTLEMENT_CUTOFF),
    createdAt: now,
  });
  const body = repo.renderIntent(intent, [txn]);
  await recordEvent(ctx.db, intent.organization_id, 'intent.approved', body, now);
  const { temporal, taskQueue } = ctx.deps.services;
  return { body, afterCommit: afterCommitStart(temporal, taskQueue, ctx.deps.log, ctx.deps.pool, [txn]) };
}

async function decline(ctx: RouteContext<unknown, unknown, unknown>, intent: repo.IntentRow, now: Date) {
  const body = repo.renderIntent(intent, []);
  await recordEvent(ctx.db, intent.organization_id, 'intent.declined', body, now);
  return { body };
}

/**
 * Creates an intent and decides it: declined (the user is not enabled, or `declineCategory` from the
 * caller's own checks), pending (manual), or approved with its transaction. POST /intent and POST
 * /authorize both create intents through here, inside the request's database transaction.
 */
export async function createIntent(
  ctx: RouteContext<unknown, unknown, unknown>,
  input: CreateIntentBody,
  options: { idempotencyKey: string; declineCategory?: DeclineCategory | null },
): Promise<RouteResult> {
  const { caller, db, now } = ctx;
  const orgId = caller.organization.id;
  const { userStatus, account } = await repo.lookupIntentParties(db, orgId, input.user_id, input.account_id);
  if (!account.ok) throw account.reason === 'required' ? errors.accountRequired() : errors.resourceMissing('account_id', input.account_id ?? '');
  if (userStatus === null) throw errors.resourceMissing('user_id', input.user_id);
  const declineCategory = userStatus === 'enabled' ? options.declineCategory ?? null : 'user_not_enabled';
  const intent: repo.IntentRow = {
    id: newId(caller.environment === 'production' ? 'intent_production' : 'intent_sandbox'),
    organization_id: orgId,
    account_id: account.accountId,
    user_id: input.user_id,
    idempotency_key: options.idempotencyKey,
    direction: input.direction,
    amount_cents: input.amount,
    currency: 'USD',
    approval_mode: input.approval_mode,
    status: declineCategory ? 'declined' : input.approval_mode === 'manual' ? 'pending' : 'approved',
    decline_category: declineCategory,
    created_at: now,
  };
  if (intent.status !== 'approved') {
    await repo.insertIntent(db, intent);
    if (intent.status === 'declined') return decline(ctx, intent, now);
    return { body: repo.renderIntent(intent, []) };
  }
  // Hot path: intent and transaction in one statement, then their two events.
  const txn = repo.newTransactionRow({
    organizationId: orgId, accountId: account.accountId, direction: intent.direction, type: 'intent', sourceId: intent.id,
    amountCents: intent.amount_cents, date: settlementDateOf(now, ctx.deps.config.SETTLEMENT_CUTOFF), createdAt: now,
  });
  await repo.insertIntent(db, intent, txn);
  await recordEvent(db, orgId, 'transaction.created', repo.renderTransaction(txn), now);
  const rendered = repo.renderIntent(intent, [txn]);
  await recordEvent(db, orgId, 'intent.approved', rendered, now);
  const { temporal, taskQueue } = ctx.deps.services;
  return { body: rendered, afterCommit: afterCommitStart(temporal, taskQueue, ctx.deps.log, ctx.deps.pool, [txn]) };
}

const intentRoutes = [
  defineRoute({
    method: 'post',
    path: '/intent',
    tag: 'Intents',
    summary: 'Create a payment intent',
    description: `Moves money for one user: \`cash_in\` (deposit) or \`cash_out\` (withdrawal). Requires \`X-Idempotency-Key\`.
- The user must be \`enabled\`; otherwise the intent is \`declined\` with \`decline_category: user_not_enabled\` and nothing moves.
- \`approval_mode: automatic\` (default): the intent is \`approved\` and one Transaction (type \`intent\`) is recorded in \`pending\`; its lifecycle workflow starts at once.
- \`approval_mode: manual\` (cash_out only): the intent waits in \`pending\` for POST /intent/{id}/approve or /cancel.
- \`account_id\` may be left out when the organization has exactly one account (400 \`account_required\` otherwise).`,
    body: createIntentBody,
    idempotency: { requireHeader: true },
    response: { schema: intentSchema, description: 'The intent, approved, declined or pending.' },
    async handler(ctx) {
      return createIntent(ctx, ctx.body as CreateIntentBody, { idempotencyKey: ctx.idempotencyKey ?? '' });
    },
  }),
  retrieveRoute({
    path: '/intent/{id}',
    tag: 'Intents',
    summary: 'Retrieve an intent',
    params: idParams,
    response: { schema: intentSchema, description: 'The intent with its transactions.' },
    resource: 'intent',
    find: repo.getIntent,
  }),
  defineRoute({
    method: 'get',
    path: '/intent',
    tag: 'Intents',
    summary: 'List intents, newest first',
    query: intentListQuery,
    response: { schema: listEnvelope(intentSchema).openapi('IntentList'), description: 'A page of intents.' },
    async handler({ caller, db, query }) {
      return { body: await paged(() => repo.listIntents(db, caller.organization.id, query)) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/intent/{id}/approve',
    tag: 'Intents',
    summary: 'Approve a pending (manual) intent',
    description: 'Records its Transaction and starts its lifecycle, as an automatic approval would. The user is checked again: one no longer `enabled` declines the intent (`user_not_enabled`). 409 `invalid_state` unless the intent is `pending`.',
    params: idParams,
    errorStatuses: [404, 409],
    response: { schema: intentSchema, description: 'The intent, now approved (or declined).' },
    async handler(ctx) {
      const { caller, db, params, now } = ctx;
      const intent = await repo.getIntentRow(db, caller.organization.id, params.id, true);
      if (!intent) throw errors.notFound('intent', params.id);
      if (intent.status !== 'pending') throw errors.invalidState(`This intent is ${intent.status}; only a pending intent can be approved.`);
      const enabled = (await repo.userStatus(db, caller.organization.id, intent.user_id)) === 'enabled';
      if (!enabled) return decline(ctx, await repo.decideIntent(db, intent.id, 'declined', 'user_not_enabled', now), now);
      return approve(ctx, await repo.decideIntent(db, intent.id, 'approved', null, now), now);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/intent/{id}/cancel',
    tag: 'Intents',
    summary: 'Cancel a pending (manual) intent',
    description: 'Nothing moves. 409 `invalid_state` unless the intent is `pending`.',
    params: idParams,
    errorStatuses: [404, 409],
    response: { schema: intentSchema, description: 'The intent, now canceled.' },
    async handler({ caller, db, params, now }) {
      const intent = await repo.getIntentRow(db, caller.organization.id, params.id, true);
      if (!intent) throw errors.notFound('intent', params.id);
      if (intent.status !== 'pending') throw errors.invalidState(`This intent is ${intent.status}; only a pending intent can be canceled.`);
      return { body: repo.renderIntent(await repo.decideIntent(db, intent.id, 'canceled', null, now), []) };
    },
  }),
];

const transactionRoutes = [
  retrieveRoute({
    path: '/transaction/{id}',
    tag: 'Transactions',
    summary: 'Retrieve a transaction',
    params: idParams,
    response: { schema: transactionSchema, description: 'The transaction.' },
    resource: 'transaction',
    find: repo.getTransaction,
  }),
  defineRoute({
    method: 'get',
    path: '/transaction',
    tag: 'Transactions',
    summary: 'List transactions, newest first',
    description: 'Filters combine with AND. `date` is the settlement date; `created_at.gte` / `created_at.lt` bound the recording time.',
    query: transactionListQuery,
    response: { schema: listEnvelope(transactionSchema).openapi('TransactionList'), description: 'A page of transactions.' },
    async handler({ caller, db, query }) {
      return { body: await paged(() => repo.listTransactions(db, caller.organization.id, query)) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/simulate/transaction/{id}/confirm',
    tag: 'Simulation',
    summary: 'Confirm a pending cash_in now',
    description: 'The simulated network confirms the funds at once instead of after SANDBOX_CONFIRM_SECONDS. The move to `available` happens in the transaction\'s workflow right after this answers (watch GET /transaction/{id} or the transaction.status_changed event). 409 `invalid_state` unless the transaction is a pending cash_in.',
    sandboxOnly: true,
    params: idParams,
    errorStatuses: [404, 409],
    response: { schema: transactionSchema, description: 'The transaction as it was when the confirmation was sent.' },
    async handler({ caller, db, params, deps }) {
      const row = await repo.getTransactionRow(db, params.id, caller.organization.id);
      if (!row) throw errors.notFound('transaction', params.id);
      if (row.direction !== 'cash_in' || row.status !== 'pending') {
        throw errors.invalidState(`Only a pending cash_in can be confirmed; this is a ${row.status} ${row.direction}.`);
      }
      const { temporal, taskQueue } = deps.services;
      return { body: repo.renderTransaction(row), afterCommit: () => signalConfirmFunds(temporal, taskQueue, row) };
    },
  }),
];

const accountRoutes = [
  defineRoute({
    method: 'get',
    path: '/account',
    tag: 'Accounts',
    summary: 'List settlement accounts with balances',
    description: 'Balances (integer cents): `pending` = Σ pending cash_in; `available` = Σ available cash_in not yet in a transfer − Σ pending cash_out (what the next transfer would net); `in_transfer` = signed net of unsettled transfers (Σ batched available cash_in − Σ in_transfer cash_out).',
    query: pageQuery,
    response: { schema: listEnvelope(accountSchema).openapi('AccountList'), description: 'A page of accounts.' },
    async handler({ caller, db, query }) {
      return { body: await paged(() => repo.listAccounts(db, caller.organization.id, query)) };
    },
  }),
  retrieveRoute({
    path: '/account/{id}',
    tag: 'Accounts',
    summary: 'Retrieve a settlement account with balances',
    description: 'See GET /account for the balance formula.',
    params: idParams,
    response: { schema: accountSchema, description: 'The account.' },
    resource: 'account',
    find: repo.getAccount,
  }),
];

export const ledgerRoutes = [...intentRoutes, ...transactionRoutes, ...accountRoutes];
