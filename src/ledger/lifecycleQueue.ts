import type { PoolClient, Queryable } from '../db/pool';
import { TRANSACTION_COLUMNS, type TransactionRow } from './transactions';

/**
 * The lifecycle queue's SQL (migrations/0023): what a committed write asks of Temporal — start a
 * transaction's workflow, or signal it that the network confirmed its funds — kept in Postgres until a
 * worker's drainer (src/ledger/lifecycleDrainer.ts) has had Temporal accept it. Start rows are written by
 * insertTransaction in the statement that records the transaction.
 */

export type LifecycleQueueKind = 'start' | 'confirm_funds';

export interface LifecycleQueueRow {
  queue_id: string;
  kind: LifecycleQueueKind;
  attempts: number;
  created_at_queue: Date;
  transaction: TransactionRow;
}

/** Queues a confirmation for a transaction, inside the caller's database transaction. */
export async function enqueueConfirmFunds(db: Queryable, input: { transactionId: string; taskQueue: string; now: Date }): Promise<void> {
  await db.query(`INSERT INTO lifecycle_queue (transaction_id, kind, task_queue, created_at) VALUES ($1, 'confirm_funds', $2, $3)`, [
    input.transactionId,
    input.taskQueue,
    input.now,
  ]);
}

/**
 * Locks up to `limit` due rows of `taskQueue` (and rows of no queue, from before 0023) in creation order,
 * skipping rows another drainer holds: two drainers never hold one row, so never both start it. The locks
 * last until the caller's transaction ends.
 */
export async function claimLifecycleRows(client: PoolClient, input: { taskQueue: string; limit: number }): Promise<LifecycleQueueRow[]> {
  const { rows } = await client.query<
    { queue_id: string; kind: LifecycleQueueKind; attempts: number; created_at_queue: Date } & TransactionRow
  >(
    `WITH claimed AS (
       SELECT q.id, q.kind, q.attempts, q.created_at, q.transaction_id FROM lifecycle_queue q
        WHERE (q.task_queue = $1 OR q.task_queue IS NULL) AND q.next_attempt_at <= now()
        ORDER BY q.id LIMIT $2 FOR UPDATE OF q SKIP LOCKED)
     SELECT c.id AS queue_id, c.kind, c.attempts, c.created_at AS created_at_queue, ${TRANSACTION_COLUMNS}
       FROM claimed c JOIN transactions t ON t.id = c.transaction_id ORDER BY c.id`,
    [input.taskQueue, input.limit],
  );
  return rows.map(({ queue_id, kind, attempts, created_at_queue, ...transaction }) => ({
    queue_id,
    kind,
    attempts,
    created_at_queue,
    transaction,
  }));
}

/**
 * Ends a pass over claimed rows: the ones Temporal accepted leave the queue; the failed ones wait
 * `retryAfterMs[i]` before their next attempt. One statement each.
 */
export async function settleLifecycleRows(
  client: PoolClient,
  input: { doneIds: readonly string[]; failed: ReadonlyArray<{ id: string; retryAfterMs: number }> },
): Promise<void> {
  if (input.doneIds.length > 0) await client.query(`DELETE FROM lifecycle_queue WHERE id = ANY($1::bigint[])`, [input.doneIds]);
  if (input.failed.length > 0)
    await client.query(
      `UPDATE lifecycle_queue q SET attempts = q.attempts + 1, next_attempt_at = now() + f.retry_ms * interval '1 millisecond'
         FROM unnest($1::bigint[], $2::int[]) AS f (id, retry_ms) WHERE q.id = f.id`,
      [input.failed.map((row) => row.id), input.failed.map((row) => row.retryAfterMs)],
    );
}

/** Since when a transaction waits for Temporal to accept its workflow (null: it does not wait). */
export async function awaitingWorkflowSince(db: Queryable, transactionId: string): Promise<Date | null> {
  const { rows } = await db.query<{ created_at: Date }>(
    `SELECT created_at FROM lifecycle_queue WHERE transaction_id = $1 AND kind = 'start'`,
    [transactionId],
  );
  return rows[0]?.created_at ?? null;
}
