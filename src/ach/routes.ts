import { errors } from '../errors';
import { defineRoute } from '../http/route';
import { idParams } from '../ledger/contract';
import { achEntryOf } from './entries';
import { achEntrySchema } from './schemas';

const STATUSES =
  '`queued` until an ACH window puts it in a file (`in_file`), `delivered` once the bank has the file, `settled` on its effective date, `returned` if the bank returns it.';

/** SPEC §24: the ACH entry behind a payment, for support and reconciliation. */
export const achRoutes = [
  defineRoute({
    method: 'get',
    path: '/transaction/{id}/ach',
    operationId: 'getTransactionAch',
    tag: 'Transactions',
    summary: "Retrieve a transaction's ACH entry",
    description: `The ACH entry that moves this transaction's money (a cash_in's debit, a cash_out's or refund's credit to the user's bank account). ${STATUSES} 404 when the transaction has no ACH entry (no bank account, a dispute) or is not the caller's.`,
    params: idParams,
    errorStatuses: [404],
    response: { schema: achEntrySchema, description: "The transaction's ACH entry." },
    async handler({ caller, db, params }) {
      const entry = await achEntryOf(db, caller.organization.id, { transactionId: params.id });
      if (!entry) throw errors.notFound('ACH entry of transaction', params.id);
      return { body: entry };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/transfer/{id}/ach',
    operationId: 'getTransferAch',
    tag: 'Transfers',
    summary: "Retrieve a transfer's ACH entry",
    description: `The CCD entry on the operator's bank account that moves this transfer's net. ${STATUSES} 404 when the transfer has no ACH entry (a 0 transfer) or is not the caller's.`,
    params: idParams,
    errorStatuses: [404],
    response: { schema: achEntrySchema, description: "The transfer's ACH entry." },
    async handler({ caller, db, params }) {
      const entry = await achEntryOf(db, caller.organization.id, { transferId: params.id });
      if (!entry) throw errors.notFound('ACH entry of transfer', params.id);
      return { body: entry };
    },
  }),
];
