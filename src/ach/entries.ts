import type { Queryable } from '../db/pool';
import type { AchEntry } from './schemas';

/** A payment's ACH entry as the API shows it (SPEC §24), by the transaction or transfer it pays, within one organization. */
export async function achEntryOf(
  db: Queryable,
  organizationId: string,
  of: { transactionId: string } | { transferId: string },
): Promise<AchEntry | null> {
  const [column, id] = 'transactionId' in of ? ['transaction_id', of.transactionId] : ['transfer_id', of.transferId];
  const { rows } = await db.query<AchEntry>(
    `SELECT trace_number, sec_code, transaction_code::int AS transaction_code, amount_cents::float8 AS amount,
            to_char(effective_date, 'YYYY-MM-DD') AS effective_date, file_id, status, NULL::jsonb AS return,
            to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at
       FROM ach_entries WHERE ${column} = $1 AND organization_id = $2`,
    [id, organizationId],
  );
  return rows[0] ?? null;
}
