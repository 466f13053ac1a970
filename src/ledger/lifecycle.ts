import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import type { Logger } from 'pino';
import type { Pool } from '../db/pool';
import { forEachBounded } from '../concurrency';
import { ledgerMetrics } from '../metrics';
import {
  AccountIdKey,
  OrganizationIdKey,
  SettlementDateKey,
  TransactionDirectionKey,
  TransactionStatusKey,
} from '../platform/searchAttributes';
import { confirmFundsSignal, TRANSACTION_WORKFLOW_TYPE, type TransactionWorkflowInput } from './contract';
import { markWorkflowsStarted, transactionsWithoutWorkflow, unsettledTransactionsPage, type TransactionRow } from './transactions';

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
 * Starts the lifecycle workflow of one transaction; id = transaction id. Starting twice is success: the
 * api after commit and the reconciler may both try. REJECT_DUPLICATE: a transaction's lifecycle runs once,
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
 * Notes confirmed starts in transactions_awaiting_workflow, many per statement: a start is marked once the
 * rows gathered in the last few milliseconds are flushed together, one DELETE instead of one write per
 * request. A mark lost to a crash only costs the reconciler one duplicate start (answered already_started).
 * One per app (its Edge, src/http/edge.ts), closed with it.
 */
export class StartMarks {
  private pending: string[] = [];
  private timer: NodeJS.Timeout | null = null;
  private readonly flushing = new Set<Promise<void>>();

  constructor(
    private readonly pool: Pool,
    private readonly log: Logger,
  ) {}

  add(transactionId: string): void {
    this.pending.push(transactionId);
    if (this.pending.length >= START_MARKS.batchMax) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), START_MARKS.delayMs);
  }

  /** Writes what is pending now and waits for every write, so none outlives the pool it writes through. */
  async close(): Promise<void> {
    if (this.pending.length > 0) this.flush();
    await Promise.all([...this.flushing]);
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = [];
    const written = markWorkflowsStarted(this.pool, batch).catch((error: unknown) =>
      this.log.warn({ err: error, transactions: batch.length }, 'marking workflow starts failed; the reconciler will find them started'),
    );
    this.flushing.add(written);
    void written.finally(() => this.flushing.delete(written));
  }
}

const START_MARKS = { delayMs: 20, batchMax: 200 };

/**
 * After the request's commit: start the workflow, then note it in `marks` (batched, not awaited: the answer
 * does not wait for that write, and should it be lost the reconciler finds the workflow already started). A
 * failed start is left to the reconciler, never to the client.
 */
export function afterCommitStart(start: {
  client: Client;
  taskQueue: string;
  log: Logger;
  marks: StartMarks;
  row: TransactionRow;
}): () => Promise<void> {
  const { client, taskQueue, log, marks, row } = start;
  return async () => {
    // Counted here, after the request's commit, which runs once per executed request (a replay does not).
    ledgerMetrics.transactionsTotal.inc({ direction: row.direction, type: row.type });
    try {
      await client.withDeadline(Date.now() + RECONCILER_LIMITS.startDeadlineMs, () => startTransactionWorkflow(client, taskQueue, row));
      marks.add(row.id);
    } catch (error) {
      log.warn({ err: error, transaction_id: row.id }, 'starting the transaction workflow failed; the reconciler will retry');
    }
  };
}

/** Sandbox: the network confirms a cash_in now. Starts the workflow too if it somehow is not running. */
export async function signalConfirmFunds(client: Client, taskQueue: string, row: TransactionRow): Promise<void> {
  await client.workflow.signalWithStart(TRANSACTION_WORKFLOW_TYPE, {
    ...lifecycleOptions(taskQueue, row),
    signal: confirmFundsSignal,
    signalArgs: [],
  });
}

/**
 * One pass of the reconciler: every transaction recorded more than `graceMs` ago whose workflow never
 * reported running gets started (or found already started) and marked. Returns how many it started.
 */
export async function reconcileOnce(options: {
  pool: Pool;
  client: Client;
  taskQueue: string;
  now: Date;
  graceMs?: number;
}): Promise<number> {
  const { pool, client, taskQueue, now, graceMs = RECONCILER_LIMITS.graceMs } = options;
  const rows = await transactionsWithoutWorkflow(pool, new Date(now.getTime() - graceMs), RECONCILER_LIMITS.batchMax);
  let started = 0;
  for (const row of rows) {
    if ((await startTransactionWorkflow(client, taskQueue, row)) === 'started') started += 1;
    await markWorkflowsStarted(pool, [row.id]);
  }
  return started;
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

/** Runs reconcileOnce every intervalMs until stopped. One per worker process; concurrent passes are harmless. */
export function startReconciler(options: {
  pool: Pool;
  client: Client;
  taskQueue: string;
  log: Logger;
  intervalMs?: number;
  /** Also run sweepLifecycles once at start (a Temporal server whose state can roll back). */
  sweep?: boolean;
}): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let pass: Promise<void> = Promise.resolve();
  const sweeping: Promise<void> = options.sweep
    ? sweepLifecycles(options.pool, options.client, options.taskQueue, { stopped: () => stopped })
        .then((started) => {
          if (started > 0) options.log.warn({ started }, 'start-up sweep started workflows the Temporal server had lost');
        })
        .catch((error: unknown) => options.log.warn({ err: error }, 'start-up sweep failed'))
    : Promise.resolve();
  const tick = () => {
    pass = reconcileOnce({ pool: options.pool, client: options.client, taskQueue: options.taskQueue, now: new Date() })
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
      await Promise.all([pass, sweeping]);
    },
  };
}
