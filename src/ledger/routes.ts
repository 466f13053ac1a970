import { defineRoute, retrieveRoute } from '../http/route';
import { metadataUpdateBody } from '../metadata/schemas';
import { listEnvelope, pageQuery } from '../zod';
import { getAccount, intentPartiesFromOpening, intentPartiesOpeningSql, listAccounts } from './accounts';
import { getIntent, listIntents } from './intents';
import { createIntentBatch } from './batch';
import {
  accountSchema,
  BATCH_LIMITS,
  createIntentBatchBody,
  createIntentBody,
  intentBatchEnvelope,
  intentBatchResultSchema,
  idParams,
  intentListQuery,
  intentSchema,
  transactionListQuery,
  transactionSchema,
} from './schemas';
import { approveIntent, cancelIntent, confirmCashIn, createIntent, updateIntent } from './service';
import { getTransaction, listTransactions } from './transactions';

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
- \`account_id\` may be left out when the organization has exactly one account (400 \`account_required\` otherwise).
- \`bank_account_id\` (SPEC §24): the user's bank account its ACH entry debits (cash_in) or credits (cash_out); default the user's newest \`active\` one. One that is not this user's (or not this organization's) is 400 \`resource_missing\`; a \`disabled\` one declines the intent (\`bank_account_disabled\`). With no bank account, the sandbox simulates the network as before and production declines the intent (\`no_bank_account\`).
- \`metadata\` (optional): the operator's own key/value pairs, returned on the intent and filterable on GET /intent and GET /transaction.`,
    body: createIntentBody,
    idempotency: { requireHeader: true },
    // The user, account and bank account are read with the write's opening round trip.
    opening: intentPartiesOpeningSql,
    response: { schema: intentSchema, description: 'The intent, approved, declined or pending.' },
    async handler({ op, body, caller, idempotencyKey, opening }) {
      return createIntent(op, body, {
        environment: caller.environment,
        idempotencyKey: idempotencyKey ?? '',
        parties: intentPartiesFromOpening(opening, body),
      });
    },
  }),
  defineRoute({
    method: 'post',
    path: '/intent/batch',
    tag: 'Intents',
    operationId: 'createIntentBatch',
    summary: 'Create up to 100 payment intents at once',
    description: `Each item is a POST /intent body plus its own \`idempotency_key\`, and is processed exactly as POST /intent with \`X-Idempotency-Key: <its idempotency_key>\` would be: same validation, decision, events and idempotency records. A later POST /intent with an item's key replays that item's intent; an item whose key was used before replays that answer, or gets 422 \`idempotency_key_reused\` when it came with another body. Items are independent: one item's error stops no other.
- Requires \`X-Idempotency-Key\` for the batch as a whole; replaying it returns the whole answer byte for byte.
- \`intents\`: 1 to ${BATCH_LIMITS.intentsMax} items, keys 1–255 printable ASCII, unique within the batch and different from the batch's own key. A body that is not such a batch is a 400 naming the offending parameter (\`intents.3.idempotency_key\`), and nothing is created.
- 200 \`{ data: [ { idempotency_key, status, intent?, error? } ] }\` in the request's order: \`status\` is what POST /intent would have answered for that item, with the Intent (2xx) or the error object (400 validation or a missing user/account, 409 \`idempotency_request_in_progress\` when a request with that key still executes after 5 seconds, 422).
- One write against the rate limit, whatever the item count. The body is limited to 64 KiB like any other.`,
    body: intentBatchEnvelope,
    documentedBody: createIntentBatchBody,
    idempotency: { requireHeader: true },
    response: { schema: intentBatchResultSchema, description: "One result per item, in the request's order." },
    async handler({ op, body, caller, idempotencyKey, requestId }) {
      return createIntentBatch(op, body, { environment: caller.environment, batchKey: idempotencyKey ?? '', requestId });
    },
  }),
  retrieveRoute({
    path: '/intent/{id}',
    tag: 'Intents',
    summary: 'Retrieve an intent',
    params: idParams,
    response: { schema: intentSchema, description: 'The intent with its transactions.' },
    resource: 'intent',
    find: getIntent,
  }),
  defineRoute({
    method: 'post',
    path: '/intent/{id}',
    tag: 'Intents',
    summary: 'Update an intent',
    description:
      "Merges `metadata` into the intent's stored metadata: each key given is set, a `null` value deletes its key, other keys stay. Any status may be updated; money, status and transactions never change here. The merged metadata holds at most 20 keys; a request that would exceed it is a 400 naming the first key past the limit and changes nothing. Emits `intent.updated` with the intent. Another organization's intent id answers 404, exactly like an unknown one.",
    params: idParams,
    body: metadataUpdateBody,
    errorStatuses: [404],
    response: { schema: intentSchema, description: 'The intent with its merged metadata.' },
    async handler({ op, params, body }) {
      return updateIntent(op, params.id, body);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/intent',
    tag: 'Intents',
    summary: 'List intents, newest first',
    description: '`metadata[KEY]=VALUE` keeps intents whose metadata holds exactly that value (several keys: all of them).',
    query: intentListQuery,
    response: { schema: listEnvelope(intentSchema).openapi('IntentList'), description: 'A page of intents.' },
    async handler({ caller, db, query }) {
      return { body: await listIntents(db, caller.organization.id, query) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/intent/{id}/approve',
    tag: 'Intents',
    summary: 'Approve a pending (manual) intent',
    description:
      'Records its Transaction and starts its lifecycle, as an automatic approval would. The user and its bank account are checked again: a user no longer `enabled` declines the intent (`user_not_enabled`), a bank account disabled since declines it (`bank_account_disabled`). 409 `invalid_state` unless the intent is `pending`.',
    params: idParams,
    errorStatuses: [404, 409],
    response: { schema: intentSchema, description: 'The intent, now approved (or declined).' },
    async handler({ op, params }) {
      return approveIntent(op, params.id);
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
    async handler({ op, params }) {
      return cancelIntent(op, params.id);
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
    find: getTransaction,
  }),
  defineRoute({
    method: 'get',
    path: '/transaction',
    tag: 'Transactions',
    summary: 'List transactions, newest first',
    description:
      "Filters combine with AND. `date` is the settlement date; `created_at.gte` / `created_at.lt` bound the recording time. `user_id` and `metadata[KEY]=VALUE` select through the transaction's source: the intent that made it (for refunds and disputes, the intent they return money from, for `user_id`; the refund's own metadata, for `metadata`).",
    query: transactionListQuery,
    response: { schema: listEnvelope(transactionSchema).openapi('TransactionList'), description: 'A page of transactions.' },
    async handler({ caller, db, query }) {
      return { body: await listTransactions(db, caller.organization.id, query) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/simulate/transaction/{id}/confirm',
    tag: 'Simulation',
    summary: 'Confirm a pending cash_in now',
    description:
      'The simulated network confirms the funds at once instead of after SANDBOX_CONFIRM_SECONDS: the transaction is `available` when this answers (its transaction.status_changed event recorded with it), and its workflow is told. 409 `invalid_state` unless the transaction is a pending cash_in.',
    sandboxOnly: true,
    params: idParams,
    errorStatuses: [404, 409],
    response: { schema: transactionSchema, description: 'The transaction, now `available`.' },
    async handler({ op, params }) {
      return confirmCashIn(op, params.id);
    },
  }),
];

const accountRoutes = [
  defineRoute({
    method: 'get',
    path: '/account',
    tag: 'Accounts',
    summary: 'List settlement accounts with balances',
    description:
      'Balances (integer cents): `pending` = Σ pending cash_in; `available` = Σ available cash_in not yet in a transfer − Σ pending cash_out (what the next transfer would net); `in_transfer` = signed net of unsettled transfers (Σ batched available cash_in − Σ in_transfer cash_out).',
    query: pageQuery,
    response: { schema: listEnvelope(accountSchema).openapi('AccountList'), description: 'A page of accounts.' },
    async handler({ caller, db, query }) {
      return { body: await listAccounts(db, caller.organization.id, query) };
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
    find: getAccount,
  }),
];

export const ledgerRoutes = [...intentRoutes, ...transactionRoutes, ...accountRoutes];
