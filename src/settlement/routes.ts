import { defineRoute } from '../http/route';
import { idParams } from '../ledger/contract';
import { listEnvelope, pageQuery } from '../zod';
import * as repo from './repo';
import { settlementRunSchema, simulateSettlementBody, transferListQuery, transferSchema, transferWithTransactionsSchema } from './schemas';
import { closeWindowNow, settleTransferNow, transferWithTransactions } from './service';

export const settlementRoutes = [
  defineRoute({
    method: 'get',
    path: '/transfer/{id}',
    tag: 'Transfers',
    summary: 'Retrieve a transfer with its transactions',
    description:
      'The transfer and one page of its transactions (newest first); page through them with `?limit=` and `?cursor=` (the `transactions.next_cursor` of the previous answer).',
    params: idParams,
    query: pageQuery,
    errorStatuses: [404],
    response: { schema: transferWithTransactionsSchema, description: 'The transfer and a page of its transactions.' },
    async handler({ op, params, query }) {
      return { body: await transferWithTransactions(op, params.id, query) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/transfer',
    tag: 'Transfers',
    summary: 'List transfers, newest first',
    description: 'Filters combine with AND: `date` (settlement date), `window_date`, `status`, `direction`, `account_id`.',
    query: transferListQuery,
    response: { schema: listEnvelope(transferSchema).openapi('TransferList'), description: 'A page of transfers.' },
    async handler({ caller, db, query }) {
      return { body: await repo.listTransfers(db, caller.organization.id, query) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/simulate/settlement',
    tag: 'Simulation',
    summary: 'Close a settlement window now',
    description: `Closes window \`date\` (default: the window open now) for \`account_id\` (default: every account of the organization), as the daily schedule does at SETTLEMENT_CUTOFF: each account's eligible transactions (cash_in \`available\`, cash_out \`pending\`, \`date\` ≤ the window, no transfer yet) are netted into one transfer. The close runs in a workflow right after this answers; watch GET /transfer?window_date=… . A window closes once per account: closing it again creates nothing, and transactions recorded afterwards go to a later window.`,
    sandboxOnly: true,
    body: simulateSettlementBody,
    errorStatuses: [400],
    response: { schema: settlementRunSchema, description: 'The window close, started.' },
    async handler({ op, body }) {
      return closeWindowNow(op, body);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/simulate/transfer/{id}/settle',
    tag: 'Simulation',
    summary: 'Settle a pending transfer now',
    description:
      'The simulated network settles the transfer at once instead of after SANDBOX_SETTLE_SECONDS. The transfer and its transactions become `settled` in its settlement workflow right after this answers. 409 `invalid_state` unless the transfer is `pending`.',
    sandboxOnly: true,
    params: idParams,
    errorStatuses: [404, 409],
    response: { schema: transferSchema, description: 'The transfer as it was when the settlement was sent.' },
    async handler({ op, params }) {
      return settleTransferNow(op, params.id);
    },
  }),
];
