import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import type { Logger } from 'pino';
import type { Pool } from '../db/pool';
import {
  AccountIdKey, OrganizationIdKey, SettlementDateKey, TransactionDirectionKey, TransactionStatusKey,
} from '../platform/searchAttributes';
import { confirmFundsSignal, TRANSACTION_WORKFLOW_TYPE, type TransactionWorkflowInput } from './contract';
import { markWorkflowStarted, transactionsWithoutWorkflow, type TransactionRow } from './transactions';

/** The Temporal client side of the transaction lifecycle: starting, signalling and reconciling its workflows. */

/** Limits of the reconciler: how long a fresh row may wait for its api to start it, and batch sizes. */
export const RECONCILER_LIMITS = {
  /** How long a POST waits for Temporal to accept a start before answering anyway (the reconciler finishes it). */
  startDeadlineMs: 5_000,
  graceMs: 5_000,
  intervalMs: 2_000,
  batchMax: 100,
};

/** Id, task queue, input and search attributes of one transaction's lifecycle workflow. */
function lifecycleOptions(taskQueue: string, row: TransactionRow) {
  const input: TransactionWorkflowInput = {
    transactionId: row.id, organizationId: row.organization_id, accountId: row.account_id, direction: row.direction, date: row.date,
  };
  return {
    workflowId: row.id,
    taskQueue,
    args: [input],
    typedSearchAttributes: [
      { key: OrganizationIdKey, value: row.organization_id },
      { key: AccountIdKey, value: row.account_id },
      { key: TransactionStatusKey, value: row.status },
      { key: TransactionDirectionKey, value: row.direction },
      { key: SettlementDateKey, value: row.date },
    ],
  };
}

/**
 * Starts the lifecycle workflow of one transaction; id = transaction id. Starting twice is success: the
 * api after commit and the reconciler may both try. REJECT_DUPLICATE: a transaction's lifecycle runs once,
 * even after it finished.
 */
export async function startTransactionWorkflow(client: Client, taskQueue: string, row: TransactionRow): Promise<'started' | 'already_started'> {
  try {
    await client.workflow.start(TRANSACTION_WORKFLOW_TYPE, {
      ...lifecycleOptions(taskQueue, row),
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      staticSummary: `${row.direction} ${row.amount_cents} cents`,
    });
    return 'started';
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return 'already_started';
    throw error;
  }
}

/**
 * After the request's commit: start the workflow, then note it on the row (not awaited: the answer does
 * not wait for that write, and should it be lost the reconciler finds the workflow already started). A
 * failed start is left to the reconciler, never to the client.
 */
export function afterCommitStart(client: Client, taskQueue: string, log: Logger, pool: Pool, row: TransactionRow): () => Promise<void> {
  return async () => {
    try {
      await client.withDeadline(Date.now() + RECONCILER_LIMITS.startDeadlineMs, () => startTransactionWorkflow(client, taskQueue, row));
      markWorkflowStarted(pool, row.id, new Date()).catch((error: unknown) => log.warn({ err: error, transaction_id: row.id }, 'marking workflow_started_at failed'));
    } catch (error) {
      log.warn({ err: error, transaction_id: row.id }, 'starting the transaction workflow failed; the reconciler will retry');
    }
  };
}

/** Sandbox: the network confirms a cash_in now. Starts the workflow too if it somehow is not running. */
export async function signalConfirmFunds(client: Client, taskQueue: string, row: TransactionRow): Promise<void> {
  await client.workflow.signalWithStart(TRANSACTION_WORKFLOW_TYPE, { ...lifecycleOptions(taskQueue, row), signal: confirmFundsSignal, signalArgs: [] });
}

/**
 * One pass of the reconciler: every transaction recorded more than `graceMs` ago whose workflow never
 * reported running gets started (or found already started) and marked. Returns how many it started.
 */
export async function reconcileOnce(pool: Pool, client: Client, taskQueue: string, now: Date, graceMs = RECONCILER_LIMITS.graceMs): Promise<number> {
  const rows = await transactionsWithoutWorkflow(pool, new Date(now.getTime() - graceMs), RECONCILER_LIMITS.batchMax);
  let started = 0;
  for (const row of rows) {
    if ((await startTransactionWorkflow(client, taskQueue, row)) === 'started') started += 1;
    await markWorkflowStarted(pool, row.id, now);
  }
  return started;
}

/** Runs reconcileOnce every intervalMs until stopped. One per worker process; concurrent passes are harmless. */
export function startReconciler(options: { pool: Pool; client: Client; taskQueue: string; log: Logger; intervalMs?: number }): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<void> = Promise.resolve();
  const tick = () => {
    pass = reconcileOnce(options.pool, options.client, options.taskQueue, new Date())
      .then((started) => {
        if (started > 0) options.log.warn({ started }, 'reconciler started workflows of transactions left without one');
      })
      .catch((error: unknown) => options.log.warn({ err: error }, 'reconciler pass failed'))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, options.intervalMs ?? RECONCILER_LIMITS.intervalMs);
      });
  };
  timer = setTimeout(tick, options.intervalMs ?? RECONCILER_LIMITS.intervalMs);
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await pass;
    },
  };
}
