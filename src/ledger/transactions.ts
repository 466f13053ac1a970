import { Filters, keysetPage, type ListPage, type PageRequest } from '../db/paging';
import type { Queryable } from '../db/pool';
import { newId } from '../ids';
import { sourceMetadataContains } from '../metadata/sql';
import { transitionKind, type Direction, type TransactionStatus } from './workflowContract';
import type { Transaction, TransactionListQuery, TransactionType } from './schemas';
import { rowOf } from '../assert';
import { injectedBug } from '../simBugs';

/**
 * The transactions table's one writer, and its reads. Every write here commits with its history row and
 * balance effect (the 0005 triggers, schema.sql) and its outbox events, inside the caller's database
 * transaction. The Transaction the API shows is rendered by the database (transaction_json, schema.sql) and
 * read with every row, so a response and an event can never disagree.
 */

export interface TransactionRow {
  id: string;
  organization_id: string;
  account_id: string;
  direction: Direction;
  type: TransactionType;
  source_id: string | null;
  amount_cents: number;
  status: TransactionStatus;
  /** The settlement date, as text so node-postgres never turns a calendar date into a local-time Date. */
  date: string;
  transfer_id: string | null;
  created_at: Date;
  /** The seed's Transaction exactly as the API shows it (transaction_json). */
  json: Transaction;
}

/** Every query reads transactions as `t` (the lifecycle queue's claim too). */
export const TRANSACTION_COLUMNS = `t.id, t.organization_id, t.account_id, t.direction, t.type, t.source_id, t.amount_cents, t.status,
  to_char(t.date, 'YYYY-MM-DD') AS date, t.transfer_id, t.created_at, transaction_json(t) AS json`;
const COLUMNS = TRANSACTION_COLUMNS;

/** What a window for D (`$2`) picks up (SPEC §10): the rule is eligible_for_window (migrations/0025), its one definition. */
export const ELIGIBLE_FOR_WINDOW = `eligible_for_window(t.transfer_id, t.direction, t.status, t.date, $2::date)`;

export interface NewTransaction {
  organizationId: string;
  accountId: string;
  direction: Direction;
  type: TransactionType;
  sourceId: string | null;
  amountCents: number;
  date: string;
  createdAt: Date;
  /** The task queue its lifecycle workflow runs on: the drainers of that queue start it (lifecycle_queue, 0023). */
  taskQueue: string;
}

/**
 * Records transactions in `pending`, each with its transaction.created event and its `start` row in the
 * lifecycle queue (0023), in one statement inside the caller's database transaction, and returns them in the
 * order given: each workflow's start commits with its transaction, and a worker's drainer has Temporal start
 * it (src/ledger/lifecycleDrainer.ts).
 */
export async function insertTransactions(db: Queryable, inputs: readonly NewTransaction[]): Promise<TransactionRow[]> {
  if (inputs.length === 0) return [];
  const ids = inputs.map(() => newId('txn'));
  const { rows } = await db.query<TransactionRow>({
    // Named: src/events/outbox.ts says why.
    name: 'transactions_insert',
    text: `WITH ${transactionsInsertCtes(1)} SELECT * FROM t`,
    values: transactionsInsertValues(ids, inputs),
  });
  await afterTransactionsInsert(db, ids);
  const stored = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => stored.get(id)!);
}

/**
 * insertTransactions' statement as data-modifying `WITH` queries, for a statement that records more with them
 * (src/ledger/intents.ts: intents and their transactions in one): `t` answers the rows (TRANSACTION_COLUMNS)
 * and its ten parameters, transactionsInsertValues, start at `$first`.
 */
