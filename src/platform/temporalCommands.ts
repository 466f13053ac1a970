import type { PoolClient, Queryable } from '../db/pool';
import { rowOf } from '../assert';

/**
 * The one road to Temporal (issue 32, docs/temporal-road.md): a workflow start or signal that a write needs
 * is a row of temporal_commands (migrations/0024) written in the write's own database transaction, and a
 * worker's drainer (src/ledger/lifecycleDrainer.ts) hands it to Temporal once that transaction has committed,
 * whenever Temporal answers. This module is the SQL side only: request code imports it, and never the
 * Temporal client (the lint refuses that import: .dependency-cruiser.cjs).
 *
 * Delivering a row twice is harmless by construction (a drainer that dies after Temporal accepted a call
 * and before its row left the queue repeats the call):
 * - a start of a workflow id that already exists answers already-started, which counts as delivered, so the
 *   id reuse policy decides what "again" means (reject_duplicate: never a second run);
 * - a signal must be idempotent in the workflow: it sets a flag, or carries a key the workflow dedupes on;
 * - a signal to a workflow that no longer runs is delivered as nothing to do; use signal_with_start when the
 *   workflow may not exist yet.
 * One workflow's commands go one at a time, in creation order (a signal queued after a start reaches the
 * running workflow); different workflows' go concurrently.
 */

export type IdReusePolicy = 'reject_duplicate' | 'allow_duplicate' | 'allow_duplicate_failed_only';

/** What a workflow is started with (start, signal_with_start). */
export interface WorkflowStartSpec {
  workflowType: string;
  /** The task queue the workflow runs on. */
  taskQueue: string;
  args: readonly unknown[];
  idReusePolicy: IdReusePolicy;
  /** Keyword search attributes, by registered name (src/platform/searchAttributes.ts). */
  searchAttributes?: Readonly<Record<string, string>>;
  memo?: Readonly<Record<string, unknown>>;
  summary?: string;
}

export type TemporalCommand =
  | ({ kind: 'start'; workflowId: string } & WorkflowStartSpec)
  | { kind: 'signal'; workflowId: string; signal: string; signalArgs?: readonly unknown[] }
  | ({ kind: 'signal_with_start'; workflowId: string; signal: string; signalArgs?: readonly unknown[] } & WorkflowStartSpec);

/** A queued command as the drainer claims it. */
export interface TemporalCommandRow {
  queueId: string;
  attempts: number;
  command: TemporalCommand;
}

/** What enqueueTemporalCommand needs beside the command: the deployment's task queue (its drainers deliver it) and the write's instant. */
export interface EnqueueContext {
  drainQueue: string;
  now: Date;
}

/**
 * Queues `command` inside the caller's database transaction (`db` is that transaction's client): it reaches
 * Temporal only if the transaction commits. The caller wakes the drainers after its commit (Op.lifecyclePoke;
 * their poll is the fallback). JSON arguments only: args, signal arguments and memo go through jsonb.
 */
export async function enqueueTemporalCommand(db: Queryable, context: EnqueueContext, command: TemporalCommand): Promise<void> {
  const start = command.kind === 'signal' ? null : command;
  const signal = command.kind === 'start' ? null : command;
  await db.query(
    `INSERT INTO temporal_commands (kind, workflow_id, workflow_type, workflow_task_queue, args, id_reuse_policy,
       search_attributes, memo, summary, signal_name, signal_args, drain_queue, created_at)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::jsonb, $8::jsonb, $9, $10, $11::jsonb, $12, $13)`,
    [
      command.kind,
      command.workflowId,
      start?.workflowType ?? null,
      start?.taskQueue ?? null,
      JSON.stringify(start?.args ?? []),
      start?.idReusePolicy ?? null,
      JSON.stringify(start?.searchAttributes ?? {}),
      start?.memo === undefined ? null : JSON.stringify(start.memo),
      start?.summary ?? null,
      signal?.signal ?? null,
      JSON.stringify(signal?.signalArgs ?? []),
      context.drainQueue,
      context.now,
    ],
  );
}

/**
 * enqueueTemporalCommand of one argument-less signal to many workflows, in one statement (an ACH file that
 * settles thousands of deposits queues their confirmations in one round trip), in the given order.
 */
export async function enqueueTemporalSignals(
  db: Queryable,
  context: EnqueueContext,
  signal: string,
  workflowIds: readonly string[],
): Promise<void> {
  if (workflowIds.length === 0) return;
  await db.query(
    `INSERT INTO temporal_commands (kind, workflow_id, signal_name, drain_queue, created_at)
     SELECT 'signal', w.id, $2, $3, $4 FROM unnest($1::text[]) WITH ORDINALITY AS w (id, ord) ORDER BY w.ord`,
    [workflowIds, signal, context.drainQueue, context.now],
  );
}

