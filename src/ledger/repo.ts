import type { Queryable } from '../db/pool';
import { recordEvent } from '../events/outbox';
import { newId } from '../ids';
import type { Account, DeclineCategory, Direction, TransferSummary, Intent, IntentListQuery, IntentStatus, Transaction, TransactionListQuery, TransactionStatus, TransactionType } from './schemas';

/** SQL owned by the ledger: intents, transactions, their status history and account balances. */

export interface TransactionRow {
  id: string;
  organization_id: string;
  account_id: string;
  direction: Direction;
  type: TransactionType;
  source_id: string | null;
  amount_cents: number;
  currency: 'USD';
  status: TransactionStatus;
  date: string;
  transfer_id: string | null;
  /** The seed's TransferSummary, set by SQL (transfer_summary_json, migration 0006) once in_transfer/settled. */
  transfer?: TransferSummary | null;
  created_at: Date;
  workflow_started_at: Date | null;
}

export interface IntentRow {
  id: string;
  organization_id: string;
  account_id: string;
  user_id: string;
  idempotency_key: string;
  direction: Direction;
  amount_cents: number;
  currency: 'USD';
  approval_mode: 'automatic' | 'manual';
  status: IntentStatus;
  decline_category: DeclineCategory | null;
  created_at: Date;
}

// `date` as text so node-postgres never turns a calendar date into a local-time Date. `transfer` is the
// settlement feature's TransferSummary (null until in_transfer/settled; a batched cash_in stays null while available).
export const TXN_COLUMNS = `id, organization_id, account_id, direction, type, source_id, amount_cents, currency, status,
  to_char(date, 'YYYY-MM-DD') AS date, transfer_id, transfer_summary_json(status, transfer_id) AS transfer, created_at, workflow_started_at`;

/** The legal transitions (the seed's table); the database trigger enforces the same. */
export const TRANSITIONS: Record<Direction, Partial<Record<TransactionStatus, TransactionStatus>>> = {
  cash_in: { pending: 'available', available: 'settled' },
  cash_out: { pending: 'in_transfer', in_transfer: 'settled' },
};
const ORDER: Record<TransactionStatus, number> = { pending: 0, available: 1, in_transfer: 1, settled: 2 };

/**
 * The seed's Transaction. `transfer` is shown only once the transaction is in_transfer or settled (a cash_in
 * batched while still available keeps `transfer: null`, as the seed says). The transfers table belongs to
 * the settlement feature: every query reads the summary of `row.transfer_id` in SQL (transfer_summary_json,
 * migration 0006, which applies the same rule) into `row.transfer`.
 */
export function renderTransaction(row: TransactionRow, transfer: TransferSummary | null = row.transfer ?? null): Transaction {
  const shown = row.status === 'in_transfer' || row.status === 'settled' ? transfer : null;
  return {
    id: row.id,
    amount: row.amount_cents,
    direction: row.direction,
    currency: row.currency,
    status: row.status,
    type: row.type,
    source_id: row.source_id,
    account_id: row.account_id,
    created_at: row.created_at.toISOString(),
    date: row.date,
    transfer: shown,
  };
}

export function renderIntent(row: IntentRow, transactions: TransactionRow[]): Intent {
  return {
    id: row.id,
    idempotency_key: row.idempotency_key,
    direction: row.direction,
    user_id: row.user_id,
    account_id: row.account_id,
    amount: row.amount_cents,
    currency: row.currency,
    approval_mode: row.approval_mode,
    status: row.status,
    decline_category: row.decline_category,
    transactions: transactions.map((txn) => renderTransaction(txn)),
    created_at: row.created_at.toISOString(),
  };
}

// ---- accounts ---------------------------------------------------------------------------------------

interface AccountRow {
  id: string;
  name: string;
  created_at: Date;
  pending_cents: number;
  available_cents: number;
  in_transfer_cents: number;
}

const ACCOUNT_SELECT = `SELECT a.id, a.name, a.created_at, coalesce(b.pending_cents, 0) AS pending_cents,
    coalesce(b.available_cents, 0) AS available_cents, coalesce(b.in_transfer_cents, 0) AS in_transfer_cents
  FROM accounts a LEFT JOIN account_balance_totals b ON b.account_id = a.id`;