export function transactionsInsertCtes(first: number): string {
  const $ = (n: number) => `$${first + n - 1}`;
  return `t AS (
       INSERT INTO transactions AS t (id, organization_id, account_id, direction, type, source_id, amount_cents, status, date, created_at, updated_at)
       SELECT id, organization_id, account_id, direction, type, source_id, amount_cents, 'pending', date, created_at, created_at
         FROM unnest(${$(1)}::text[], ${$(2)}::text[], ${$(3)}::text[], ${$(4)}::text[], ${$(5)}::text[], ${$(6)}::text[], ${$(7)}::bigint[], ${$(8)}::date[], ${$(9)}::timestamptz[])
              WITH ORDINALITY AS n (id, organization_id, account_id, direction, type, source_id, amount_cents, date, created_at, ord)
        ORDER BY ord
       RETURNING ${COLUMNS}
     ), created AS (
       INSERT INTO events (organization_id, type, data, created_at)
       SELECT organization_id, 'transaction.created', json::jsonb, created_at FROM t ORDER BY array_position(${$(1)}::text[], id)
     ), queued AS (
       INSERT INTO lifecycle_queue (transaction_id, kind, task_queue, created_at)
       SELECT t.id, 'start', q.task_queue, t.created_at
         FROM t JOIN unnest(${$(1)}::text[], ${$(10)}::text[]) WITH ORDINALITY AS q (id, task_queue, ord) USING (id)
        ORDER BY q.ord
     )`;
}

/** transactionsInsertCtes' parameters: the new transactions' ids, then the inputs' columns. */
export function transactionsInsertValues(ids: readonly string[], inputs: readonly NewTransaction[]): unknown[] {
  const column = <K extends keyof NewTransaction>(key: K) => inputs.map((input) => input[key]);
  return [
    ids,
    column('organizationId'),
    column('accountId'),
    column('direction'),
    column('type'),
    column('sourceId'),
    column('amountCents'),
    column('date'),
    column('createdAt'),
    column('taskQueue'),
  ];
}

/** What follows every statement of transactionsInsertCtes: the simulation's negative control, when injected. */
export async function afterTransactionsInsert(db: Queryable, ids: readonly string[]): Promise<void> {
  if (injectedBug('skip_lifecycle_start')) {
    // Negative control (src/simBugs.ts): about one transaction in four never gets its lifecycle started.
    await db.query(`DELETE FROM lifecycle_queue WHERE kind = 'start' AND transaction_id = ANY($1)`, [
      ids.filter((id) => id.charCodeAt(id.length - 1) % 4 === 0),
    ]);
  }
}

/** insertTransactions of one. */
export async function insertTransaction(db: Queryable, input: NewTransaction): Promise<TransactionRow> {
  return (await insertTransactions(db, [input]))[0]!;
}

export async function getTransactionRow(db: Queryable, transactionId: string, organizationId?: string): Promise<TransactionRow | null> {
  const { rows } = await db.query<TransactionRow>({
    // Named: GET /transaction/{id} is the hottest read; each connection parses and plans it once.
    name: organizationId ? 'transaction_of_organization' : 'transaction_by_id',
    text: `SELECT ${COLUMNS} FROM transactions t WHERE t.id = $1 ${organizationId ? 'AND t.organization_id = $2' : ''}`,
    values: organizationId ? [transactionId, organizationId] : [transactionId],
  });
  return rows[0] ?? null;
}

export async function getTransaction(db: Queryable, organizationId: string, transactionId: string): Promise<Transaction | null> {
  // Only the rendered Transaction: GET /transaction/{id} is the hottest read, and the row's other columns
  // would be converted (dates, to_char) on both sides for nothing.
  const { rows } = await db.query<{ json: Transaction }>({
    name: 'transaction_json_of_organization',
    text: `SELECT transaction_json(t) AS json FROM transactions t WHERE t.id = $1 AND t.organization_id = $2`,
    values: [transactionId, organizationId],
  });
  return rows[0]?.json ?? null;
}

