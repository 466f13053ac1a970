import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { to as copyTo } from 'pg-copy-streams';
import { Filters, keysetPage, type ListPage } from '../db/paging';
import type { Pool, Queryable } from '../db/pool';
import { ENTRY_KINDS, STATEMENT_CSV_COLUMNS, type Balances, type Entry, type EntryKind, type EntryListQuery } from './schemas';
import { rowOf } from '../assert';

/**
 * SQL owned by the journal: reads of journal_entries (written only by the transactions table's triggers,
 * schema.sql), balances at an instant from a snapshot plus the entries since, and statements.
 */

interface EntryRow {
  id: string;
  account_id: string;
  kind: EntryKind;
  transaction_id: string | null;
  transfer_id: string | null;
  from_bucket: Entry['postings'][number]['bucket'];
  to_bucket: Entry['postings'][number]['bucket'];
  amount_cents: number;
  created_at: Date;
}

function renderEntry(row: EntryRow): Entry {
  return {
    id: row.id,
    account_id: row.account_id,
    kind: row.kind,
    transaction_id: row.transaction_id,
    transfer_id: row.transfer_id,
    postings: [
      { bucket: row.from_bucket, amount: -row.amount_cents },
      { bucket: row.to_bucket, amount: row.amount_cents },
    ],
    created_at: row.created_at.toISOString(),
  };
}