function renderAccount(row: AccountRow): Account {
  return {
    id: row.id,
    type: 'settlement',
    name: row.name,
    currency: 'USD',
    balances: { pending: row.pending_cents, available: row.available_cents, in_transfer: row.in_transfer_cents },
    created_at: row.created_at.toISOString(),
  };
}

export async function getAccount(db: Queryable, organizationId: string, accountId: string): Promise<Account | null> {
  const { rows } = await db.query<AccountRow>(`${ACCOUNT_SELECT} WHERE a.id = $1 AND a.organization_id = $2`, [accountId, organizationId]);
  return rows[0] ? renderAccount(rows[0]) : null;
}

export async function listAccounts(db: Queryable, organizationId: string, page: Page): Promise<ListPage<Account>> {
  const { clause, params } = cursorClause(page.cursor, 'a', 3);
  const { rows } = await db.query<AccountRow>(
    `${ACCOUNT_SELECT} WHERE a.organization_id = $1 ${clause} ORDER BY a.created_at DESC, a.id DESC LIMIT $2`,
    [organizationId, page.limit + 1, ...params],
  );
  return toPage(rows, page.limit, renderAccount);
}

/** SPEC §7: account_id optional with one account, required with several; unknown ones are resource_missing. */
export async function resolveAccountId(db: Queryable, organizationId: string, accountId: string | undefined): Promise<
  { ok: true; accountId: string } | { ok: false; reason: 'missing' | 'required' }
> {
  if (accountId !== undefined) {
    const { rows } = await db.query(`SELECT 1 FROM accounts WHERE id = $1 AND organization_id = $2`, [accountId, organizationId]);
    return rows.length ? { ok: true, accountId } : { ok: false, reason: 'missing' };
  }
  const { rows } = await db.query<{ id: string }>(`SELECT id FROM accounts WHERE organization_id = $1 LIMIT 2`, [organizationId]);
  return rows.length === 1 ? { ok: true, accountId: rows[0]!.id } : { ok: false, reason: 'required' };
}

// ---- paging -----------------------------------------------------------------------------------------

export interface Page {
  limit: number;
  cursor?: string | undefined;
}

export interface ListPage<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export class BadCursorError extends Error {
  override name = 'BadCursorError';
}

