import { ApplicationFailure, condition, proxyActivities, setHandler, upsertSearchAttributes, log } from '@temporalio/workflow';
import type { LedgerActivities } from '../activities/ledger';
import {
  confirmFundsSignal, INVALID_TRANSITION, transactionStatusQuery, transferAssignedSignal, transferSettledSignal,
  type TransactionStatus, type TransactionWorkflowInput,
} from '../src/ledger/contract';
import { TransactionStatusKey, TransferIdKey } from '../src/platform/searchAttributes';

/**
 * One transaction's lifecycle (SPEC §9; the state machine is src/ledger/contract.ts's TRANSITIONS).
 * Workflow id = transaction id. Every step is an activity that writes status, history, balance effect and
 * event in one Postgres transaction, and is a no-op when the row is already there, so retries, replays
 * and a settlement feature that moved the row itself all converge on the same state.
 */

type Status = TransactionStatus;

const { submitPayment, transitionTransaction } = proxyActivities<LedgerActivities>({
  // Each is one short Postgres transaction (or one rail call); retried forever with backoff because a
  // transaction must not be abandoned midway, except for transitions the ledger refuses outright.
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: [INVALID_TRANSITION] },
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