/** The transactions each source (an intent, refund or dispute, per `type`) created, oldest first. */
export async function transactionsOfSources(
  db: Queryable,
  sources: ReadonlyArray<{ id: string; organization_id: string }>,
  type: TransactionType,
): Promise<Map<string, Transaction[]>> {
  const bySource = new Map<string, Transaction[]>();
  if (sources.length === 0) return bySource;
  // Each source with its own organization, so a page that spans organizations (the operator CLI's) is one query.
  const { rows } = await db.query<{ source_id: string; json: Transaction }>(
    `SELECT t.source_id, transaction_json(t) AS json FROM transactions t
      WHERE t.type = $3 AND (t.organization_id, t.source_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
      ORDER BY t.created_at, t.id`,
    [sources.map((source) => source.organization_id), sources.map((source) => source.id), type],
  );
  for (const row of rows) bySource.set(row.source_id, [...(bySource.get(row.source_id) ?? []), row.json]);
  return bySource;
}

async function pageOfTransactions(db: Queryable, filters: Filters, page: PageRequest): Promise<ListPage<Transaction>> {
  const found = await keysetPage<{ id: string; json: Transaction }>(db, {
    select: 't.id, transaction_json(t) AS json',
    from: 'transactions t',
    table: 'transactions',
    alias: 't',
    filters,
    page,
  });
  return { ...found, data: found.data.map((row) => row.json) };
}

/**
 * The ids of everything whose transactions belong to the user `?`: the user's intents, and the refunds and
 * disputes of those intents (intents_by_user, refunds_by_intent, disputes_by_intent).
 */
const SOURCES_OF_USER = `SELECT s.id FROM intents i
  CROSS JOIN LATERAL (SELECT i.id UNION ALL SELECT r.id FROM refunds r WHERE r.intent_id = i.id
                      UNION ALL SELECT d.id FROM disputes d WHERE d.intent_id = i.id) s
  WHERE i.organization_id = $1 AND i.user_id = ?`;

export async function listTransactions(db: Queryable, organizationId: string, query: TransactionListQuery): Promise<ListPage<Transaction>> {
  const filters = new Filters('t.organization_id', organizationId)
    .optional('t.status = ?', query.status)
    .optional('t.direction = ?', query.direction)
    .optional('t.type = ?', query.type)
    .optional('t.account_id = ?', query.account_id)
    .optional('t.date = ?::date', query.date)
    .optional('t.transfer_id = ?', query.transfer_id)
    .optional('t.created_at >= ?::timestamptz', query['created_at.gte'])
    .optional('t.created_at < ?::timestamptz', query['created_at.lt'])
    .optional(`t.source_id = ANY (ARRAY(${SOURCES_OF_USER}))`, query.user_id);
  return pageOfTransactions(db, sourceMetadataContains(filters, 't', query.metadata), query);
}

/** A page of a transfer's transactions, newest first. */
export async function listTransferTransactions(
  db: Queryable,
  organizationId: string,
  transferId: string,
  page: PageRequest,
): Promise<ListPage<Transaction>> {
  return pageOfTransactions(db, new Filters('t.organization_id', organizationId).add('t.transfer_id = ?', transferId), page);
}

export class InvalidTransitionError extends Error {
  override name = 'InvalidTransitionError';
  constructor(
    readonly transactionId: string,
    readonly from: TransactionStatus,
    readonly to: TransactionStatus,
    readonly direction: Direction,
  ) {
    super(`transaction ${transactionId} (${direction}) cannot go from ${from} to ${to}`);
  }
}

export interface TransitionResult {
  /** The status the transaction is in now. */
  status: TransactionStatus;
  /** False when the transaction already was at (or past) the target: the call was a no-op. */
  changed: boolean;
  /** The transfer the transaction belongs to, if any (cash_in may be batched while still available). */
  transferId: string | null;
  transaction: Transaction;
}

/**
 * The one way a single transaction changes status, inside the caller's database transaction: the status,
 * the history row and the balance effect (both by trigger) and the transaction.status_changed event commit
 * together. Idempotent per (transaction id, target status): a transaction already at or past the target is
 * left alone. A move outside the state machine (src/ledger/workflowContract.ts) throws InvalidTransitionError.
 * `transferId` is required for in_transfer and settled (a transaction is in one transfer, ever; the trigger
 * refuses a second).
 */
