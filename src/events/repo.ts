import { Filters, keysetPage, type ListPage } from '../db/paging';
import type { Queryable } from '../db/pool';
import { EVENT_LIMITS } from './limits';
import type { EventListQuery, EventView } from './schemas';
import { rowOf } from '../assert';

/** The events API's SQL over the outbox (SPEC §17): reads by organization, and the retention sweep. */

export interface EventRow {
  id: string;
  organization_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
}

const EVENT_COLUMNS_OF_E = 'e.id, e.organization_id, e.type, e.data, e.created_at';

/** The body webhooks POST, byte for byte the same fields (activities/webhooks.ts renders the same way). */
export function eventView(row: EventRow): EventView {
  // The outbox's jsonb is what recordEvent was given for the type; test/eventSchemas.test.ts holds it to the document.
  return { id: row.id, type: row.type, created_at: row.created_at.toISOString(), data: row.data } as EventView;
}

export async function getEvent(db: Queryable, organizationId: string, id: string): Promise<EventRow | null> {
  const { rows } = await db.query<EventRow>(`SELECT ${EVENT_COLUMNS_OF_E} FROM events e WHERE e.id = $1 AND e.organization_id = $2`, [
    id,
    organizationId,
  ]);
  return rows[0] ?? null;
}

/**
 * Newest first on SPEC §8's keyset. `object_id` is written `e.data ->> 'id'` exactly as the index
 * events_by_object (migrations/0020) spells it, so the planner answers it from that index.
 */
export async function listEvents(db: Queryable, organizationId: string, query: EventListQuery): Promise<ListPage<EventRow>> {
  const filters = new Filters('e.organization_id', organizationId)
    .optional('e.type = ANY(?::text[])', query.type)
    .optional('e.created_at >= ?::timestamptz', query['created_at.gte'])
    .optional('e.created_at < ?::timestamptz', query['created_at.lt'])
    .optional(`e.data ->> 'id' = ?`, query.object_id);
  return keysetPage<EventRow>(db, { select: EVENT_COLUMNS_OF_E, from: 'events e', table: 'events', alias: 'e', filters, page: query });
}

/**
 * Deletes up to one batch of events older than `olderThan`, oldest first, with their delivery attempts.
 * An event stays while anything may still send it: undispatched, dispatched or resent within the delivery
 * retry window, or in the range of a running replay of its organization. SKIP LOCKED lets every api process
 * sweep at once without waiting on (or double-counting) another's rows. Answers how many events it deleted.
 */
export async function deleteExpiredEventBatch(db: Queryable, input: { olderThan: Date; now: Date; limit: number }): Promise<number> {
  const { rows } = await db.query<{ deleted: number }>(
    `WITH doomed AS (
       SELECT e.id FROM events e
        WHERE e.created_at < $1
          AND e.dispatched_at IS NOT NULL AND e.dispatched_at < $2::timestamptz - $3::interval
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                           WHERE d.event_id = e.id AND d.created_at > $2::timestamptz - $3::interval)
          AND NOT EXISTS (SELECT 1 FROM webhook_replays r
                           WHERE r.status = 'running' AND r.organization_id = e.organization_id
                             AND e.created_at >= r.created_at_gte AND e.created_at < r.created_at_lt)
        ORDER BY e.created_at
        LIMIT $4
        FOR UPDATE OF e SKIP LOCKED
     ), attempts AS (
       DELETE FROM webhook_deliveries d USING doomed WHERE d.event_id = doomed.id
     ), deleted AS (
       DELETE FROM events e USING doomed WHERE e.id = doomed.id RETURNING 1
     )
     SELECT count(*)::int AS deleted FROM deleted`,
    [input.olderThan, input.now, `${EVENT_LIMITS.deliveryHoldMs} milliseconds`, input.limit],
  );
  return rowOf(rows, 'count(*) answers one row').deleted;
}
