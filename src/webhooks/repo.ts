import { Filters, keysetPage, type ListPage, type PageRequest } from '../db/paging';
import type { Queryable } from '../db/pool';
import { randomString, newId } from '../ids';
import { WEBHOOK_LIMITS } from './limits';
import type { WebhookDeliveryView, WebhookEndpointView } from './schemas';
import { rowOf } from '../assert';

/** SQL owned by webhook endpoints and their delivery attempts, and the dispatcher's side of the outbox. */

export interface EndpointRow {
  id: string;
  organization_id: string;
  url: string;
  events: string[];
  status: 'enabled' | 'disabled';
  disabled_reason: string | null;
  created_at: Date;
}

export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  outcome: 'pending' | 'succeeded' | 'failed' | 'refused';
  response_status_code: number | null;
  duration_ms: number | null;
  error: string | null;
  created_at: Date;
}

export class EndpointLimitError extends Error {
  override name = 'EndpointLimitError';
}

// Never the secret: only the delivery activity reads it, through loadDeliveryTarget.
const ENDPOINT_COLUMNS = 'id, organization_id, url, events, status, disabled_reason, created_at';
const ENDPOINT_COLUMNS_OF_W = 'w.id, w.organization_id, w.url, w.events, w.status, w.disabled_reason, w.created_at';

export function endpointView(row: EndpointRow): WebhookEndpointView {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    status: row.status,
    disabled_reason: row.disabled_reason,
    created_at: row.created_at.toISOString(),
  };
}

export function deliveryView(row: DeliveryRow): WebhookDeliveryView {
  return { ...row, created_at: row.created_at.toISOString() };
}

export async function createEndpoint(
  db: Queryable,
  input: { organizationId: string; url: string; events: string[]; secretSealed: string },
): Promise<EndpointRow> {
  // Serializes creations per organization so two concurrent requests cannot both pass the count.
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`webhook_endpoints:${input.organizationId}`]);
  const { rows: counted } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM webhook_endpoints WHERE organization_id = $1 AND deleted_at IS NULL`,
    [input.organizationId],
  );
  if (rowOf(counted, 'count(*) answers one row').n >= WEBHOOK_LIMITS.endpointsPerOrganizationMax) throw new EndpointLimitError();
  const { rows } = await db.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (id, organization_id, url, events, secret_sealed, events_after_seq)
     VALUES ($1, $2, $3, $4, $5, (SELECT coalesce(max(seq), 0) FROM events)) RETURNING ${ENDPOINT_COLUMNS}`,
    [newId('whk'), input.organizationId, input.url, input.events, input.secretSealed],
  );
  return rowOf(rows, 'INSERT … RETURNING answers the endpoint it inserted');
}

export async function getEndpoint(db: Queryable, organizationId: string, id: string): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL`,
    [id, organizationId],
  );
  return rows[0] ?? null;
}

/** The endpoint whatever its state, deleted included: resend and replay answer 409 for a deleted one, 404 only for a stranger's. */
export async function getEndpointAnyState(
  db: Queryable,
  organizationId: string,
  id: string,
): Promise<(EndpointRow & { deleted: boolean }) | null> {
  const { rows } = await db.query<EndpointRow & { deleted: boolean }>(
    `SELECT ${ENDPOINT_COLUMNS}, deleted_at IS NOT NULL AS deleted FROM webhook_endpoints WHERE id = $1 AND organization_id = $2`,
    [id, organizationId],
  );
  return rows[0] ?? null;
}

/** Newest first (SPEC §8's one paging scheme, src/db/paging.ts); deleted endpoints are not listed. */
export async function listEndpoints(db: Queryable, organizationId: string, page: PageRequest): Promise<ListPage<EndpointRow>> {
  const filters = new Filters('w.organization_id', organizationId).where('w.deleted_at IS NULL');
  return keysetPage<EndpointRow>(db, {
    select: ENDPOINT_COLUMNS_OF_W,
    from: 'webhook_endpoints w',
    table: 'webhook_endpoints',
    alias: 'w',
    filters,
    page,
  });
}

/** Soft delete: the row keeps its delivery history's owner; the secret is erased and nothing more is sent. */
export async function deleteEndpoint(db: Queryable, organizationId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE webhook_endpoints SET deleted_at = now(), secret_sealed = NULL
      WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL`,
    [id, organizationId],
  );
  return (rowCount ?? 0) > 0;
}

export async function listDeliveries(
  db: Queryable,
  organizationId: string,
  endpointId: string,
  page: PageRequest,
): Promise<ListPage<DeliveryRow>> {
  const filters = new Filters('d.organization_id', organizationId).add('d.endpoint_id = ?', endpointId);
  return keysetPage<DeliveryRow>(db, {
    select:
      'd.id, d.endpoint_id, d.event_id, d.event_type, d.attempt, d.outcome, d.response_status_code, d.duration_ms, d.error, d.created_at',
    from: 'webhook_deliveries d',
    table: 'webhook_deliveries',
    alias: 'd',
    filters,
    page,
  });
}

// ---- delivery (activity side) ----

export interface DeliveryTarget {
  event: { id: string; organization_id: string; type: string; data: unknown; created_at: Date };
  endpoint: {
    id: string;
    organization_id: string;
    url: string;
    status: 'enabled' | 'disabled';
    deleted: boolean;
    secret_sealed: string | null;
  };
}

