import { Filters, keysetPage, type ListPage } from '../db/paging';
import type { PoolClient, Queryable } from '../db/pool';
import { recordEvent } from '../outbox';
import { newId } from '../ids';
import { assignWindowToTransfer, ELIGIBLE_FOR_WINDOW, settleTransferMembers } from '../ledger/contract';
import type { Transfer, TransferListQuery } from './schemas';
import { rowOf } from '../assert';

/**
 * SQL owned by settlement: the transfers table. Its members move into and out of a transfer through the
 * ledger's set-based transitions (src/ledger/transactions.ts, the transactions table's one writer), one
 * statement over the whole window inside the caller's database transaction.
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

export async function getTransferRow(db: Queryable, transferId: string, organizationId?: string): Promise<TransferRow | null> {
  const { rows } = await db.query<TransferRow>(
    `SELECT ${TRANSFER_COLUMNS} FROM transfers WHERE id = $1 ${organizationId ? 'AND organization_id = $2' : ''}`,
    organizationId ? [transferId, organizationId] : [transferId],
  );
  return rows[0] ?? null;
}

export async function getWindowTransfer(db: Queryable, accountId: string, windowDate: string): Promise<TransferRow | null> {
  const { rows } = await db.query<TransferRow>(
    `SELECT ${TRANSFER_COLUMNS} FROM transfers WHERE account_id = $1 AND window_date = $2::date`,
    [accountId, windowDate],
  );
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
    `SELECT a.organization_id, EXISTS (SELECT 1 FROM transactions t WHERE t.account_id = $1 AND ${ELIGIBLE_FOR_WINDOW}) AS eligible
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
  const { count, cashOutCount, netCents } = await assignWindowToTransfer(tx, {
    accountId: input.accountId,
    windowDate: input.windowDate,
    transferId,
    now: input.now,
  });
  // signed_cents: the rule's one definition (transfer_signed_cents, migrations/0025), read back to check the build.
  const { rows: built } = await tx.query<TransferRow & { signed_cents: number }>(
    `UPDATE transfers SET amount_cents = $2, direction = $3, transaction_count = $4 WHERE id = $1
     RETURNING ${TRANSFER_COLUMNS}, transfer_signed_cents(direction, amount_cents) AS signed_cents`,
    [transferId, Math.abs(netCents), netCents >= 0 ? 'disbursement' : 'collection', count],
  );
  const { signed_cents: signedCents, ...transfer } = built[0]!;
  // Asserted here and again by the database at COMMIT (transfers_net_check).
  if (transfer.transaction_count !== count || signedCents !== netCents || count < 1) {
    throw new Error(`transfer ${transferId}: built ${transfer.direction} ${transfer.amount_cents} of ${count} members, net ${netCents}`);
  }
  await recordEvent(tx, {
    organizationId: transfer.organization_id,
    type: 'transfer.created',
    data: renderTransfer(transfer),
    createdAt: input.now,
  });
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
  // The transfer first: a member may become settled only with its transfer settled (the transfer guard in transactions_after_update, schema.sql).
  const moved = await settleTransferMembers(tx, transferId, now);
  if (moved !== transfer.transaction_count) {
    throw new Error(`transfer ${transferId}: settled ${moved} of ${transfer.transaction_count} members`);
  }
  await recordEvent(tx, {
    organizationId: transfer.organization_id,
    type: 'transfer.settled',
    data: renderTransfer(transfer),
    createdAt: now,
  });
  return { transfer, changed: true };
}

export async function listTransfers(db: Queryable, organizationId: string, query: TransferListQuery): Promise<ListPage<Transfer>> {
  const filters = new Filters('tr.organization_id', organizationId)
    .optional('tr.date = ?::date', query.date)
    .optional('tr.window_date = ?::date', query.window_date)
    .optional('tr.status = ?', query.status)
    .optional('tr.direction = ?', query.direction)
    .optional('tr.account_id = ?', query.account_id);
  const page = await keysetPage<TransferRow>(db, {
    select: TRANSFER_COLUMNS,
    from: 'transfers tr',
    table: 'transfers',
    alias: 'tr',
    filters,
    page: query,
  });
  return { ...page, data: page.data.map(renderTransfer) };
}

/**
 * Accounts that have something eligible for window D, in id order after `afterAccountId`: the fan-out of a
 * window starts one settlement workflow for each.
 */
export async function accountsToSettle(
  db: Queryable,
  input: {
    windowDate: string;
    organizationId?: string | undefined;
    accountId?: string | undefined;
    afterAccountId: string | null;
    limit: number;
  },
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
        AND EXISTS (SELECT 1 FROM transactions t WHERE t.account_id = a.id AND ${ELIGIBLE_FOR_WINDOW})
      ORDER BY a.id LIMIT $1`,
    params,
  );
  return rows.map((row) => row.id);
}

/** Progress of a window, for the CLI and the bench: transfers and their members by status. */
export async function windowProgress(
  db: Queryable,
  input: { windowDate: string; accountId?: string | undefined; organizationId?: string | undefined },
): Promise<{
  transfers: number;
  transfersSettled: number;
  members: number;
  membersSettled: number;
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
  const row = rowOf(rows, 'a select of aggregates answers one row');
  return { transfers: row.transfers, transfersSettled: row.transfers_settled, members: row.members, membersSettled: row.members_settled };
}

/** The transfers of window D (optionally one account or organization), oldest first, for the CLI. */
export async function listTransfersOfWindow(
  db: Queryable,
  input: {
    windowDate: string;
    accountId?: string | undefined;
    organizationId?: string | undefined;
    limit: number;
  },
): Promise<Transfer[]> {
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
    `SELECT ${TRANSFER_COLUMNS} FROM transfers WHERE window_date = $1::date ${where} ORDER BY created_at, id LIMIT $2`,
    params,
  );
  return rows.map(renderTransfer);
}