export async function applyTransition(
  db: Queryable,
  input: { transactionId: string; toStatus: TransactionStatus; transferId?: string | null; now: Date },
): Promise<TransitionResult> {
  const { rows } = await db.query<TransactionRow>(`SELECT ${COLUMNS} FROM transactions t WHERE t.id = $1 FOR UPDATE`, [
    input.transactionId,
  ]);
  const row = rows[0];
  if (!row) throw new Error(`no transaction ${input.transactionId}`);
  const kind = transitionKind(row.direction, row.status, input.toStatus);
  if (kind === 'illegal') throw new InvalidTransitionError(row.id, row.status, input.toStatus, row.direction);
  if (kind === 'replay') return { status: row.status, changed: false, transferId: row.transfer_id, transaction: row.json };
  // The move and its transaction.status_changed event in one statement: the move's trigger takes a balance slot
  // of the account (shared by every writer of that account), held from here to the commit, so nothing else is
  // sent in between.
  const { rows: updated } = await db.query<TransactionRow>({
    name: 'transaction_transition',
    text: `WITH moved AS (
       UPDATE transactions AS t SET status = $2, transfer_id = $3, updated_at = $4 WHERE t.id = $1 RETURNING ${COLUMNS}
     ), recorded AS (
       INSERT INTO events (organization_id, type, data, created_at)
       SELECT organization_id, 'transaction.status_changed', json::jsonb || jsonb_build_object('previous_status', $5::text), $4 FROM moved
     )
     SELECT * FROM moved`,
    values: [row.id, input.toStatus, input.transferId ?? row.transfer_id, input.now, row.status],
  });
  const next = rowOf(updated, 'the transaction was locked FOR UPDATE above, so the UPDATE finds it');
  return { status: next.status, changed: true, transferId: next.transfer_id, transaction: next.json };
}

/**
 * Settlement's set-based transitions, one statement each over a whole window: every eligible transaction of
 * the account joins `transferId` (cash_out → in_transfer; cash_in stays available), with each cash_out's
 * transaction.status_changed event. Returns the members' count and signed net (cash_in − cash_out).
 */
export async function assignWindowToTransfer(
  db: Queryable,
  input: { accountId: string; windowDate: string; transferId: string; now: Date },
): Promise<{ count: number; cashOutCount: number; netCents: number }> {
  const { rows } = await db.query<{ count: number; cash_out_count: number; net_cents: number }>(
    `WITH moved AS (
       UPDATE transactions AS t SET transfer_id = $3, updated_at = $4,
              status = transfer_member_status(t.direction)
        WHERE t.account_id = $1 AND ${ELIGIBLE_FOR_WINDOW}
       RETURNING t.direction, t.amount_cents)
     SELECT count(*)::int AS count, (count(*) FILTER (WHERE direction = 'cash_out'))::int AS cash_out_count,
            coalesce(sum(transaction_signed_cents(direction, amount_cents)), 0)::bigint AS net_cents
       FROM moved`,
    [input.accountId, input.windowDate, input.transferId, input.now],
  );
  // The events follow the move; every member shares its transfer's summary, read once.
  await db.query(
    `INSERT INTO events (organization_id, type, data, created_at)
     SELECT t.organization_id, 'transaction.status_changed', transaction_json(t, s.summary)::jsonb || jsonb_build_object('previous_status', 'pending'), $2
       FROM transactions t, (SELECT transfer_summary_json('in_transfer', $1) AS summary) s
      WHERE t.transfer_id = $1 AND t.direction = 'cash_out'
      ORDER BY t.created_at, t.id`,
    [input.transferId, input.now],
  );
  const moved = rowOf(rows, 'a select of aggregates answers one row');
  if (injectedBug('double_refund_net')) {
    // Negative control (src/simBugs.ts): each refund member counted twice in the net.
    const refunds = await db.query<{ cents: number }>(
      `SELECT coalesce(sum(amount_cents), 0)::bigint AS cents FROM transactions WHERE transfer_id = $1 AND type = 'refund'`,
      [input.transferId],
    );
    moved.net_cents = Number(moved.net_cents) - Number(rowOf(refunds.rows, 'a sum answers one row').cents);
  }
  return { count: moved.count, cashOutCount: moved.cash_out_count, netCents: moved.net_cents };
}