export async function loadDeliveryTarget(db: Queryable, eventId: string, endpointId: string): Promise<DeliveryTarget | null> {
  const { rows } = await db.query<{ event: DeliveryTarget['event'] & { created_at: string }; endpoint: DeliveryTarget['endpoint'] }>(
    `SELECT json_build_object('id', e.id, 'organization_id', e.organization_id, 'type', e.type, 'data', e.data, 'created_at', e.created_at) AS event,
            json_build_object('id', w.id, 'organization_id', w.organization_id, 'url', w.url, 'status', w.status,
                              'deleted', w.deleted_at IS NOT NULL, 'secret_sealed', w.secret_sealed) AS endpoint
       FROM events e, webhook_endpoints w
      WHERE e.id = $1 AND w.id = $2`,
    [eventId, endpointId],
  );
  const row = rows[0];
  if (!row) return null;
  return { event: { ...row.event, created_at: new Date(row.event.created_at) }, endpoint: row.endpoint };
}

export interface AttemptStart {
  endpointId: string;
  organizationId: string;
  eventId: string;
  eventType: string;
  attempt: number;
  /** A row a resend's request already wrote: this attempt fills it in instead of adding one. */
  id?: string | undefined;
}

export interface AttemptEnd {
  outcome: Exclude<DeliveryRow['outcome'], 'pending'>;
  responseStatusCode: number | null;
  durationMs: number;
  error: string | null;
}

/** Attempts have no SPEC §2 prefix of their own; whd_ keeps them recognizable. */
export function newAttemptId(): string {
  return `whd_${randomString(24)}`;
}

export const INTERRUPTED_ATTEMPT_ERROR = 'the attempt was cut short: its worker stopped before an answer was recorded';

/**
 * Writes the attempt as `pending` before anything is sent. In the same statement, earlier attempts of this
 * delivery still `pending` are closed as failed: only one attempt of a delivery runs at a time, so they
 * belong to a worker that died.
 */
export async function beginAttempt(db: Queryable, attempt: AttemptStart): Promise<string> {
  const id = attempt.id ?? newAttemptId();
  // A resend's own row conflicts here; until its request commits this insert waits for it, then keeps it.
  await db.query(
    `WITH interrupted AS (
       UPDATE webhook_deliveries SET outcome = 'failed', error = $7
        WHERE event_id = $4 AND endpoint_id = $2 AND outcome = 'pending' AND id <> $1
     )
     INSERT INTO webhook_deliveries (id, endpoint_id, organization_id, event_id, event_type, attempt, outcome)
     VALUES ($1, $2, $3, $4, $5, $6, 'pending') ON CONFLICT (id) DO NOTHING`,
    [id, attempt.endpointId, attempt.organizationId, attempt.eventId, attempt.eventType, attempt.attempt, INTERRUPTED_ATTEMPT_ERROR],
  );
  return id;
}

export async function finishAttempt(db: Queryable, attemptId: string, end: AttemptEnd): Promise<void> {
  await db.query(`UPDATE webhook_deliveries SET outcome = $2, response_status_code = $3, duration_ms = $4, error = $5 WHERE id = $1`, [
    attemptId,
    end.outcome,
    end.responseStatusCode,
    Math.max(0, Math.round(end.durationMs)),
    end.error === null ? null : end.error.slice(0, WEBHOOK_LIMITS.errorLengthMax),
  ]);
}

export async function disableEndpoint(db: Queryable, endpointId: string, reason: string): Promise<void> {
  await db.query(
    `UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2, disabled_at = now()
      WHERE id = $1 AND status = 'enabled'`,
    [endpointId, reason.slice(0, 500)],
  );
}

// ---- dispatcher side of the outbox ----

export interface ClaimedEvent {
  id: string;
  organization_id: string;
}

/**
 * Locks up to `limit` undispatched events, oldest first. SKIP LOCKED lets several workers dispatch side by
 * side without waiting on, or double-claiming, each other's rows; a crash releases the locks.
 */
export async function claimUndispatchedEvents(db: Queryable, limit: number): Promise<ClaimedEvent[]> {
  const { rows } = await db.query<ClaimedEvent>(
    `SELECT id, organization_id FROM events WHERE dispatched_at IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`,
    [limit],
  );
  return rows;
}

export interface Subscription {
  event_id: string;
  endpoint_id: string;
  organization_id: string;
}

/** Every (event, endpoint) pair to deliver: enabled endpoints of the event's organization, subscribed to its type, registered before it was recorded. */
export async function subscriptionsFor(db: Queryable, eventIds: string[]): Promise<Subscription[]> {
  const { rows } = await db.query<Subscription>(
    `SELECT e.id AS event_id, w.id AS endpoint_id, e.organization_id
       FROM events e
       JOIN webhook_endpoints w ON w.organization_id = e.organization_id
      WHERE e.id = ANY($1::text[])
        AND w.deleted_at IS NULL AND w.status = 'enabled'
        AND e.seq > w.events_after_seq
        AND w.events && ARRAY['*', e.type]
      ORDER BY e.seq, w.id`,
    [eventIds],
  );
  return rows;
}

export async function markDispatched(db: Queryable, eventIds: string[]): Promise<void> {
  await db.query(`UPDATE events SET dispatched_at = now() WHERE id = ANY($1::text[])`, [eventIds]);
}