interface CommandSqlRow {
  queue_id: string;
  attempts: number;
  kind: TemporalCommand['kind'];
  workflow_id: string;
  workflow_type: string | null;
  workflow_task_queue: string | null;
  args: unknown[];
  id_reuse_policy: IdReusePolicy | null;
  search_attributes: Record<string, string>;
  memo: Record<string, unknown> | null;
  summary: string | null;
  signal_name: string | null;
  signal_args: unknown[];
}

function commandOf(row: CommandSqlRow): TemporalCommand {
  const workflowId = row.workflow_id;
  if (row.kind === 'signal') return { kind: 'signal', workflowId, signal: row.signal_name!, signalArgs: row.signal_args };
  const start: WorkflowStartSpec = {
    workflowType: row.workflow_type!,
    taskQueue: row.workflow_task_queue!,
    args: row.args,
    idReusePolicy: row.id_reuse_policy!,
    searchAttributes: row.search_attributes,
    ...(row.memo === null ? {} : { memo: row.memo }),
    ...(row.summary === null ? {} : { summary: row.summary }),
  };
  if (row.kind === 'start') return { kind: 'start', workflowId, ...start };
  return { kind: 'signal_with_start', workflowId, signal: row.signal_name!, signalArgs: row.signal_args, ...start };
}

/**
 * Locks up to `limit` due rows of `drainQueue` in creation order, skipping rows another drainer holds, and
 * only each workflow's oldest row (a later one waits for it to be delivered, even while another drainer
 * holds it). The locks last until the caller's transaction ends.
 */
export async function claimTemporalCommands(
  client: PoolClient,
  input: { drainQueue: string; limit: number },
): Promise<TemporalCommandRow[]> {
  const { rows } = await client.query<CommandSqlRow>(
    `SELECT c.id::text AS queue_id, c.attempts, c.kind, c.workflow_id, c.workflow_type, c.workflow_task_queue, c.args,
            c.id_reuse_policy, c.search_attributes, c.memo, c.summary, c.signal_name, c.signal_args
       FROM temporal_commands c
      WHERE c.drain_queue = $1 AND c.next_attempt_at <= now()
        AND NOT EXISTS (SELECT 1 FROM temporal_commands e WHERE e.workflow_id = c.workflow_id AND e.id < c.id)
      ORDER BY c.id LIMIT $2 FOR UPDATE OF c SKIP LOCKED`,
    [input.drainQueue, input.limit],
  );
  return rows.map((row) => ({ queueId: row.queue_id, attempts: row.attempts, command: commandOf(row) }));
}

/** Ends a pass: delivered rows leave the queue; failed ones wait `retryAfterMs` before their next attempt. */
export async function settleTemporalCommands(
  client: PoolClient,
  input: { doneIds: readonly string[]; failed: ReadonlyArray<{ id: string; retryAfterMs: number }> },
): Promise<void> {
  if (input.doneIds.length > 0) await client.query(`DELETE FROM temporal_commands WHERE id = ANY($1::bigint[])`, [input.doneIds]);
  if (input.failed.length > 0)
    await client.query(
      `UPDATE temporal_commands c SET attempts = c.attempts + 1, next_attempt_at = now() + f.retry_ms * interval '1 millisecond'
         FROM unnest($1::bigint[], $2::int[]) AS f (id, retry_ms) WHERE c.id = f.id`,
      [input.failed.map((row) => row.id), input.failed.map((row) => row.retryAfterMs)],
    );
}

/**
 * Everything waiting for Temporal to accept it, of every kind: the lifecycle queue's starts and confirmations
 * and the command queue's starts and signals (issue 32), and how long the oldest has waited (0 when none).
 */
export async function temporalBacklog(db: Queryable): Promise<{ count: number; oldestAgeSeconds: number }> {
  const { rows } = await db.query<{ count: number; oldest_age_seconds: number }>(
    `SELECT count(*)::int AS count, coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest_age_seconds
       FROM (SELECT created_at FROM lifecycle_queue UNION ALL SELECT created_at FROM temporal_commands) waiting`,
  );
  const backlog = rowOf(rows, 'a select of aggregates answers one row');
  return { count: backlog.count, oldestAgeSeconds: Math.max(0, backlog.oldest_age_seconds) };
}
