import { withTransaction, type Pool, type PoolClient } from '../db/pool';
import { rowOf } from '../assert';
import { errors } from '../errors';

/**
 * SPEC §25: a returned CCD entry (a transfer's, on the operator's bank account) is an exception, and nothing moves
 * until an operator acts. The action is ACH's own: present the transfer again (CLI `ach transfer represent`), once
 * the reason is fixed (funds in the operator's account for R01/R09; `account bank-account set` for a wrong or
 * closed account). The new entry is the transfer's, for the same amount and direction, on the operator bank
 * account as it is now, and goes in the next window's file; when it settles, a transfer still `pending` settles
 * (its settlement workflow gets the network's signal, as for its first entry). At most `ACH_REPRESENT_MAX` per
 * transfer (the NACHA Rules' limit on reinitiating an R01 or R09 return; migrations/0050 enforces it too), each
 * after the one before came back. A retry of an R01 or R09 return goes in a batch described `RETRY PYMT`, as the
 * Rules require.
 */
export const ACH_REPRESENT_MAX = 2;

/** Another action on the same entry committed between our read and our write: a key (23505) or a guard (23514) refuses. */
const RACED = new Set(['23505', '23514']);

/**
 * The catch of an operator action's write: another action on the same entry committed meanwhile (both lock the
 * entry, but the one that waited read what it checks before the other committed), so the database's key or guard
 * refused it. Nothing was written; the answer is `invalid_state` with the database's reason, like any refusal.
 */
export function refuseRace(transferId: string) {
  return (error: unknown): never => {
    if (RACED.has((error as { code?: string }).code ?? ''))
      throw errors.invalidState(`transfer ${transferId}: acted on meanwhile (${(error as Error).message})`);
    throw error;
  };
}

/** The Rules' Company Entry Description of a reinitiated R01/R09 entry. */
export const RETRY_DESCRIPTION = 'RETRY PYMT';
export const RETRY_CODES: readonly string[] = ['R01', 'R09'];

export interface Represented {
  entry_id: string;
  represents: string;
  return_code: string;
  transfer_id: string;
  organization_id: string;
  transaction_code: number;
  amount_cents: number;
  presentments_again: number;
}

/** A transfer's last entry (the one no entry presents again), as the operator's actions on a return see it. */
export interface LastEntry {
  id: string;
  status: string;
  organization_id: string;
  account_id: string;
  environment: string;
  amount_cents: string;
  direction: 'collection' | 'disbursement';
  transfer_status: string;
  window_date: string;
  return_code: string | null;
  again: number;
  account_type: 'checking' | 'savings' | null;
  settled_outside: string | null;
}

/**
 * The transfer's last entry, locked: two operators acting at once act once (the database's guards lock the same
 * row, and `represents` and the outside settlement's keys are unique besides). Undefined when the transfer has no
 * entry.
 */
export async function lockLastEntry(tx: PoolClient, transferId: string): Promise<LastEntry | undefined> {
  const { rows } = await tx.query<LastEntry>(
    `SELECT e.id, e.status, e.organization_id, e.account_id, e.environment, e.amount_cents::text, tr.direction,
            tr.status AS transfer_status, to_char(tr.window_date, 'YYYY-MM-DD') AS window_date,
            (SELECT r.code FROM ach_entry_returns r WHERE r.entry_id = e.id AND r.addenda_type = '99') AS return_code,
            (SELECT count(*)::int FROM ach_entries x WHERE x.transfer_id = e.transfer_id AND x.represents IS NOT NULL) AS again,
            (SELECT ob.account_type FROM operator_bank_accounts ob WHERE ob.account_id = e.account_id) AS account_type,
            (SELECT o.reference FROM ach_transfer_settled_outside o WHERE o.transfer_id = e.transfer_id) AS settled_outside
       FROM ach_entries e JOIN transfers tr ON tr.id = e.transfer_id
      WHERE e.transfer_id = $1 AND NOT EXISTS (SELECT 1 FROM ach_entries y WHERE y.represents = e.id)
        FOR UPDATE OF e`,
    [transferId],
  );
  return rows[0];
}

/** The refusal of an action on a transfer that has no entry: nothing changed. */
export function noEntry(transferId: string) {
  return errors.invalidState(`transfer ${transferId} has no ACH entry (no such transfer, a 0 transfer, or no operator bank account)`);
}

export async function representTransfer(pool: Pool, transferId: string, now: Date): Promise<Represented> {
  return withTransaction(pool, async (tx) => {
    const newest = await lockLastEntry(tx, transferId);
    // Refused: nothing changed; the CLI answers `invalid_state` with the reason.
    if (!newest) throw noEntry(transferId);
    if (newest.settled_outside !== null)
      throw errors.invalidState(
        `transfer ${transferId}: settled outside ACH (reference ${newest.settled_outside}); nothing is presented again`,
      );
    if (newest.status !== 'returned' || newest.return_code === null)
      throw errors.invalidState(
        `transfer ${transferId}: its entry ${newest.id} is ${newest.status}; only a returned entry is presented again`,
      );
    if (newest.again >= ACH_REPRESENT_MAX)
      throw errors.invalidState(
        `transfer ${transferId}: presented again ${newest.again} times already, the most there may be (${ACH_REPRESENT_MAX})`,
      );
    if (newest.account_type === null)
      throw errors.invalidState(
        `transfer ${transferId}: account ${newest.account_id} has no operator bank account (account bank-account set)`,
      );
    const savings = newest.account_type === 'savings';
    const transactionCode = newest.direction === 'disbursement' ? (savings ? 32 : 22) : savings ? 37 : 27;
    const inserted = await tx
      .query<{ id: string }>(
        `INSERT INTO ach_entries (organization_id, account_id, environment, transfer_id, sec_code, transaction_code, amount_cents,
                                represents, created_at, updated_at)
       VALUES ($1, $2, $3, $4, 'CCD', $5, $6, $7, $8, $8) RETURNING id`,
        [newest.organization_id, newest.account_id, newest.environment, transferId, transactionCode, newest.amount_cents, newest.id, now],
      )
      .catch(refuseRace(transferId));
    return {
      entry_id: rowOf(inserted.rows, 'INSERT … RETURNING answers the entry').id,
      represents: newest.id,
      return_code: newest.return_code,
      transfer_id: transferId,
      organization_id: newest.organization_id,
      transaction_code: transactionCode,
      amount_cents: Number(newest.amount_cents),
      presentments_again: newest.again + 1,
    };
  });
}
