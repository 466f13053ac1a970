import { Filters, keysetPage, type ListPage } from '../db/paging';
import type { Queryable } from '../db/pool';
import type { Metadata } from '../metadata/schemas';
import { metadataContains } from '../metadata/sql';
import type { DeclineLimit } from '../limits/contract';
import type { Direction } from './workflowContract';
import type { DeclineCategory, Intent, IntentListQuery, IntentStatus, Transaction } from './schemas';
import { newId } from '../ids';
import {
  afterTransactionsInsert,
  transactionsInsertCtes,
  transactionsInsertValues,
  transactionsOfSources,
  type NewTransaction,
} from './transactions';
import { assert, rowOf } from '../assert';

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

/** The statement that inserts intents as the caller built them (`$1`: their JSON array) and answers them (INTENT_COLUMNS). */
const INSERT_INTENTS = `INSERT INTO intents (id, organization_id, account_id, user_id, idempotency_key, direction, amount_cents, approval_mode,
                          status, decline_category, decline_limit, bank_account_id, metadata, created_at, updated_at)
     SELECT id, organization_id, account_id, user_id, idempotency_key, direction, amount_cents, approval_mode,
            status, decline_category, decline_limit, bank_account_id, metadata, created_at, created_at
       FROM jsonb_to_recordset($1::jsonb) AS i (id text, organization_id text, account_id text, user_id text, idempotency_key text,
            direction text, amount_cents bigint, approval_mode text, status text, decline_category text, decline_limit jsonb, bank_account_id text,
            metadata jsonb, created_at timestamptz)
     RETURNING ${INTENT_COLUMNS}`;

/**
 * Records intents as the caller built them, in one statement, and returns the rows as stored (jsonb keeps
 * metadata keys in its own order) in the order given, so what is rendered is exactly what a later read
 * renders. Events are the caller's.
 */
export async function insertIntents(db: Queryable, intents: readonly IntentRow[]): Promise<IntentRow[]> {
  if (intents.length === 0) return [];
  // Named: src/events/outbox.ts says why.
  const { rows } = await db.query<IntentRow>({ name: 'intents_insert', text: INSERT_INTENTS, values: [JSON.stringify(intents)] });
  return inOrder(intents, rows, (row) => row);
}

/**
 * insertIntents together with transactions (insertTransactions' rows, events and queued starts) in one
 * statement: one round trip under the limit counters an approval holds (issue 37). `transactions` are the
 * approved intents', each `sourceId` an intent's id; answers each intent as stored with its transaction's JSON
 * (null: none), in the order given.
 */
export async function insertIntentsWithTransactions(
  db: Queryable,
  intents: readonly IntentRow[],
  transactions: readonly NewTransaction[],
): Promise<Array<{ intent: IntentRow; transaction: Transaction | null }>> {
  if (intents.length === 0) return [];
  const ids = transactions.map(() => newId('txn'));
  const { rows } = await db.query<IntentRow & { transaction_json: Transaction | null }>({
    // Named: src/events/outbox.ts says why.
    name: 'intents_insert_with_transactions',
    text: `WITH i AS (${INSERT_INTENTS}), ${transactionsInsertCtes(2)}
      SELECT i.*, t.json AS transaction_json FROM i LEFT JOIN t ON t.source_id = i.id`,
    values: [JSON.stringify(intents), ...transactionsInsertValues(ids, transactions)],
  });
  await afterTransactionsInsert(db, ids);
  return inOrder(intents, rows, ({ transaction_json, ...intent }) => ({ intent, transaction: transaction_json }));
}

/** The rows a statement answered for `intents`, in the intents' order. */
function inOrder<R extends { id: string }, T>(intents: readonly IntentRow[], rows: readonly R[], of: (row: R) => T): T[] {
  const stored = new Map(rows.map((row) => [row.id, row]));
  return intents.map((intent) => {
    const row = stored.get(intent.id);
    assert(row !== undefined, 'an insert answers every intent it was given');
    return of(row);
  });
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
