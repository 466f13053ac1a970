// The ledger feature as other features see it: they import it only through this module (the
// dependency lint's features-meet-through-contracts, docs/development.md "Layers"), so what one feature
// takes from another is this list. What workflows and activities share is in ./workflowContract.
export * from './workflowContract';
export { resolveAccountId } from './accounts';
export { getIntentRow, type IntentRow } from './intents';
export {
  LEDGER_LIMITS,
  directionSchema,
  idParams,
  intentSchema,
  paymentAmountSchema,
  transactionSchema,
  transactionStatusSchema,
  transactionTypeSchema,
  type Direction,
  type Intent,
  type Transaction,
  type TransactionType,
} from './schemas';
export { createIntent, recordTransaction, recordTransactions } from './service';
export {
  ELIGIBLE_FOR_WINDOW,
  assignWindowToTransfer,
  listTransferTransactions,
  settleTransferMembers,
  transactionsOfSources,
  type TransactionRow,
} from './transactions';
