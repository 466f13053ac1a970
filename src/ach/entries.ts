import type { Queryable } from '../db/pool';
import { returnTitle } from './returnCodes';
import type { AchEntry } from './schemas';

/**
 * A payment's ACH entry as the API shows it (SPEC §24), by the transaction or transfer it pays, within one
 * organization. A transfer presented again after a return (src/ach/represent.ts) shows its last entry.
 */
export async function achEntryOf(
  db: Queryable,
  organizationId: string,
  of: { transactionId: string } | { transferId: string },
): Promise<AchEntry | null> {
  const [column, id] = 'transactionId' in of ? ['transaction_id', of.transactionId] : ['transfer_id', of.transferId];
  const { rows } = await db.query<Omit<AchEntry, 'return'> & { return_code: string | null }>(
    `SELECT e.trace_number, e.sec_code, e.transaction_code::int AS transaction_code, e.amount_cents::float8 AS amount,
            to_char(e.effective_date, 'YYYY-MM-DD') AS effective_date, e.file_id, e.status,
            (SELECT r.code FROM ach_entry_returns r WHERE r.entry_id = e.id AND r.addenda_type = '99') AS return_code,
            to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at
       FROM ach_entries e
      WHERE e.${column} = $1 AND e.organization_id = $2 AND NOT EXISTS (SELECT 1 FROM ach_entries again WHERE again.represents = e.id)`,
    [id, organizationId],
  );
  if (!rows[0]) return null;
  const { return_code: code, ...entry } = rows[0];
  // The bank's return (SPEC §25), once applied: the code it sent and the code's NACHA title.
  return { ...entry, return: code === null ? null : { code, reason: returnTitle(code) } };
}
