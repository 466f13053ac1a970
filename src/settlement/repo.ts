import type { PoolClient, Queryable } from '../db/pool';
import { recordEvent } from '../events/outbox';
import { newId } from '../ids';
import { cursorClause, renderTransaction, toPage, TXN_COLUMNS, type ListPage, type Page, type TransactionRow } from '../ledger/repo';
import type { Transaction } from '../ledger/schemas';
import type { Transfer, TransferListQuery } from './schemas';

/**
 * SQL owned by settlement: the transfers table, and the moves of whole windows of transactions into and out
 * of transfers. Every move is one statement over the whole set (the ledger's triggers write history and
 * balances per statement), together with its events, inside the caller's database transaction.
 */

export interface TransferRow {
  id: string;
  organization_id: string;
  account_id: string;
  amount_cents: number;
  currency: 'USD';
  direction: 'disbursement' | 'collection';
  status: 'pending' | 'settled';
  window_date: string;
  date: string;
  transaction_count: number;
  created_at: Date;
  submitted_at: Date | null;
  settled_at: Date | null;
}

// Dates as text so node-postgres never turns a calendar date into a local-time Date.
const TRANSFER_COLUMNS = `id, organization_id, account_id, amount_cents, currency, direction, status,
  to_char(window_date, 'YYYY-MM-DD') AS window_date, to_char(date, 'YYYY-MM-DD') AS date, transaction_count,
  created_at, submitted_at, settled_at`;

/** What a window picks up (SPEC §10): confirmed cash_in and unbatched cash_out, recorded on or before D. */
const ELIGIBLE = `transfer_id IS NULL AND date <= $2::date
  AND ((direction = 'cash_in' AND status = 'available') OR (direction = 'cash_out' AND status = 'pending'))`;

/** Fresh event ids in SQL for events written in bulk: 'evt_' + 32 hex digits of a CSPRNG UUID. */
const SQL_EVENT_ID = `'evt_' || replace(gen_random_uuid()::text, '-', '')`;

export function renderTransfer(row: TransferRow): Transfer {
  return {
    id: row.id,
    amount: row.amount_cents,
    currency: row.currency,
    direction: row.direction,
    status: row.status,
    account_id: row.account_id,
    date: row.date,
    window_date: row.window_date,
    transaction_count: row.transaction_count,
    created_at: row.created_at.toISOString(),
    settled_at: row.settled_at?.toISOString() ?? null,
  };
}

/** The signed amount: + for a disbursement, − for a collection. */
export function signedAmountCents(row: Pick<TransferRow, 'amount_cents' | 'direction'>): number {
  return row.direction === 'disbursement' ? row.amount_cents : -row.amount_cents;
}

export async function getTransferRow(db: Queryable, transferId: string, organizationId?: string): Promise<TransferRow | null> {
  const { rows } = await db.query<TransferRow>(
    `SELECT ${TRANSFER_COLUMNS} FROM transfers WHERE id = $1 ${organizationId ? 'AND organization_id = $2' : ''}`,
    organizationId ? [transferId, organizationId] : [transferId],
  );
  return rows[0] ?? null;
}

export async function getWindowTransfer(db: Queryable, accountId: string, windowDate: string): Promise<TransferRow | null> {
  const { rows } = await db.query<TransferRow>(
    `SELECT ${TRANSFER_COLUMNS} FROM transfers WHERE account_id = $1 AND window_date = $2::date`, [accountId, windowDate]);
  return rows[0] ?? null;
}

export interface CreatedTransfer {
  transfer: TransferRow;
  /** False when this window's transfer already existed (a re-run or a retried activity). */
  created: boolean;
  /** How many cash_outs this call moved to in_transfer (0 unless created). */
  cashOutCount: number;
}

/**
 * Closes window `windowDate` for one account inside the caller's database transaction: nets every eligible
 * transaction into one new transfer, assigns them (cash_out → in_transfer; cash_in stays available), and
 * writes transfer.created and each cash_out's transaction.status_changed. Returns the window's existing
 * transfer if there is one, and null when nothing is eligible (no transfer). The database refuses a second
 * transfer for the window, a member joining another transfer, and a commit whose amount is not the net.
 */
