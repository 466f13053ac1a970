// The ledger's contract with Temporal: what the transaction workflow, its activities, the clients that start
// and signal it, and the CLI must agree on. Pure (no Node modules, no I/O): workflow code imports it.
import { defineQuery, defineSignal } from '@temporalio/workflow';

import { DIRECTIONS, type Direction } from '../directions';

export { DIRECTIONS, type Direction };

export const TRANSACTION_STATUSES = ['pending', 'available', 'in_transfer', 'settled'] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

/**
 * The transaction state machine (SPEC §9, the seed's table), the one copy the code reads. The database's
 * copy is the `transaction_transitions` table that the trigger `transactions_after_update` (schema.sql) joins
 * to refuse any other move; test/journal.test.ts proves the two are the same.
 *   cash_in:  pending → available (the network confirms funds) → settled (its transfer settles)
 *   cash_out: pending → in_transfer (batched into a transfer)   → settled (its transfer settles)
 */
export const TRANSITIONS: Record<Direction, Partial<Record<TransactionStatus, TransactionStatus>>> = {
  cash_in: { pending: 'available', available: 'settled' },
  cash_out: { pending: 'in_transfer', in_transfer: 'settled' },
};

const ORDER: Record<TransactionStatus, number> = { pending: 0, available: 1, in_transfer: 1, settled: 2 };

/** What moving `from` toward `to` means: a legal next step, a replay (already there or past it), or illegal. */
export function transitionKind(direction: Direction, from: TransactionStatus, to: TransactionStatus): 'next' | 'replay' | 'illegal' {
  if (TRANSITIONS[direction][from] === to) return 'next';
  if (from === to) return 'replay';
  if (ORDER[from] > ORDER[to]) {
    // Behind us on this direction's path: a replay; a status of the other path (cash_out "available"): illegal.
    const onPath = to === 'pending' || to === 'settled' || TRANSITIONS[direction].pending === to;
    return onPath ? 'replay' : 'illegal';
  }
  return 'illegal';
}

/** Workflow type of one transaction's lifecycle; its workflow id is the transaction id. */
export const TRANSACTION_WORKFLOW_TYPE = 'transactionWorkflow';

export interface TransactionWorkflowInput {
  transactionId: string;
  organizationId: string;
  accountId: string;
  direction: Direction;
  /** The settlement date (YYYY-MM-DD), computed outside workflow code. */
  date: string;
}

/** The network confirmed a cash_in's funds (sandbox: POST /simulate/transaction/{id}/confirm). */
export const confirmFundsSignal = defineSignal('confirmFunds');
/** The settlement feature batched this cash_out into a transfer. */
export const transferAssignedSignal = defineSignal<[{ transferId: string }]>('transferAssigned');
/** The transfer containing this transaction settled with the network. */
export const transferSettledSignal = defineSignal<[{ transferId: string }]>('transferSettled');
/** The status as the workflow last wrote it. */
export const transactionStatusQuery = defineQuery<TransactionStatus>('transactionStatus');

/** Activity error types the workflow treats as final. */
export const INVALID_TRANSITION = 'InvalidTransition';
export const TRANSACTION_MISSING = 'TransactionMissing';
