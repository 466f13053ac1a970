import {
  ApplicationFailure, condition, defineQuery, defineSignal, proxyActivities, setHandler, upsertSearchAttributes, log,
} from '@temporalio/workflow';
import type { createLedgerActivities } from '../activities/ledger';
import { TransactionStatusKey, TransferIdKey } from './searchAttributes';

/**
 * One transaction's lifecycle (SPEC §9), exactly the seed's table:
 *   cash_in:  pending → available (the network confirms funds) → settled (its transfer settles)
 *   cash_out: pending → in_transfer (batched into a transfer)   → settled (its transfer settles)
 * Workflow id = transaction id. Every step is an activity that writes status, history, balance effect and
 * event in one Postgres transaction, and is a no-op when the row is already there, so retries, replays
 * and a settlement feature that moved the row itself all converge on the same state.
 */

type Direction = 'cash_in' | 'cash_out';
type Status = 'pending' | 'available' | 'in_transfer' | 'settled';

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
/** The status as this workflow last wrote it. */
export const transactionStatusQuery = defineQuery<Status>('transactionStatus');

type LedgerActivities = ReturnType<typeof createLedgerActivities>;

const { submitPayment, transitionTransaction } = proxyActivities<LedgerActivities>({
  // Each is one short Postgres transaction (or one rail call); retried forever with backoff because a
  // transaction must not be abandoned midway, except for transitions the ledger refuses outright.
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: ['InvalidTransition'] },
});

export async function transactionWorkflow(input: TransactionWorkflowInput): Promise<Status> {
  let status: Status = 'pending';
  let confirmed = false;
  let assignedTransferId: string | null = null;
  let settledTransferId: string | null = null;

  setHandler(transactionStatusQuery, () => status);
  setHandler(confirmFundsSignal, () => {
    confirmed = true;
  });
  setHandler(transferAssignedSignal, ({ transferId }) => {
    assignedTransferId ??= transferId;
  });
  setHandler(transferSettledSignal, ({ transferId }) => {
    // Settlement implies the transfer was assigned, even if that signal was lost or comes later.
    assignedTransferId ??= transferId;
    settledTransferId ??= transferId;
  });

  const moveTo = async (toStatus: Status, transferId: string | null) => {
    const result = await transitionTransaction({ transactionId: input.transactionId, toStatus, transferId });
    status = result.status;
    upsertSearchAttributes([{ key: TransactionStatusKey, value: status }]);
    const recorded = result.transferId ?? transferId;
    if (recorded) upsertSearchAttributes([{ key: TransferIdKey, value: recorded }]);
  };

  // Hand the payment to the rail; it says how confirmation will come. Also reports the row's status, which
  // is ahead of `pending` when this run starts late (the reconciler) after the settlement moved it.
  const submitted = await submitPayment({ transactionId: input.transactionId });
  status = submitted.status;
  upsertSearchAttributes([{ key: TransactionStatusKey, value: status }]);

  if (input.direction === 'cash_in') {
    if (status === 'pending') {
      if (submitted.confirmAfterSeconds !== null && submitted.confirmAfterSeconds > 0) {
        await condition(() => confirmed, `${submitted.confirmAfterSeconds} seconds`, { summary: 'network confirms funds' });
      } else if (submitted.confirmAfterSeconds === null) {
        await condition(() => confirmed);
      }
      await moveTo('available', null);
    }
    if (status === 'available') {
      await condition(() => settledTransferId !== null);
      await moveTo('settled', settledTransferId);
    }
  } else {
    if (status === 'pending') {
      await condition(() => assignedTransferId !== null);
      await moveTo('in_transfer', assignedTransferId);
    }
    if (status === 'in_transfer') {
      await condition(() => settledTransferId !== null);
      await moveTo('settled', settledTransferId);
    }
  }
  if (status !== 'settled') {
    throw ApplicationFailure.nonRetryable(`transaction ${input.transactionId} ended its lifecycle in ${status}`, 'LifecycleBroken');
  }
  log.info('transaction settled', { transactionId: input.transactionId });
  return status;
}
