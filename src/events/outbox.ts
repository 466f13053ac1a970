import type { Queryable } from '../db/pool';
import { newId } from '../ids';

/** SPEC §12's event types. */
export type EventType =
  | 'user.created' | 'user.status_changed'
  | 'intent.approved' | 'intent.declined'
  | 'transaction.created' | 'transaction.status_changed'
  | 'transfer.created' | 'transfer.settled'
  | 'refund.created' | 'dispute.created' | 'dispute.resolved';

/**
 * Records an event in the outbox. Call it with the transaction that makes the change it describes, never
 * after that transaction: both commit together or neither does.
 */
export async function recordEvent(db: Queryable, organizationId: string, type: EventType, data: unknown, createdAt?: Date): Promise<string> {
  const id = newId('evt');
  await db.query(`INSERT INTO events (id, organization_id, type, data, created_at) VALUES ($1, $2, $3, $4, coalesce($5, now()))`, [
    id, organizationId, type, JSON.stringify(data), createdAt ?? null,
  ]);
  return id;
}