/** Whether the account exists for this organization (another organization's answers exactly like an unknown one). */
export async function accountExists(db: Queryable, organizationId: string, accountId: string): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 FROM accounts WHERE id = $1 AND organization_id = $2`, [accountId, organizationId]);
  return rows.length === 1;
}

/** The account's balances at the instant `at`: entries stamped before it, read as one snapshot plus the entries since. */
export async function balancesAt(db: Queryable, accountId: string, at: Date): Promise<Balances> {
  const { rows } = await db.query<Balances>({
    name: 'journal_balances_at',
    text: `SELECT pending_cents AS pending, available_cents AS available, in_transfer_cents AS in_transfer FROM journal_balance_at($1, $2)`,
    values: [accountId, at],
  });
  return rowOf(rows, 'journal_balance_at answers one row');
}

export async function listEntries(
  db: Queryable,
  organizationId: string,
  accountId: string,
  query: EntryListQuery,
): Promise<ListPage<Entry>> {
  const filters = new Filters('e.organization_id', organizationId)
    .add('e.account_id = ?', accountId)
    .optional('e.created_at >= ?::timestamptz', query['created_at.gte'])
    .optional('e.created_at < ?::timestamptz', query['created_at.lt'])
    .optional('e.transaction_id = ?', query.transaction_id)
    .optional('e.transfer_id = ?', query.transfer_id);
  const page = await keysetPage<EntryRow>(db, {
    select: 'e.id, e.account_id, e.kind, e.transaction_id, e.transfer_id, e.from_bucket, e.to_bucket, e.amount_cents, e.created_at',
    from: 'journal_entries e',
    table: 'journal_entries',
    alias: 'e',
    filters,
    page: query,
  });
  return { ...page, data: page.data.map(renderEntry) };
}

export interface StatementSums {
  opening: Balances;
  closing: Balances;
  /** Opening plus the span's entries, bucket by bucket: equal to closing unless the journal is broken. */
  derived: Balances;
  totals: Record<EntryKind, { count: number; amount: number }>;
}

/** The balances at `start` and `end` and, per kind, the entries stamped in [start, end), in one round trip. */
export async function statementSums(db: Queryable, accountId: string, span: { start: Date; end: Date }): Promise<StatementSums> {
  const { rows } = await db.query<{
    opening: Balances;
    closing: Balances;
    moved: Balances;
    kinds: Array<{ kind: EntryKind; count: number; amount: number }>;
  }>(
    `WITH span AS (
       SELECT kind, count(*)::int AS count, sum(amount_cents)::bigint AS amount,
              sum(journal_bucket_cents('pending', from_bucket, to_bucket, amount_cents))::bigint AS pending,
              sum(journal_bucket_cents('available', from_bucket, to_bucket, amount_cents))::bigint AS available,
              sum(journal_bucket_cents('in_transfer', from_bucket, to_bucket, amount_cents))::bigint AS in_transfer
         FROM journal_entries WHERE account_id = $1 AND created_at >= $2 AND created_at < $3 GROUP BY kind)
     SELECT (SELECT json_build_object('pending', pending_cents, 'available', available_cents, 'in_transfer', in_transfer_cents)
               FROM journal_balance_at($1, $2)) AS opening,
            (SELECT json_build_object('pending', pending_cents, 'available', available_cents, 'in_transfer', in_transfer_cents)
               FROM journal_balance_at($1, $3)) AS closing,
            (SELECT json_build_object('pending', coalesce(sum(pending), 0), 'available', coalesce(sum(available), 0),
                                      'in_transfer', coalesce(sum(in_transfer), 0)) FROM span) AS moved,
            (SELECT coalesce(json_agg(json_build_object('kind', kind, 'count', count, 'amount', amount)), '[]') FROM span) AS kinds`,
    [accountId, span.start, span.end],
  );
  const { opening, closing, moved, kinds } = rowOf(rows, 'a select of aggregates answers one row');
  const totals = Object.fromEntries(ENTRY_KINDS.map((kind) => [kind, { count: 0, amount: 0 }])) as StatementSums['totals'];
  for (const row of kinds) totals[row.kind] = { count: row.count, amount: row.amount };
  const derived = {
    pending: opening.pending + moved.pending,
    available: opening.available + moved.available,
    in_transfer: opening.in_transfer + moved.in_transfer,
  };
  return { opening, closing, derived, totals };
}

/** ISO 8601 UTC with milliseconds, as the JSON API shows every timestamp. */
const ISO_UTC = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/** The COPY of a statement's postings, oldest first. COPY takes no bind parameters: the caller quotes each literal. */
export function statementCsvCopySql(literals: { accountId: string; start: string; end: string }): string {
  const [entryId, kind, transactionId, transferId, bucket, amount, createdAt] = STATEMENT_CSV_COLUMNS;
  return `COPY (SELECT entry_id AS ${entryId}, kind AS ${kind}, transaction_id AS ${transactionId}, transfer_id AS ${transferId},
                 bucket AS ${bucket}, amount_cents AS ${amount}, to_char(created_at AT TIME ZONE 'UTC', ${ISO_UTC}) AS ${createdAt}
            FROM journal_postings
           WHERE account_id = ${literals.accountId} AND created_at >= ${literals.start}::timestamptz AND created_at < ${literals.end}::timestamptz
           ORDER BY created_at, entry_id, leg)
          TO STDOUT WITH (FORMAT csv, HEADER true)`;
}

/**
 * Streams the statement's postings into `out` with backpressure, on a connection of its own. Any failure
 * destroys that connection rather than returning it mid-COPY, and rejects WITHOUT ending `out`, so a reader
 * never mistakes a cut statement for a whole one.
 */
export async function streamStatementCsv(
  pool: Pool,
  accountId: string,
  span: { start: Date; end: Date },
  out: Writable,
): Promise<{ rows: number }> {
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    const sql = statementCsvCopySql({
      accountId: client.escapeLiteral(accountId),
      start: client.escapeLiteral(span.start.toISOString()),
      end: client.escapeLiteral(span.end.toISOString()),
    });
    const copy = client.query(copyTo(sql));
    await pipeline(copy, out, { end: false });
    out.end();
    return { rows: copy.rowCount };
  } catch (error) {
    failure = error as Error;
    throw error;
  } finally {
    client.release(failure);
  }
}

/** Every account's snapshot at `at` (a window's close), in one statement; a snapshot already taken is kept. */
export async function takeSnapshots(db: Queryable, at: Date): Promise<number> {
  const { rows } = await db.query<{ written: number }>(`SELECT journal_take_snapshots($1)::int AS written`, [at]);
  return rowOf(rows, 'journal_take_snapshots answers one value').written;
}

export interface JournalCheck {
  account_id: string;
  cache: Balances;
  journal: Balances;
}

/** Per account of the organization: the cached balances and the sums of the journal's postings. */
export async function journalChecks(db: Queryable, organizationId: string): Promise<JournalCheck[]> {
  const { rows } = await db.query<JournalCheck>(
    `SELECT a.id AS account_id,
            json_build_object('pending', coalesce(c.pending_cents, 0), 'available', coalesce(c.available_cents, 0),
                              'in_transfer', coalesce(c.in_transfer_cents, 0)) AS cache,
            (SELECT json_build_object('pending', coalesce(sum(journal_bucket_cents('pending', from_bucket, to_bucket, amount_cents)), 0),
                                      'available', coalesce(sum(journal_bucket_cents('available', from_bucket, to_bucket, amount_cents)), 0),
                                      'in_transfer', coalesce(sum(journal_bucket_cents('in_transfer', from_bucket, to_bucket, amount_cents)), 0))
               FROM journal_entries e WHERE e.account_id = a.id) AS journal
       FROM accounts a LEFT JOIN account_balance_totals c ON c.account_id = a.id
      WHERE a.organization_id = $1 ORDER BY a.id`,
    [organizationId],
  );
  return rows;
}
