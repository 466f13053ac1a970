import {
  ApplicationFailure,
  condition,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { LedgerActivities } from '../activities/ledger';
import {
  confirmFundsSignal,
  INVALID_TRANSITION,
  transactionStatusQuery,
  transferAssignedSignal,
  transferSettledSignal,
  type TransactionStatus,
  type TransactionWorkflowInput,
} from '../src/ledger/workflowContract';
import { TransactionStatusKey, TransferIdKey } from '../src/platform/searchAttributes';

/**
 * One transaction's lifecycle (SPEC §9; the state machine is src/ledger/workflowContract.ts's TRANSITIONS).
 * Workflow id = transaction id. The steps the workflow writes itself (submit, confirm → available) are
 * activities that write status, history, balance effect and event in one Postgres transaction, and are a
 * no-op when the row is already there, so retries, replays and a settlement feature that moved the row
 * itself all converge on the same state. The steps the settlement feature writes (in_transfer, settled) it
 * writes for the whole window in one statement, and signals only after that commits: the workflow takes
 * the signal as the fact and writes nothing (since LIFECYCLE_V2).
 */

type Status = TransactionStatus;

const { submitPayment, transitionTransaction } = proxyActivities<LedgerActivities>({
  // Each is one short Postgres transaction (or one rail call); retried forever with backoff because a
  // transaction must not be abandoned midway, except for transitions the ledger refuses outright.
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: [INVALID_TRANSITION] },
});

/**
 * The same steps as local activities (since LIFECYCLE_V2): each is one short Postgres transaction, run by the
 * worker inside the workflow task that needs it, so a step costs no activity task round trip through the
 * server and one marker event instead of three activity events and a further workflow task. Same retry
 * policy; a local activity that keeps failing backs off on a durable timer past localRetryThreshold.
 */
const local = proxyLocalActivities<LedgerActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: [INVALID_TRANSITION] },
});

/**
 * The patch id of the lifecycle that writes with local activities, upserts a search attribute only when the
 * status changes, and takes in_transfer and settled from the settlement feature's signals without an
 * activity. Histories recorded before it (test/histories) replay the first version below, unchanged.
 */
export const LIFECYCLE_V2 = 'lifecycle-v2-local-activities';

export async function transactionWorkflow(input: TransactionWorkflowInput): Promise<Status> {
  if (patched(LIFECYCLE_V2)) return lifecycleV2(input);
  return lifecycleV1(input);
}

/**
 * The signals the settlement feature sends after its set-based statement committed (src/ledger/workflowContract.ts):
 * transferAssigned — this cash_out's row is in_transfer; transferSettled — this row is settled. The final
 * `settled` is therefore trusted by design, not read back: the row was written by the one statement that
 * settled the transfer (settleTransferMembers), in the same database transaction as the transfer itself, and
 * the database refuses any other path (transactions_after_update). What the workflow then upserts is only
 * Temporal's view of it (search attributes, the query, the result).
 */
async function lifecycleV2(input: TransactionWorkflowInput): Promise<Status> {
  // Widened: `show` assigns it from a closure, which control-flow narrowing does not see.
  let status = 'pending' as Status;
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
    assignedTransferId ??= transferId;
    settledTransferId ??= transferId;
  });
  /**
   * The status as Temporal shows it: the TransactionStatus search attribute (SPEC §9: the UI filters by it)
   * is upserted when the status changes, never to the value it already has (the start request set `pending`).
   */
  const show = (next: Status, transferId: string | null) => {
    if (next === status) return;
    status = next;
    upsertSearchAttributes([
      { key: TransactionStatusKey, value: next },
      ...(transferId ? [{ key: TransferIdKey, value: transferId }] : []),
    ]);
  };

  const submitted = await local.submitPayment({ transactionId: input.transactionId });
  show(submitted.status, null);
  if (status === 'pending' && input.direction === 'cash_in') {
    const confirmedOrSettled = () => confirmed || settledTransferId !== null;
    if (submitted.confirmAfterSeconds !== null && submitted.confirmAfterSeconds > 0) {
      await condition(confirmedOrSettled, `${submitted.confirmAfterSeconds} seconds`, { summary: 'network confirms funds' });
    } else if (submitted.confirmAfterSeconds === null) {
      await condition(confirmedOrSettled);
    }
    // Settled already (the row was confirmed by another path and went through a transfer): nothing to write.
    if (settledTransferId === null) {
      const result = await local.transitionTransaction({ transactionId: input.transactionId, toStatus: 'available', transferId: null });
      show(result.status, result.transferId);
    }
  }
  if (status === 'pending' && input.direction === 'cash_out') {
    await condition(() => assignedTransferId !== null);
    if (settledTransferId === null) show('in_transfer', assignedTransferId);
  }
  if (status !== 'settled') {
    await condition(() => settledTransferId !== null);
    show('settled', settledTransferId);
  }
  log.info('transaction settled', { transactionId: input.transactionId });
  return status;
}

/** The lifecycle as first shipped: one regular activity per step. Kept for workflows started before LIFECYCLE_V2. */
async function lifecycleV1(input: TransactionWorkflowInput): Promise<Status> {
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
  // is ahead of `pending` when this run starts late (a queued start) after the settlement moved it.
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
