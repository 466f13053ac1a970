import type { Queryable } from './db/pool';
import { rowOf } from './assert';

/** SPEC §12's event types, §18's `*.updated` and §26's limits and self-exclusion. */
export type EventType =
  | 'user.created'
  | 'user.status_changed'
  | 'user.updated'
  | 'user.limits_changed'
  | 'user.self_excluded'
  | 'intent.approved'
  | 'intent.declined'
  | 'intent.updated'
  | 'transaction.created'
  | 'transaction.status_changed'
  | 'transfer.created'
  | 'transfer.settled'
  | 'refund.created'
  | 'dispute.created'
  | 'dispute.resolved'
  | 'ach_entry.returned'
  | 'ach.transfer_returned'
  | 'bank_account.disabled'
  | 'bank_account.updated'
  | 'ach.return_rate_exceeded';

/**
 * Records an event in the outbox. Call it with the transaction that makes the change it describes, never
 * after that transaction: both commit together or neither does.
 */
export async function recordEvent(
  db: Queryable,
  event: { organizationId: string; type: EventType; data: unknown; createdAt?: Date },
): Promise<string> {
  const { organizationId, type, data, createdAt } = event;
  // The id comes from the column's default (migrations/0010): one format for every event, however written.
  const { rows } = await db.query<{ id: string }>({
    // Named, as the other inserts of a write (intents, transactions, stored answers): each connection parses and
    // plans it once. Only inserts: a lookup's generic plan, made while a table is still small, can stay a scan
    // once it is not (the idempotency lookup did, at 2 ms a call), so lookups are planned each time.
    name: 'event_insert',
    text: `INSERT INTO events (organization_id, type, data, created_at) VALUES ($1, $2, $3, coalesce($4, now())) RETURNING id`,
    values: [organizationId, type, JSON.stringify(data), createdAt ?? null],
  });
  return rowOf(rows, 'INSERT … RETURNING answers the event it inserted').id;
}

/**
 * recordEvent for many events of one organization and instant, in one statement; they take their places
 * in the outbox in the order given.
 */
export async function recordEvents(
  db: Queryable,
  input: { organizationId: string; createdAt: Date; events: ReadonlyArray<{ type: EventType; data: unknown }> },
): Promise<void> {
  const { organizationId, createdAt, events } = input;
  await recordPendingEvents(
    db,
    events.map((event) => ({ organizationId, ...event })),
    createdAt,
  );
}

/** An event a write hands back to be recorded with its stored answer, or a batch of events of many organizations. */
export interface PendingEvent {
  organizationId: string;
  type: EventType;
  data: unknown;
}

/**
 * The statement that records `events` (a JSON array parameter made by eventsParam) in the outbox at `createdAt`,
 * in the array's order; the two are SQL parameter references (`$1`). As its own statement or as a data-modifying
 * `WITH` of another: the statement that stores a write's answer (src/http/idempotency.ts) records the write's last
 * events with it, and a return file's effects record theirs in one (src/ach/returnsApply.ts).
 */
export function insertEventsSql(events: string, createdAt: string): string {
  return `INSERT INTO events (organization_id, type, data, created_at)
       SELECT e ->> 0, e ->> 1, e -> 2, ${createdAt} FROM jsonb_array_elements(${events}::jsonb) WITH ORDINALITY AS x (e, ord)
        ORDER BY ord`;
}

/**
 * insertEventsSql's parameter: one JSON array of [organization, type, data]. A jsonb[] parameter would have
 * node-postgres escape every quote of every event's text (0.7 s for a 10,000-entry return file's 30,000 events).
 */
export function eventsParam(events: readonly PendingEvent[]): string {
  return JSON.stringify(events.map((event) => [event.organizationId, event.type, event.data]));
}

/** Records pending events (Outcome.events) in a statement of their own, where no stored answer takes them. */
export async function recordPendingEvents(db: Queryable, events: readonly PendingEvent[], createdAt: Date): Promise<void> {
  if (events.length > 0) await db.query(insertEventsSql('$1', '$2'), [eventsParam(events), createdAt]);
}
