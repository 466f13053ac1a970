import { Filters, keysetPage, type ListPage } from '../db/paging';
import type { Queryable } from '../db/pool';
import type { Transaction } from '../ledger/contract';
import type { Metadata } from '../metadata/schemas';
import { metadataContains } from '../metadata/sql';
import { transactionsOfSources } from '../ledger/contract';
import type { Refund, RefundListQuery } from './schemas';
import { rowOf } from '../assert';

/** SQL owned by refunds: the refunds table, and what an intent has left to return (shared with disputes). */

export interface RefundRow {
  id: string;
  organization_id: string;
  intent_id: string;
  account_id: string;
  amount_cents: number;
  currency: 'USD';
  metadata: Metadata;
  created_at: Date;
}

export function renderRefund(row: RefundRow, txn: Transaction): Refund {
  // Invariant: a refund has exactly one transaction, a cash_out of the same amount.
  if (txn.direction !== 'cash_out' || txn.type !== 'refund' || txn.amount !== row.amount_cents || txn.source_id !== row.id) {
    throw new Error(`refund ${row.id}: transaction ${txn.id} does not match it`);
  }
  return {
    id: row.id,
    intent_id: row.intent_id,
    amount: row.amount_cents,
    currency: row.currency,
    status: txn.status === 'settled' ? 'succeeded' : 'pending',
    transaction: txn,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
  };
}

/**
 * Cents that have left an intent: every refund plus every dispute not won (the database function the
 * insert guard uses, so the route's answer and the guard never disagree).
 */
export async function intentReturnedCents(db: Queryable, intentId: string): Promise<number> {
  const { rows } = await db.query<{ returned: number }>(`SELECT intent_returned_cents($1) AS returned`, [intentId]);
  return rowOf(rows, 'intent_returned_cents answers one value').returned;
}

export async function insertRefund(db: Queryable, row: Omit<RefundRow, 'currency'>): Promise<RefundRow> {
  const { rows } = await db.query<RefundRow>(
    `INSERT INTO refunds (id, organization_id, intent_id, account_id, amount_cents, metadata, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [row.id, row.organization_id, row.intent_id, row.account_id, row.amount_cents, JSON.stringify(row.metadata), row.created_at],
  );
  return rowOf(rows, 'INSERT … RETURNING answers the refund it inserted');
}

async function withTransactions(db: Queryable, rows: RefundRow[]): Promise<Refund[]> {
  const txns = await transactionsOfSources(db, rows, 'refund');
  return rows.map((row) => {
    const list = txns.get(row.id) ?? [];
    if (list.length !== 1) throw new Error(`refund ${row.id} has ${list.length} transactions, expected exactly 1`);
    return renderRefund(row, list[0]!);
  });
}

/** One refund of the organization; `organizationId` null for the operator CLI, which sees every organization. */
export async function getRefund(db: Queryable, organizationId: string | null, refundId: string): Promise<Refund | null> {
  const { rows } = await db.query<RefundRow>(
    `SELECT * FROM refunds WHERE id = $1 ${organizationId ? 'AND organization_id = $2' : ''}`,
    organizationId ? [refundId, organizationId] : [refundId],
  );
  if (!rows[0]) return null;
  return (await withTransactions(db, rows))[0]!;
}

export async function listRefunds(db: Queryable, organizationId: string, query: RefundListQuery): Promise<ListPage<Refund>> {
  const filters = new Filters('r.organization_id', organizationId).optional('r.intent_id = ?', query.intent_id);
  metadataContains(filters, 'r', query.metadata);
  const page = await keysetPage<RefundRow>(db, { select: 'r.*', from: 'refunds r', table: 'refunds', alias: 'r', filters, page: query });
  return { ...page, data: await withTransactions(db, page.data) };
}