/** Keyset cursor on (created_at DESC, id DESC): no skips or repeats while rows are added. */
function encodeCursor(createdAt: Date, id: string): string {
  return Buffer.from(`${createdAt.toISOString()}|${id}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { createdAt: string; id: string } {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const bar = text.indexOf('|');
  const createdAt = text.slice(0, bar);
  const id = text.slice(bar + 1);
  if (bar < 0 || Number.isNaN(Date.parse(createdAt)) || !/^[a-z_]+_[A-Za-z0-9_-]{16,}$/.test(id)) throw new BadCursorError('malformed cursor');
  return { createdAt, id };
}

export function cursorClause(cursor: string | undefined, alias: string, firstParam: number): { clause: string; params: unknown[] } {
  if (!cursor) return { clause: '', params: [] };
  const { createdAt, id } = decodeCursor(cursor);
  return {
    clause: `AND (${alias}.created_at, ${alias}.id) < ($${firstParam}::timestamptz, $${firstParam + 1})`,
    params: [createdAt, id],
  };
}

export function toPage<R extends { created_at: Date; id: string }, T>(rows: R[], limit: number, render: (row: R) => T): ListPage<T> {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  return { data: kept.map(render), has_more: more, next_cursor: more && last ? encodeCursor(last.created_at, last.id) : null };
}

// ---- users ------------------------------------------------------------------------------------------

/** The users table belongs to the users feature; the ledger only needs to know who may move money. */
export async function userStatus(db: Queryable, organizationId: string, userId: string): Promise<string | null> {
  const { rows } = await db.query<{ status: string }>(`SELECT status FROM users WHERE id = $1 AND organization_id = $2`, [userId, organizationId]);
  return rows[0]?.status ?? null;
}

// ---- intents ----------------------------------------------------------------------------------------

/** The user's status and the account an intent would use, in one round trip (SPEC §7 account rules). */
export async function lookupIntentParties(db: Queryable, organizationId: string, userId: string, accountId: string | undefined): Promise<{
  userStatus: string | null;
  account: { ok: true; accountId: string } | { ok: false; reason: 'missing' | 'required' };
}> {
  const { rows } = await db.query<{ user_status: string | null; account_ids: string[] }>(
    `SELECT (SELECT status FROM users WHERE id = $2 AND organization_id = $1) AS user_status,
            ARRAY(SELECT id FROM accounts WHERE organization_id = $1 AND ($3::text IS NULL OR id = $3) ORDER BY id LIMIT 2) AS account_ids`,
    [organizationId, userId, accountId ?? null],
  );
  const { user_status: userStatus, account_ids: accountIds } = rows[0]!;
  if (accountIds.length === 1) return { userStatus, account: { ok: true, accountId: accountIds[0]! } };
  return { userStatus, account: { ok: false, reason: accountId !== undefined ? 'missing' : 'required' } };
}

/**
 * Records an intent and, when approved, its pending transaction, in one statement (the hot path of POST
 * /intent). Both rows are built by the caller, so what is rendered is exactly what is stored. Events are
 * the caller's.
 */
export async function insertIntent(db: Queryable, intent: IntentRow, txn: TransactionRow | null = null): Promise<void> {
  await db.query(
    `WITH intent AS (
       INSERT INTO intents (id, organization_id, account_id, user_id, idempotency_key, direction, amount_cents, approval_mode,
                            status, decline_category, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
     )
     INSERT INTO transactions (id, organization_id, account_id, direction, type, source_id, amount_cents, status, date, created_at, updated_at)
     SELECT $12, $2, $3, $6, 'intent', $1, $7, 'pending', $13::date, $11, $11 WHERE $12::text IS NOT NULL`,
    [intent.id, intent.organization_id, intent.account_id, intent.user_id, intent.idempotency_key, intent.direction,
      intent.amount_cents, intent.approval_mode, intent.status, intent.decline_category, intent.created_at,
      txn?.id ?? null, txn?.date ?? null],
  );
}

/** A new pending transaction row, not yet stored (ids and dates are decided by the caller, once). */
export function newTransactionRow(input: { organizationId: string; accountId: string; direction: Direction; type: TransactionType;
  sourceId: string | null; amountCents: number; date: string; createdAt: Date }): TransactionRow {
  return {
    id: newId('txn'), organization_id: input.organizationId, account_id: input.accountId, direction: input.direction, type: input.type,
    source_id: input.sourceId, amount_cents: input.amountCents, currency: 'USD', status: 'pending', date: input.date, transfer_id: null,
    created_at: input.createdAt, workflow_started_at: null,
  };
}

export async function getIntentRow(db: Queryable, organizationId: string, intentId: string, forUpdate = false): Promise<IntentRow | null> {
  const { rows } = await db.query<IntentRow>(
    `SELECT * FROM intents WHERE id = $1 AND organization_id = $2 ${forUpdate ? 'FOR UPDATE' : ''}`,
    [intentId, organizationId],
  );
  return rows[0] ?? null;
}

export async function decideIntent(db: Queryable, intentId: string, status: IntentStatus, declineCategory: IntentRow['decline_category'], now: Date): Promise<IntentRow> {
  const { rows } = await db.query<IntentRow>(
    `UPDATE intents SET status = $2, decline_category = $3, updated_at = $4 WHERE id = $1 RETURNING *`,
    [intentId, status, declineCategory, now],
  );
  return rows[0]!;
}

/** The transactions each source (an intent, refund or dispute, per `type`) created, oldest first. */
export async function transactionsOfSources(db: Queryable, organizationId: string, sourceIds: string[], type: TransactionType = 'intent'): Promise<Map<string, TransactionRow[]>> {
  const bySource = new Map<string, TransactionRow[]>();
  if (sourceIds.length === 0) return bySource;
  const { rows } = await db.query<TransactionRow>(
    `SELECT ${TXN_COLUMNS} FROM transactions WHERE organization_id = $1 AND type = $3 AND source_id = ANY($2) ORDER BY created_at, id`,
    [organizationId, sourceIds, type],
  );
  for (const row of rows) bySource.set(row.source_id!, [...(bySource.get(row.source_id!) ?? []), row]);
  return bySource;
}

export async function getIntent(db: Queryable, organizationId: string, intentId: string): Promise<Intent | null> {
  const row = await getIntentRow(db, organizationId, intentId);
  if (!row) return null;
  const txns = await transactionsOfSources(db, organizationId, [row.id]);
  return renderIntent(row, txns.get(row.id) ?? []);
}

export async function listIntents(db: Queryable, organizationId: string, query: IntentListQuery): Promise<ListPage<Intent>> {
  const params: unknown[] = [organizationId, query.limit + 1];
  const where: string[] = [];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (query.status) add('i.status = ?', query.status);
  if (query.direction) add('i.direction = ?', query.direction);
  if (query.user_id) add('i.user_id = ?', query.user_id);
  const { clause, params: cursorParams } = cursorClause(query.cursor, 'i', params.length + 1);
  params.push(...cursorParams);
  const { rows } = await db.query<IntentRow>(
    `SELECT i.* FROM intents i WHERE i.organization_id = $1 ${where.map((w) => `AND ${w}`).join(' ')} ${clause}
      ORDER BY i.created_at DESC, i.id DESC LIMIT $2`,
    params,
  );
  const page = toPage(rows, query.limit, (row) => row);
  const txns = await transactionsOfSources(db, organizationId, page.data.map((row) => row.id));
  return { ...page, data: page.data.map((row) => renderIntent(row, txns.get(row.id) ?? [])) };
}

// ---- transactions -----------------------------------------------------------------------------------

/**
 * Records a transaction in `pending` with its transaction.created event, inside the caller's database
 * transaction (the trigger adds the history row and the balance effect). The caller starts its workflow
 * after commit; the reconciler starts it if that never happens.
 */
export async function insertTransaction(
  db: Queryable,
  input: { organizationId: string; accountId: string; direction: Direction; type: TransactionType; sourceId: string | null;
    amountCents: number; date: string; createdAt: Date },
): Promise<TransactionRow> {
  const { rows } = await db.query<TransactionRow>(
    `INSERT INTO transactions (id, organization_id, account_id, direction, type, source_id, amount_cents, status, date, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $9) RETURNING ${TXN_COLUMNS}`,
    [newId('txn'), input.organizationId, input.accountId, input.direction, input.type, input.sourceId, input.amountCents, input.date, input.createdAt],
  );
  const row = rows[0]!;
  await recordEvent(db, row.organization_id, 'transaction.created', renderTransaction(row), input.createdAt);
  return row;
}

export async function getTransactionRow(db: Queryable, transactionId: string, organizationId?: string): Promise<TransactionRow | null> {
  const { rows } = await db.query<TransactionRow>(
    `SELECT ${TXN_COLUMNS} FROM transactions WHERE id = $1 ${organizationId ? 'AND organization_id = $2' : ''}`,
    organizationId ? [transactionId, organizationId] : [transactionId],
  );
  return rows[0] ?? null;
}

export async function getTransaction(db: Queryable, organizationId: string, transactionId: string): Promise<Transaction | null> {
  const row = await getTransactionRow(db, transactionId, organizationId);
  return row ? renderTransaction(row) : null;
}

export async function listTransactions(db: Queryable, organizationId: string, query: TransactionListQuery): Promise<ListPage<Transaction>> {
  const params: unknown[] = [organizationId, query.limit + 1];
  const where: string[] = [];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (query.status) add('status = ?', query.status);
  if (query.direction) add('direction = ?', query.direction);
  if (query.type) add('type = ?', query.type);
  if (query.account_id) add('account_id = ?', query.account_id);
  if (query.date) add('date = ?::date', query.date);
  if (query.transfer_id) add('transfer_id = ?', query.transfer_id);
  if (query['created_at.gte']) add('created_at >= ?::timestamptz', query['created_at.gte']);
  if (query['created_at.lt']) add('created_at < ?::timestamptz', query['created_at.lt']);
  const { clause, params: cursorParams } = cursorClause(query.cursor, 'transactions', params.length + 1);
  params.push(...cursorParams);
  const { rows } = await db.query<TransactionRow>(
    `SELECT ${TXN_COLUMNS} FROM transactions
      WHERE organization_id = $1 ${where.map((w) => `AND ${w}`).join(' ')} ${clause}
      ORDER BY created_at DESC, id DESC LIMIT $2`,
    params,
  );
  return toPage(rows, query.limit, (row) => renderTransaction(row));
}

export class InvalidTransitionError extends Error {
  override name = 'InvalidTransitionError';
  constructor(readonly transactionId: string, readonly from: TransactionStatus, readonly to: TransactionStatus, readonly direction: Direction) {
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
 * Moves one transaction to `toStatus` inside the caller's database transaction: the status, the history
 * row and the balance effect (both by trigger) and the transaction.status_changed event commit together.
 * Idempotent per (transaction id, target status): a transaction already at or past the target is left
 * alone. A transition outside the seed's table throws InvalidTransitionError. `transferId` is required for
 * in_transfer and settled (a transaction is in one transfer, ever; the trigger refuses a second).
 */
export async function applyTransition(
  db: Queryable,
  input: { transactionId: string; toStatus: TransactionStatus; transferId?: string | null; now: Date },
): Promise<TransitionResult> {
  const { rows } = await db.query<TransactionRow>(`SELECT ${TXN_COLUMNS} FROM transactions WHERE id = $1 FOR UPDATE`, [input.transactionId]);
  const row = rows[0];
  if (!row) throw new Error(`no transaction ${input.transactionId}`);
  if (row.status === input.toStatus || ORDER[row.status] > ORDER[input.toStatus]) {
    // Already there or past it; only a forward move that skips nothing is legal, so this is a replay.
    if (ORDER[row.status] > ORDER[input.toStatus] && !reachable(row.direction, input.toStatus)) {
      throw new InvalidTransitionError(row.id, row.status, input.toStatus, row.direction);
    }
    return { status: row.status, changed: false, transferId: row.transfer_id, transaction: renderTransaction(row) };
  }
  if (TRANSITIONS[row.direction][row.status] !== input.toStatus) {
    throw new InvalidTransitionError(row.id, row.status, input.toStatus, row.direction);
  }
  const transferId = input.transferId ?? row.transfer_id;
  const { rows: updated } = await db.query<TransactionRow>(
    `UPDATE transactions SET status = $2, transfer_id = $3, updated_at = $4 WHERE id = $1 RETURNING ${TXN_COLUMNS}`,
    [row.id, input.toStatus, transferId, input.now],
  );
  const next = updated[0]!;
  const transaction = renderTransaction(next);
  await recordEvent(db, next.organization_id, 'transaction.status_changed', { ...transaction, previous_status: row.status }, input.now);
  return { status: next.status, changed: true, transferId: next.transfer_id, transaction };
}

function reachable(direction: Direction, status: TransactionStatus): boolean {
  return status === 'pending' || status === 'settled' || TRANSITIONS[direction].pending === status;
}

/** Marks the workflow as running; the reconciler skips such rows. */
export async function markWorkflowStarted(db: Queryable, transactionId: string, now: Date): Promise<void> {
  await db.query(`UPDATE transactions SET workflow_started_at = coalesce(workflow_started_at, $2) WHERE id = $1`, [transactionId, now]);
}

/** Transactions whose workflow may never have started: the api died between commit and start. */
export async function transactionsWithoutWorkflow(db: Queryable, olderThan: Date, limit: number): Promise<TransactionRow[]> {
  const { rows } = await db.query<TransactionRow>(
    `SELECT ${TXN_COLUMNS} FROM transactions WHERE workflow_started_at IS NULL AND created_at < $1 ORDER BY created_at LIMIT $2`,
    [olderThan, limit],
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

export interface Balances {
  pending: number;
  available: number;
  in_transfer: number;
}

/**
 * The balances recomputed from the transactions themselves, by the documented formula. The maintained
 * balances must always equal these (tests and `account verify` check it).
 */
export async function recomputeBalances(db: Queryable, accountId: string): Promise<Balances> {
  const { rows } = await db.query<Balances>(
    `SELECT
       coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_in' AND status = 'pending'), 0)::bigint AS pending,
       (coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_in' AND status = 'available' AND transfer_id IS NULL), 0)
        - coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_out' AND status = 'pending'), 0))::bigint AS available,
       (coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_in' AND status = 'available' AND transfer_id IS NOT NULL), 0)
        - coalesce(sum(amount_cents) FILTER (WHERE direction = 'cash_out' AND status = 'in_transfer'), 0))::bigint AS in_transfer
     FROM transactions WHERE account_id = $1`,
    [accountId],
  );
  return rows[0]!;
}