/** Every member of a settled transfer becomes `settled`, with its transaction.status_changed event. Returns how many moved. */
export async function settleTransferMembers(db: Queryable, transferId: string, now: Date): Promise<number> {
  const { rows } = await db.query<{ count: number }>(
    `WITH moved AS (
       UPDATE transactions t SET status = 'settled', updated_at = $2 WHERE t.transfer_id = $1 AND t.status <> 'settled'
       RETURNING t)
     , written AS (
       INSERT INTO events (organization_id, type, data, created_at)
       SELECT (m.t).organization_id, 'transaction.status_changed',
              transaction_json(m.t, s.summary)::jsonb || jsonb_build_object('previous_status',
                transfer_member_status((m.t).direction)), $2
         FROM moved m, (SELECT transfer_summary_json('settled', $1) AS summary) s ORDER BY (m.t).created_at, (m.t).id
       RETURNING 1)
     SELECT count(*)::int AS count FROM written`,
    [transferId, now],
  );
  return rowOf(rows, 'count(*) answers one row').count;
}

/** One page of a transfer's members (newest first), as ids for notifications. */
export async function memberIdsPage(
  db: Queryable,
  input: { transferId: string; direction?: 'cash_out'; after: { createdAt: string; id: string } | null; limit: number },
): Promise<Array<{ id: string; created_at: Date }>> {
  const params: unknown[] = [input.transferId, input.limit];
  let where = '';
  if (input.direction) {
    params.push(input.direction);
    where += ` AND direction = $${params.length}`;
  }
  if (input.after) {
    params.push(input.after.createdAt, input.after.id);
    where += ` AND (created_at, id) < ($${params.length - 1}::timestamptz, $${params.length})`;
  }
  const { rows } = await db.query<{ id: string; created_at: Date }>(
    `SELECT id, created_at FROM transactions WHERE transfer_id = $1 ${where} ORDER BY created_at DESC, id DESC LIMIT $2`,
    params,
  );
  return rows;
}

/**
 * One page (keyset on id) of the transactions not yet settled and not awaiting a first start: the ones whose
 * workflow Temporal has accepted and should still be running. The start-up sweep walks them.
 */
export async function unsettledTransactionsPage(
  db: Queryable,
  input: { afterId: string | null; limit: number; organizationId?: string },
): Promise<TransactionRow[]> {
  const { rows } = await db.query<TransactionRow>(
    `SELECT ${COLUMNS} FROM transactions t
      WHERE t.status <> 'settled' AND ($1::text IS NULL OR t.id > $1) AND ($3::text IS NULL OR t.organization_id = $3)
        AND NOT EXISTS (SELECT 1 FROM lifecycle_queue q WHERE q.transaction_id = t.id AND q.kind = 'start')
      ORDER BY t.id LIMIT $2`,
    [input.afterId, input.limit, input.organizationId ?? null],
  );
  return rows;
}

export interface StatusHistoryRow {
  from_status: TransactionStatus | null;
  to_status: TransactionStatus;
  transfer_id: string | null;
  changed_at: Date;
}

export async function statusHistory(db: Queryable, transactionId: string): Promise<StatusHistoryRow[]> {
  const { rows } = await db.query<StatusHistoryRow>(
    `SELECT from_status, to_status, transfer_id, changed_at FROM transaction_status_history WHERE transaction_id = $1 ORDER BY id`,
    [transactionId],
  );
  return rows;
}
