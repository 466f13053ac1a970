import { Filters, keysetPage, type ListPage } from '../db/paging';
import type { Queryable } from '../db/pool';
import type { Metadata } from '../metadata/schemas';
import { metadataContains } from '../metadata/sql';
import type { DeclineLimit } from '../limits/contract';
import type { Direction } from './workflowContract';
import type { DeclineCategory, Intent, IntentListQuery, IntentStatus, Transaction } from './schemas';
import { transactionsOfSources } from './transactions';
import { rowOf } from '../assert';

/** The intents table's one writer, and its reads. The database refuses a decided intent changing again (intents_guard). */

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
  /** SPEC §24: the account its ACH entry moves money with; null: none. */
  bank_account_id: string | null;
  /** With decline_category `limit_exceeded`: which limit (SPEC §26). */
  decline_limit: DeclineLimit | null;
  metadata: Metadata;
  created_at: Date;
}

/**
 * The columns of IntentRow by name, never `*`: a named statement's result type is fixed once planned, so a
 * column a later migration adds would make every connection that prepared `RETURNING *` fail until it closes.
 */
const INTENT_COLUMNS = `id, organization_id, account_id, user_id, idempotency_key, direction, amount_cents, currency, approval_mode,
  status, decline_category, decline_limit, bank_account_id, metadata, created_at`;

export function renderIntent(row: IntentRow, transactions: Transaction[]): Intent {
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
    bank_account_id: row.bank_account_id,
    decline_limit: row.decline_limit,
    transactions,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
  };
}

/**
 * Records intents as the caller built them, in one statement, and returns the rows as stored (jsonb keeps
 * metadata keys in its own order) in the order given, so what is rendered is exactly what a later read
 * renders. Events are the caller's.
 */
export async function insertIntents(db: Queryable, intents: readonly IntentRow[]): Promise<IntentRow[]> {
  if (intents.length === 0) return [];
  const { rows } = await db.query<IntentRow>({
    // Named: src/events/outbox.ts says why.
    name: 'intents_insert',
    text: `INSERT INTO intents (id, organization_id, account_id, user_id, idempotency_key, direction, amount_cents, approval_mode,
                          status, decline_category, decline_limit, bank_account_id, metadata, created_at, updated_at)
     SELECT id, organization_id, account_id, user_id, idempotency_key, direction, amount_cents, approval_mode,
            status, decline_category, decline_limit, bank_account_id, metadata, created_at, created_at
       FROM jsonb_to_recordset($1::jsonb) AS i (id text, organization_id text, account_id text, user_id text, idempotency_key text,
            direction text, amount_cents bigint, approval_mode text, status text, decline_category text, decline_limit jsonb, bank_account_id text,
            metadata jsonb, created_at timestamptz)
     RETURNING ${INTENT_COLUMNS}`,
    values: [JSON.stringify(intents)],
  });
  const stored = new Map(rows.map((row) => [row.id, row]));
  return intents.map((intent) => stored.get(intent.id)!);
}

export async function insertIntent(db: Queryable, intent: IntentRow): Promise<IntentRow> {
  return (await insertIntents(db, [intent]))[0]!;
}

export async function getIntentRow(db: Queryable, organizationId: string, intentId: string, forUpdate = false): Promise<IntentRow | null> {
  const { rows } = await db.query<IntentRow>(
    `SELECT * FROM intents WHERE id = $1 AND organization_id = $2 ${forUpdate ? 'FOR UPDATE' : ''}`,
    [intentId, organizationId],
  );
  return rows[0] ?? null;
}

export async function decideIntent(
  db: Queryable,
  decision: {
    intentId: string;
    status: IntentStatus;
    declineCategory: IntentRow['decline_category'];
    declineLimit?: DeclineLimit | null;
    now: Date;
  },
): Promise<IntentRow> {
  const { intentId, status, declineCategory, now } = decision;
  const { rows } = await db.query<IntentRow>(
    `UPDATE intents SET status = $2, decline_category = $3, decline_limit = $5, updated_at = $4 WHERE id = $1 RETURNING ${INTENT_COLUMNS}`,
    [intentId, status, declineCategory, now, decision.declineLimit ? JSON.stringify(decision.declineLimit) : null],
  );
  return rowOf(rows, 'the intent being decided is locked by the caller, so it exists');
}

/** Replaces a locked intent's metadata (the caller merged it); nothing else about the intent changes. */
export async function updateIntentMetadata(db: Queryable, intentId: string, metadata: Metadata, now: Date): Promise<IntentRow> {
  const { rows } = await db.query<IntentRow>(
    `UPDATE intents SET metadata = $2, updated_at = greatest($3::timestamptz, updated_at) WHERE id = $1 RETURNING *`,
    [intentId, JSON.stringify(metadata), now],
  );
  return rowOf(rows, 'the intent whose metadata changes is locked by the caller, so it exists');
}

export async function renderIntents(db: Queryable, rows: IntentRow[]): Promise<Intent[]> {
  const txns = await transactionsOfSources(db, rows, 'intent');
  return rows.map((row) => renderIntent(row, txns.get(row.id) ?? []));
}

export async function getIntent(db: Queryable, organizationId: string, intentId: string): Promise<Intent | null> {
  const row = await getIntentRow(db, organizationId, intentId);
  return row ? (await renderIntents(db, [row]))[0]! : null;
}

export async function listIntents(db: Queryable, organizationId: string, query: IntentListQuery): Promise<ListPage<Intent>> {
  const filters = new Filters('i.organization_id', organizationId)
    .optional('i.status = ?', query.status)
    .optional('i.direction = ?', query.direction)
    .optional('i.user_id = ?', query.user_id);
  metadataContains(filters, 'i', query.metadata);
  const page = await keysetPage<IntentRow>(db, { select: 'i.*', from: 'intents i', table: 'intents', alias: 'i', filters, page: query });
  return { ...page, data: await renderIntents(db, page.data) };
}