export async function createWindowTransfer(
  tx: PoolClient,
  input: { accountId: string; windowDate: string; transferDate: string; now: Date },
): Promise<CreatedTransfer | null> {
  // One creator per account at a time: a concurrent re-run waits here, then finds the transfer below.
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('settlement:' || $1))`, [input.accountId]);
  const existing = await getWindowTransfer(tx, input.accountId, input.windowDate);
  if (existing) return { transfer: existing, created: false, cashOutCount: 0 };
  const { rows: accounts } = await tx.query<{ organization_id: string; eligible: boolean }>(
    `SELECT a.organization_id, EXISTS (SELECT 1 FROM transactions WHERE account_id = $1 AND ${ELIGIBLE}) AS eligible
       FROM accounts a WHERE a.id = $1`,
    [input.accountId, input.windowDate],
  );
  const account = accounts[0];
  if (!account) throw new Error(`no account ${input.accountId}`);
  // Rows eligible now stay eligible until a transfer takes them, and only this (locked) path does: the
  // transfer below has at least one member.
  if (!account.eligible) return null;

  const transferId = newId('transfer');
  // Built in place: count 0 marks a transfer under construction, the only state members may join.
  await tx.query(
    `INSERT INTO transfers (id, organization_id, account_id, amount_cents, direction, status, window_date, date, transaction_count, created_at)
     VALUES ($1, $2, $3, 0, 'disbursement', 'pending', $4::date, $5::date, 0, $6)`,
    [transferId, account.organization_id, input.accountId, input.windowDate, input.transferDate, input.now],
  );
  const { rows: sums } = await tx.query<{ count: number; cash_out_count: number; net_cents: number }>(
    `WITH moved AS (
       UPDATE transactions SET transfer_id = $3, updated_at = $4,
              status = CASE WHEN direction = 'cash_out' THEN 'in_transfer' ELSE status END
        WHERE account_id = $1 AND ${ELIGIBLE}
       RETURNING direction, amount_cents)
     SELECT count(*)::int AS count, (count(*) FILTER (WHERE direction = 'cash_out'))::int AS cash_out_count,
            coalesce(sum(CASE WHEN direction = 'cash_in' THEN amount_cents ELSE -amount_cents END), 0)::bigint AS net_cents
       FROM moved`,
    [input.accountId, input.windowDate, transferId, input.now],
  );
  const { count, cash_out_count: cashOutCount, net_cents: netCents } = sums[0]!;
  const { rows: built } = await tx.query<TransferRow>(
    `UPDATE transfers SET amount_cents = $2, direction = $3, transaction_count = $4 WHERE id = $1 RETURNING ${TRANSFER_COLUMNS}`,
    [transferId, Math.abs(netCents), netCents >= 0 ? 'disbursement' : 'collection', count],
  );
  const transfer = built[0]!;
  // Asserted here and again by the database at COMMIT (transfers_net_check).
  if (transfer.transaction_count !== count || signedAmountCents(transfer) !== netCents || count < 1) {
    throw new Error(`transfer ${transferId}: built ${transfer.direction} ${transfer.amount_cents} of ${count} members, net ${netCents}`);
  }
  await tx.query(
    `INSERT INTO events (id, organization_id, type, data, created_at)
     SELECT ${SQL_EVENT_ID}, t.organization_id, 'transaction.status_changed',
            transaction_json(t) || jsonb_build_object('previous_status', 'pending'), $2
       FROM transactions t WHERE t.transfer_id = $1 AND t.direction = 'cash_out'
      ORDER BY t.created_at, t.id`,
    [transferId, input.now],
  );
  await recordEvent(tx, transfer.organization_id, 'transfer.created', renderTransfer(transfer), input.now);
  return { transfer, created: true, cashOutCount };
}

/** Records that the transfer was handed to the rail (first time only). */
export async function markTransferSubmitted(db: Queryable, transferId: string, now: Date): Promise<void> {
  await db.query(`UPDATE transfers SET submitted_at = coalesce(submitted_at, $2) WHERE id = $1`, [transferId, now]);
}

/**
 * The network settled the transfer: it and every member become `settled` in the caller's database transaction,
 * with transfer.settled and each member's transaction.status_changed. Settling twice is a no-op.
 */
export async function settleTransfer(tx: PoolClient, transferId: string, now: Date): Promise<{ transfer: TransferRow; changed: boolean }> {
  const { rows } = await tx.query<TransferRow>(
    `UPDATE transfers SET status = 'settled', settled_at = $2 WHERE id = $1 AND status = 'pending' RETURNING ${TRANSFER_COLUMNS}`,
    [transferId, now],
  );
  const transfer = rows[0];
  if (!transfer) {
    const current = await getTransferRow(tx, transferId);
    if (!current) throw new Error(`no transfer ${transferId}`);
    return { transfer: current, changed: false };
  }
  // The transfer first: a member may become settled only with its transfer settled (transactions_transfer_guard).
  const { rows: moved } = await tx.query<{ count: number }>(
    `WITH moved AS (
       UPDATE transactions t SET status = 'settled', updated_at = $2 WHERE t.transfer_id = $1 AND t.status <> 'settled'
       RETURNING t)
     , written AS (
       INSERT INTO events (id, organization_id, type, data, created_at)
       SELECT ${SQL_EVENT_ID}, (m.t).organization_id, 'transaction.status_changed',
              transaction_json(m.t) || jsonb_build_object('previous_status',
                CASE (m.t).direction WHEN 'cash_in' THEN 'available' ELSE 'in_transfer' END), $2
         FROM moved m ORDER BY (m.t).created_at, (m.t).id
       RETURNING 1)
     SELECT count(*)::int AS count FROM written`,
    [transferId, now],
  );
  if (moved[0]!.count !== transfer.transaction_count) {
    throw new Error(`transfer ${transferId}: settled ${moved[0]!.count} of ${transfer.transaction_count} members`);
  }
  await recordEvent(tx, transfer.organization_id, 'transfer.settled', renderTransfer(transfer), now);
  return { transfer, changed: true };
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

/** A page of a transfer's transactions, newest first. */
export async function listTransferTransactions(db: Queryable, organizationId: string, transferId: string, page: Page): Promise<ListPage<Transaction>> {
  const { clause, params } = cursorClause(page.cursor, 'transactions', 4);
  const { rows } = await db.query<TransactionRow>(
    `SELECT ${TXN_COLUMNS} FROM transactions WHERE transfer_id = $1 AND organization_id = $2 ${clause}
      ORDER BY created_at DESC, id DESC LIMIT $3`,
    [transferId, organizationId, page.limit + 1, ...params],
  );
  return toPage(rows, page.limit, (row) => renderTransaction(row));
}

export async function listTransfers(db: Queryable, organizationId: string, query: TransferListQuery): Promise<ListPage<Transfer>> {
  const params: unknown[] = [organizationId, query.limit + 1];
  const where: string[] = [];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (query.date) add('date = ?::date', query.date);
  if (query.window_date) add('window_date = ?::date', query.window_date);
  if (query.status) add('status = ?', query.status);
  if (query.direction) add('direction = ?', query.direction);
  if (query.account_id) add('account_id = ?', query.account_id);
  const { clause, params: cursorParams } = cursorClause(query.cursor, 'transfers', params.length + 1);
  params.push(...cursorParams);
  const { rows } = await db.query<TransferRow>(
    `SELECT ${TRANSFER_COLUMNS} FROM transfers WHERE organization_id = $1 ${where.map((w) => `AND ${w}`).join(' ')} ${clause}
      ORDER BY created_at DESC, id DESC LIMIT $2`,
    params,
  );
  return toPage(rows, query.limit, renderTransfer);
}

/**
 * Accounts that have something eligible for window D, in id order after `afterAccountId`: the fan-out of a
 * window starts one settlement workflow for each.
 */
export async function accountsToSettle(
  db: Queryable,
  input: { windowDate: string; organizationId?: string | undefined; accountId?: string | undefined; afterAccountId: string | null; limit: number },
): Promise<string[]> {
  const params: unknown[] = [input.limit, input.windowDate, input.afterAccountId ?? ''];
  let where = '';
  if (input.organizationId) {
    params.push(input.organizationId);
    where += ` AND a.organization_id = $${params.length}`;
  }
  if (input.accountId) {
    params.push(input.accountId);
    where += ` AND a.id = $${params.length}`;
  }
  const { rows } = await db.query<{ id: string }>(
    `SELECT a.id FROM accounts a
      WHERE a.id > $3 ${where}
        AND EXISTS (SELECT 1 FROM transactions WHERE account_id = a.id AND ${ELIGIBLE})
      ORDER BY a.id LIMIT $1`,
    params,
  );
  return rows.map((row) => row.id);
}

/** Progress of a window, for the CLI and the bench: transfers and their members by status. */
export async function windowProgress(db: Queryable, input: { windowDate: string; accountId?: string | undefined; organizationId?: string | undefined }): Promise<{
  transfers: number; transfersSettled: number; members: number; membersSettled: number;
}> {
  const params: unknown[] = [input.windowDate];
  let where = '';
  if (input.accountId) {
    params.push(input.accountId);
    where += ` AND tr.account_id = $${params.length}`;
  }
  if (input.organizationId) {
    params.push(input.organizationId);
    where += ` AND tr.organization_id = $${params.length}`;
  }
  const { rows } = await db.query<{ transfers: number; transfers_settled: number; members: number; members_settled: number }>(
    `SELECT count(*)::int AS transfers, count(*) FILTER (WHERE tr.status = 'settled')::int AS transfers_settled,
            coalesce(sum(tr.transaction_count), 0)::int AS members,
            coalesce(sum((SELECT count(*) FROM transactions t WHERE t.transfer_id = tr.id AND t.status = 'settled')), 0)::int AS members_settled
       FROM transfers tr WHERE tr.window_date = $1::date ${where}`,
    params,
  );
  const row = rows[0]!;
  return { transfers: row.transfers, transfersSettled: row.transfers_settled, members: row.members, membersSettled: row.members_settled };
}

/** The transfers of window D (optionally one account or organization), oldest first, for the CLI. */
export async function listTransfersOfWindow(db: Queryable, input: {
  windowDate: string; accountId?: string | undefined; organizationId?: string | undefined; limit: number;
}): Promise<Transfer[]> {
  const params: unknown[] = [input.windowDate, input.limit];
  let where = '';
  if (input.accountId) {
    params.push(input.accountId);
    where += ` AND account_id = $${params.length}`;
  }
  if (input.organizationId) {
    params.push(input.organizationId);
    where += ` AND organization_id = $${params.length}`;
  }
  const { rows } = await db.query<TransferRow>(
    `SELECT ${TRANSFER_COLUMNS} FROM transfers WHERE window_date = $1::date ${where} ORDER BY created_at, id LIMIT $2`, params);
  return rows.map(renderTransfer);
}
