import { z } from 'zod';
import { withTransaction, type Pool } from '../db/pool';
import { errors } from '../errors';
import { enqueueTemporalCommand } from '../platform/temporalCommands';
import { networkSettledCommand } from '../settlement/contract';
import { lockLastEntry, noEntry, refuseRace } from './represent';

/**
 * SPEC §25: a returned CCD entry (a transfer's, on the operator's bank account) waits for an operator. Besides
 * presenting it again (src/ach/represent.ts), the operator may move the money outside ACH (a wire, a book
 * transfer at the bank) and record that it did: `ach transfer settled-outside TRANSFER --reference REF`. In one
 * database transaction it locks the transfer's last entry, checks it is returned, records the reference
 * (migrations/0051, whose guard holds the same rules whoever writes) and, for a transfer still `pending`, queues
 * the network's signal on the one road to Temporal (docs/temporal-road.md): its settlement workflow settles it,
 * as when an entry settles. A transfer already `settled` (its entry came back after it settled) stays so: the
 * record says the money came back by another way. Nothing is presented again after it.
 */

/** The outside payment's reference (a wire's IMAD, a bank's confirmation): 1 to 64 printable ASCII characters, no space at either end (migrations/0051 checks the same). */
export const outsideReferenceSchema = z
  .string()
  .regex(/^[!-~]([ -~]{0,62}[!-~])?$/, 'must be 1 to 64 printable ASCII characters, no space at either end');

export interface SettledOutside {
  transfer_id: string;
  entry_id: string;
  return_code: string;
  reference: string;
  organization_id: string;
  amount_cents: number;
  /** The transfer's status when recorded: `pending` ones settle once their workflow takes the signal. */
  transfer_status: string;
  settles: boolean;
}

export async function settleTransferOutside(
  pool: Pool,
  drainQueue: string,
  transferId: string,
  reference: string,
  now: Date,
): Promise<SettledOutside> {
  return withTransaction(pool, async (tx) => {
    const last = await lockLastEntry(tx, transferId);
    // Refused: nothing changed; the CLI answers `invalid_state` with the reason.
    if (!last) throw noEntry(transferId);
    if (last.settled_outside !== null)
      throw errors.invalidState(`transfer ${transferId}: settled outside ACH already (reference ${last.settled_outside})`);
    if (last.status !== 'returned' || last.return_code === null)
      throw errors.invalidState(
        `transfer ${transferId}: its entry ${last.id} is ${last.status}; only a transfer whose entry came back is settled outside ACH`,
      );
    await tx
      .query('INSERT INTO ach_transfer_settled_outside (transfer_id, entry_id, reference, created_at) VALUES ($1, $2, $3, $4)', [
        transferId,
        last.id,
        reference,
        now,
      ])
      .catch(refuseRace(transferId));
    const settles = last.transfer_status === 'pending';
    if (settles) await enqueueTemporalCommand(tx, { drainQueue, now }, networkSettledCommand(last.account_id, last.window_date));
    return {
      transfer_id: transferId,
      entry_id: last.id,
      return_code: last.return_code,
      reference,
      organization_id: last.organization_id,
      amount_cents: Number(last.amount_cents),
      transfer_status: last.transfer_status,
      settles,
    };
  });
}
