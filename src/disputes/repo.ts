import { Filters, keysetPage, type ListPage } from '../db/paging';
import type { Queryable } from '../db/pool';
import type { Transaction } from '../ledger/contract';
import { transactionsOfSources } from '../ledger/contract';
import type { Dispute, DisputeListQuery, DisputeStatus } from './schemas';
import { rowOf } from '../assert';
import { knownReturnTitle, returnTitle } from '../ach/contract';

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
  /** The returned ACH entry it records (SPEC §25); null for a dispute from elsewhere (sandbox simulation). */
  ach_entry_id: string | null;
  /** It puts back a returned credit to the user (a cash_out's or refund's): won at once, one cash_in, no cash_out. */
  returns_credit: boolean;
}

/** The directions of a dispute's transactions, oldest first: what renderDispute checks. */
function expectedDirections(row: DisputeRow): string[] {
  // A returned credit: the money comes back, nothing was taken (migrations/0045).
  if (row.returns_credit) return ['cash_in'];
  // The cash_out when opened, plus a cash_in of the same amount once won.
  return row.status === 'won' ? ['cash_out', 'cash_in'] : ['cash_out'];
}

/** The code's NACHA title (SPEC §25): a returned entry's always has one, as its events do; another network's code has none. */
function reasonOf(row: DisputeRow): string | null {
  return row.ach_entry_id !== null ? returnTitle(row.code) : knownReturnTitle(row.code);
}

export function renderDispute(row: DisputeRow, txns: Transaction[]): Dispute {
  // Invariant: exactly the expected transactions, each of the dispute's amount; nothing else.
  const expected = expectedDirections(row);
  const directions = txns.map((t) => t.direction).sort();
  if (
    directions.join() !== [...expected].sort().join() ||
    txns.some((t) => t.amount !== row.amount_cents || t.source_id !== row.id || t.type !== 'dispute')
  ) {
    throw new Error(`dispute ${row.id} (${row.status}) has ${txns.length} matching transactions, expected ${expected.join(', ')}`);
  }
  return {
    id: row.id,
    intent_id: row.intent_id,
    amount: row.amount_cents,
    currency: row.currency,
    code: row.code,
    reason: reasonOf(row),
    status: row.status,
    transactions: txns,
    created_at: row.created_at.toISOString(),
    resolved_at: row.resolved_at?.toISOString() ?? null,
  };
}

/** A dispute to insert: open (`created`), unless `resolved` says it is decided at birth (a returned ACH entry's, SPEC §25). */
export type NewDispute = Omit<DisputeRow, 'currency' | 'status' | 'resolved_at' | 'ach_entry_id' | 'returns_credit'> &
  Partial<Pick<DisputeRow, 'ach_entry_id' | 'returns_credit'>> & { resolved?: { status: 'won' | 'lost'; at: Date } };

export async function insertDispute(db: Queryable, row: NewDispute): Promise<DisputeRow> {
  return rowOf(await insertDisputes(db, [row]), 'INSERT … RETURNING answers the dispute it inserted');
}

/**
 * Disputes in one statement, inserted and answered in the order given. The database's guards are row triggers
 * (disputes_draw_guard, 0045), so each row is checked as if inserted alone, against the rows before it.
 */
export async function insertDisputes(db: Queryable, rows: readonly NewDispute[]): Promise<DisputeRow[]> {
  if (rows.length === 0) return [];
  const column = <T>(of: (row: NewDispute) => T) => rows.map(of);
  const { rows: inserted } = await db.query<DisputeRow>(
    `INSERT INTO disputes (id, organization_id, intent_id, account_id, amount_cents, code, status, created_at, resolved_at, ach_entry_id, returns_credit)
     SELECT id, organization_id, intent_id, account_id, amount_cents, code, status, created_at, resolved_at, ach_entry_id, returns_credit
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::timestamptz[], $9::timestamptz[],
                   $10::text[], $11::boolean[])
            WITH ORDINALITY AS n (id, organization_id, intent_id, account_id, amount_cents, code, status, created_at, resolved_at, ach_entry_id,
                                  returns_credit, ord)
      ORDER BY ord
     RETURNING *`,
    [
      column((row) => row.id),
      column((row) => row.organization_id),
      column((row) => row.intent_id),
      column((row) => row.account_id),
      column((row) => row.amount_cents),
      column((row) => row.code),
      column((row) => row.resolved?.status ?? 'created'),
      column((row) => row.created_at),
      column((row) => row.resolved?.at ?? null),
      column((row) => row.ach_entry_id ?? null),
      column((row) => row.returns_credit ?? false),
    ],
  );
  const byId = new Map(inserted.map((row) => [row.id, row]));
  return rows.map((row) => byId.get(row.id)!);
}

/** The intent's own dispute (a chargeback or a returned debit: one at most); returned credits of its refunds are not. */
export async function disputeOfIntent(db: Queryable, intentId: string): Promise<DisputeRow | null> {
  const { rows } = await db.query<DisputeRow>(`SELECT * FROM disputes WHERE intent_id = $1 AND NOT returns_credit`, [intentId]);
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
