import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import type { Pool } from '../db/pool';
import { forEachBounded } from '../concurrency';
import {
  AccountIdKey,
  OrganizationIdKey,
  SettlementDateKey,
  TransactionDirectionKey,
  TransactionStatusKey,
} from '../platform/searchAttributes';
import { confirmFundsSignal, TRANSACTION_WORKFLOW_TYPE, type TransactionWorkflowInput } from './workflowContract';
import { unsettledTransactionsPage, type TransactionRow } from './transactions';

/** The Temporal client side of the transaction lifecycle: starting and signalling its workflows (the drainer: lifecycleDrainer.ts). */

/** Id, task queue, input and search attributes of one transaction's lifecycle workflow. */
function lifecycleOptions(taskQueue: string, row: TransactionRow) {
  const input: TransactionWorkflowInput = {
    transactionId: row.id,
    organizationId: row.organization_id,
    accountId: row.account_id,
    direction: row.direction,
    date: row.date,
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
 * Starts the lifecycle workflow of one transaction; id = transaction id. Starting twice is success: a drainer
 * that died after Temporal accepted a start and before its row left the queue tries again. REJECT_DUPLICATE: a transaction's lifecycle runs once,
 * even after it finished.
 */
export async function startTransactionWorkflow(
  client: Client,
  taskQueue: string,
  row: TransactionRow,
): Promise<'started' | 'already_started'> {
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
 * Sandbox: the network confirms a cash_in now; starts the workflow with the signal if it is not running yet.
 * REJECT_DUPLICATE: a lifecycle that already finished (the transaction was confirmed and settled before the
 * queued confirmation got here) is never started a second time; that answer is success, nothing is left to confirm.
 */
export async function signalConfirmFunds(client: Client, taskQueue: string, row: TransactionRow): Promise<'signalled' | 'already_closed'> {
  try {
    await client.workflow.signalWithStart(TRANSACTION_WORKFLOW_TYPE, {
      ...lifecycleOptions(taskQueue, row),
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      signal: confirmFundsSignal,
      signalArgs: [],
    });
    return 'signalled';
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return 'already_closed';
    throw error;
  }
}

/**
 * Starts again the workflow of every unsettled transaction whose workflow Temporal no longer knows, and
 * returns how many it started. Only a Temporal server whose state can roll back needs this: the embedded dev
 * server `npm start` runs keeps its state in SQLite with synchronous=NORMAL (ops/devServer.ts), so a
 * power loss can take back the last seconds of workflow starts it accepted, while Postgres — the ledger —
 * keeps the transactions. REJECT_DUPLICATE makes each call a no-op for a workflow that exists (running or
 * closed), so the sweep is safe to run at any time and from several workers at once.
 */
export async function sweepLifecycles(
  pool: Pool,
  client: Client,
  taskQueue: string,
  options: { concurrency?: number; pageSize?: number; stopped?: () => boolean; organizationId?: string } = {},
): Promise<number> {
  let started = 0;
  let afterId: string | null = null;
  while (!options.stopped?.()) {
    const rows = await unsettledTransactionsPage(pool, {
      afterId,
      limit: options.pageSize ?? 500,
      ...(options.organizationId ? { organizationId: options.organizationId } : {}),
    });
    if (rows.length === 0) return started;
    afterId = rows[rows.length - 1]!.id;
    await forEachBounded(rows, options.concurrency ?? 8, async (row) => {
      if ((await startTransactionWorkflow(client, taskQueue, row)) === 'started') started += 1;
    });
  }
  return started;
}
