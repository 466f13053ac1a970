import { pipeline } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import { to as copyTo } from 'pg-copy-streams';
import type { PageRequest } from '../db/paging';
import type { Pool, Queryable } from '../db/pool';
import { rowOf } from '../assert';
import { errors } from '../errors';
import { listTransferTransactions } from '../ledger/contract';
import { transactionTypeSchema, type Direction, type TransactionType } from '../ledger/contract';
import type { AppDeps, Op } from '../services';
import { getTransferRow, renderTransfer, type TransferRow } from './repo';
import { TRANSFER_REPORT_CSV_COLUMNS, type TransferReport, type TransferReportTotals } from './reportSchemas';

/**
 * Reconciliation of one transfer (SPEC §15): its totals, asserted against the transfer's own amount every time
 * they are read, and its members as a CSV statement streamed straight out of Postgres with COPY, so a
 * 100,000-member transfer passes through the process in bounded pieces and never sits in memory.
 */

/** The transfer's members disagree with it: never shown as a report, always logged as an invariant violation. */
export class TransferReportInvariantError extends Error {
  override name = 'TransferReportInvariantError';
  constructor(
    readonly transferId: string,
    readonly details: Record<string, unknown>,
  ) {
    super(`transfer ${transferId}: members disagree with the transfer (${JSON.stringify(details)})`);
  }
}

type Sides = TransferReportTotals['by_type'][TransactionType];

const emptySides = (): Sides => ({ cash_in: { count: 0, amount: 0 }, cash_out: { count: 0, amount: 0 }, net: 0 });

/**
 * Every member's count and sum by type and direction (one aggregate over the transfer's member index), checked:
 * the signed net must equal the transfer's signed amount and the count its transaction_count.
 */
export async function transferTotals(db: Queryable, transfer: TransferRow): Promise<TransferReportTotals> {
  const { rows } = await db.query<{ type: TransactionType; direction: Direction; count: number; amount: number; net: number }>(
    `SELECT type, direction, count(*)::int AS count, sum(amount_cents)::bigint AS amount,
            sum(transaction_signed_cents(direction, amount_cents))::bigint AS net
       FROM transactions WHERE transfer_id = $1 GROUP BY type, direction`,
    [transfer.id],
  );
  const totals: TransferReportTotals = {
    ...emptySides(),
    by_type: Object.fromEntries(transactionTypeSchema.options.map((type) => [type, emptySides()])) as TransferReportTotals['by_type'],
  };
  for (const row of rows) {
    for (const sides of [totals, totals.by_type[row.type]]) {
      sides[row.direction].count += row.count;
      sides[row.direction].amount += row.amount;
      sides.net += row.net;
    }
  }
  const count = totals.cash_in.count + totals.cash_out.count;
  // The transfer's signed amount by the rule's one definition (transfer_signed_cents, migrations/0025).
  const { rows: signed } = await db.query<{ cents: number }>(`SELECT transfer_signed_cents($1, $2::bigint) AS cents`, [
    transfer.direction,
    transfer.amount_cents,
  ]);
  const signedCents = rowOf(signed, 'a select of one expression answers one row').cents;
  if (totals.net !== signedCents || count !== transfer.transaction_count) {
    throw new TransferReportInvariantError(transfer.id, {
      signed_amount: signedCents,
      members_net: totals.net,
      transaction_count: transfer.transaction_count,
      members: count,
    });
  }
  return totals;
}

/** ISO 8601 UTC with milliseconds, as the JSON API shows every timestamp. */
const ISO_UTC = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/**
 * The COPY statement of a transfer's statement, oldest member first. COPY takes no bind parameters: the id is
 * quoted as a literal by the driver (it is also a row's id, matching transfers' id CHECK).
 */
export function transferCsvCopySql(transferIdLiteral: string): string {
  const [id, direction, type, sourceId, amount, createdAt, date] = TRANSFER_REPORT_CSV_COLUMNS;
  return `COPY (SELECT id AS ${id}, direction AS ${direction}, type AS ${type}, source_id AS ${sourceId}, amount_cents AS ${amount},
                 to_char(created_at AT TIME ZONE 'UTC', ${ISO_UTC}) AS ${createdAt}, to_char(date, 'YYYY-MM-DD') AS ${date}
            FROM transactions WHERE transfer_id = ${transferIdLiteral} ORDER BY created_at, id)
          TO STDOUT WITH (FORMAT csv, HEADER true)`;
}

/**
 * Streams the transfer's CSV statement into `out` (an HTTP response, stdout) with backpressure, on a connection
 * of its own, and ends `out` only once Postgres reported exactly transaction_count rows. Any failure (the reader
 * went away, the database failed, a row count that differs) destroys that connection rather than returning it
 * mid-COPY, and rejects WITHOUT ending `out`, so a reader never mistakes a cut statement for a whole one.
 */
export async function streamTransferCsv(pool: Pool, transfer: TransferRow, out: Writable): Promise<{ rows: number }> {
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    const copy = client.query(copyTo(transferCsvCopySql(client.escapeLiteral(transfer.id))));
    await pipeline(copy, out, { end: false });
    if (copy.rowCount !== transfer.transaction_count) {
      throw new TransferReportInvariantError(transfer.id, { transaction_count: transfer.transaction_count, rows_streamed: copy.rowCount });
    }
    out.end();
    return { rows: copy.rowCount };
  } catch (error) {
    failure = error as Error;
    throw error;
  } finally {
    client.release(failure);
  }
}

/** A report whose totals disagree with its transfer is an incident: logged loudly, never shown. */
export function logInvariantViolation(
  deps: Pick<AppDeps, 'log'>,
  error: TransferReportInvariantError,
  context: Record<string, unknown> = {},
): void {
  deps.log.error(
    { invariant: 'transfer_net_equals_members', transfer_id: error.transferId, ...error.details, ...context },
    'invariant violation: a transfer disagrees with its members',
  );
}

/**
 * The caller's transfer with its checked totals (another organization's transfer is not found); a disagreement
 * between the transfer and its members is logged and answered as an internal error, never as a report.
 */
export async function checkedTransfer(
  op: Op,
  transferId: string,
  context: Record<string, unknown> = {},
): Promise<{ row: TransferRow; totals: TransferReportTotals }> {
  const row = await getTransferRow(op.db, transferId, op.organizationId);
  if (!row) throw errors.notFound('transfer', transferId);
  try {
    return { row, totals: await transferTotals(op.db, row) };
  } catch (error) {
    if (!(error instanceof TransferReportInvariantError)) throw error;
    logInvariantViolation(op.deps, error, context);
    throw errors.internal();
  }
}

/** GET /transfer/{id}/report as JSON: the transfer, its totals over every member, and one page of members. */
export async function transferReport(
  op: Op,
  transferId: string,
  page: PageRequest,
  context: Record<string, unknown> = {},
): Promise<TransferReport> {
  const { row, totals } = await checkedTransfer(op, transferId, context);
  const transactions = await listTransferTransactions(op.db, op.organizationId, row.id, page);
  return { transfer: renderTransfer(row), totals, transactions };
}
