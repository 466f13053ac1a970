import { defineRoute } from '../http/edge';
import { errors } from '../http/errors';
import { listEnvelope, pageQuery } from '../http/zod';
import { settlementDateOf } from '../ledger/dates';
import { BadCursorError, resolveAccountId } from '../ledger/repo';
import { idParams } from '../ledger/schemas';
import { signalNetworkSettled, startWindowClose, settlementWindowWorkflowId } from './client';
import { isCalendarDate } from './dates';
import * as repo from './repo';
import {
  settlementRunSchema, simulateSettlementBody, transferListQuery, transferSchema, transferWithTransactionsSchema,
  type SimulateSettlementBody,
} from './schemas';

/** Cursor errors are the client's: a 400 naming the parameter. */
async function paged<T>(list: () => Promise<T>): Promise<T> {
  try {
    return await list();
  } catch (error) {
    if (error instanceof BadCursorError) throw errors.validation([{ param: 'cursor', message: 'not a cursor this API returned' }]);
    throw error;
  }
}

export const settlementRoutes = [
  defineRoute({
    method: 'get',
    path: '/transfer/{id}',
    tag: 'Transfers',
    summary: 'Retrieve a transfer with its transactions',
    description: 'The transfer and one page of its transactions (newest first); page through them with `?limit=` and `?cursor=` (the `transactions.next_cursor` of the previous answer).',
    params: idParams,
    query: pageQuery,
    errorStatuses: [404],
    response: { schema: transferWithTransactionsSchema, description: 'The transfer and a page of its transactions.' },
    async handler({ caller, db, params, query }) {
      const row = await repo.getTransferRow(db, params.id, caller.organization.id);
      if (!row) throw errors.notFound('transfer', params.id);
      const transactions = await paged(() => repo.listTransferTransactions(db, caller.organization.id, row.id, query));
      return { body: { ...repo.renderTransfer(row), transactions } };
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
      return { body: await paged(() => repo.listTransfers(db, caller.organization.id, query)) };
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
    async handler({ caller, db, body, now, deps }) {
      const input = body as SimulateSettlementBody;
      if (input.date !== undefined && !isCalendarDate(input.date)) throw errors.validation([{ param: 'date', message: 'not a calendar date' }]);
      if (input.account_id !== undefined) {
        const account = await resolveAccountId(db, caller.organization.id, input.account_id);
        if (!account.ok) throw errors.resourceMissing('account_id', input.account_id);
      }
      const windowDate = input.date ?? settlementDateOf(now, deps.config.SETTLEMENT_CUTOFF);
      const scope = { windowDate, organizationId: caller.organization.id, ...(input.account_id ? { accountId: input.account_id } : {}) };
      const { temporal, taskQueue } = deps.services;
      return {
        body: { id: settlementWindowWorkflowId(scope), window_date: windowDate, account_id: input.account_id ?? null, status: 'started' as const },
        afterCommit: async () => {
          await startWindowClose(temporal, taskQueue, scope);
        },
      };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/simulate/transfer/{id}/settle',
    tag: 'Simulation',
    summary: 'Settle a pending transfer now',
    description: 'The simulated network settles the transfer at once instead of after SANDBOX_SETTLE_SECONDS. The transfer and its transactions become `settled` in its settlement workflow right after this answers. 409 `invalid_state` unless the transfer is `pending`.',
    sandboxOnly: true,
    params: idParams,
    errorStatuses: [404, 409],
    response: { schema: transferSchema, description: 'The transfer as it was when the settlement was sent.' },
    async handler({ caller, db, params, deps }) {
      const row = await repo.getTransferRow(db, params.id, caller.organization.id);
      if (!row) throw errors.notFound('transfer', params.id);
      if (row.status !== 'pending') throw errors.invalidState(`This transfer is ${row.status}; only a pending transfer can be settled.`);
      const { temporal } = deps.services;
      return { body: repo.renderTransfer(row), afterCommit: () => signalNetworkSettled(temporal, row.account_id, row.window_date) };
    },
  }),
];
