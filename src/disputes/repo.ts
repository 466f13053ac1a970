import { Filters, keysetPage, type ListPage } from '../db/paging';
import type { Queryable } from '../db/pool';
import type { Transaction } from '../ledger/contract';
import { transactionsOfSources } from '../ledger/contract';
import type { Dispute, DisputeListQuery, DisputeStatus } from './schemas';
import { rowOf } from '../assert';

/** SQL owned by disputes: the disputes table. */

export interface DisputeRow {
  id: string;
  organization_id: string;
  intent_id: string;
  account_id: string;
  amount_cents: number;
  currency: 'USD';
  code: string;
  status: DisputeStatus;
  created_at: Date;
  resolved_at: Date | null;
}

export function renderDispute(row: DisputeRow, txns: Transaction[]): Dispute {
  // Invariant: the cash_out when opened, plus a cash_in of the same amount once won; nothing else.
  const expected = row.status === 'won' ? 2 : 1;
  if (txns.length !== expected || txns.some((t) => t.amount !== row.amount_cents || t.source_id !== row.id || t.type !== 'dispute')) {
    throw new Error(`dispute ${row.id} (${row.status}) has ${txns.length} matching transactions, expected ${expected}`);
  }
  return {
    id: row.id,
    intent_id: row.intent_id,
    amount: row.amount_cents,
    currency: row.currency,
    code: row.code,
    status: row.status,
    transactions: txns,
    created_at: row.created_at.toISOString(),
    resolved_at: row.resolved_at?.toISOString() ?? null,
  };
}

export async function insertDispute(db: Queryable, row: Omit<DisputeRow, 'currency' | 'status' | 'resolved_at'>): Promise<DisputeRow> {
  const { rows } = await db.query<DisputeRow>(
    `INSERT INTO disputes (id, organization_id, intent_id, account_id, amount_cents, code, status, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, 'created', $7) RETURNING *`,
    [row.id, row.organization_id, row.intent_id, row.account_id, row.amount_cents, row.code, row.created_at],
  );
  return rowOf(rows, 'INSERT … RETURNING answers the dispute it inserted');
}

export async function disputeOfIntent(db: Queryable, intentId: string): Promise<DisputeRow | null> {
  const { rows } = await db.query<DisputeRow>(`SELECT * FROM disputes WHERE intent_id = $1`, [intentId]);
  return rows[0] ?? null;
}

export async function getDisputeRow(
  db: Queryable,
  organizationId: string,
  disputeId: string,
  forUpdate = false,
): Promise<DisputeRow | null> {
  const { rows } = await db.query<DisputeRow>(
    `SELECT * FROM disputes WHERE id = $1 AND organization_id = $2 ${forUpdate ? 'FOR UPDATE' : ''}`,
    [disputeId, organizationId],
  );
  return rows[0] ?? null;
}

export async function resolveDispute(db: Queryable, disputeId: string, status: 'won' | 'lost', now: Date): Promise<DisputeRow> {
  const { rows } = await db.query<DisputeRow>(
    `UPDATE disputes SET status = $2, resolved_at = $3 WHERE id = $1 AND status = 'created' RETURNING *`,
    [disputeId, status, now],
  );
  if (!rows[0]) throw new Error(`dispute ${disputeId} was not open`);
  return rows[0];
}

export async function renderDisputes(db: Queryable, rows: DisputeRow[]): Promise<Dispute[]> {
  const txns = await transactionsOfSources(db, rows, 'dispute');
  return rows.map((row) => renderDispute(row, txns.get(row.id) ?? []));
}

/** One dispute; `organizationId` null for the operator CLI, which sees every organization. */
export async function getDispute(db: Queryable, organizationId: string | null, disputeId: string): Promise<Dispute | null> {
  const { rows } = await db.query<DisputeRow>(
    `SELECT * FROM disputes WHERE id = $1 ${organizationId ? 'AND organization_id = $2' : ''}`,
    organizationId ? [disputeId, organizationId] : [disputeId],
  );
  return rows[0] ? (await renderDisputes(db, rows))[0]! : null;
}

export async function listDisputes(db: Queryable, organizationId: string, query: DisputeListQuery): Promise<ListPage<Dispute>> {
  const filters = new Filters('d.organization_id', organizationId)
    .optional('d.status = ?', query.status)
    .optional('d.intent_id = ?', query.intent_id);
  const page = await keysetPage<DisputeRow>(db, { select: 'd.*', from: 'disputes d', table: 'disputes', alias: 'd', filters, page: query });
  return { ...page, data: await renderDisputes(db, page.data) };
}
