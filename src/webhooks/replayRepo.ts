import type { PoolClient, Queryable } from '../db/pool';
import type { EventRow } from '../events/contract';
import { newId } from '../ids';
import { INTERRUPTED_ATTEMPT_ERROR, newAttemptId } from './repo';
import type { WebhookReplayProgress, WebhookReplayStatus } from './replayContract';
import type { WebhookReplayView } from './replaySchemas';
import { rowOf } from '../assert';

/** SQL owned by webhook replays (SPEC §17): their rows, the events they walk, and their delivery attempts. */

export interface ReplayRow {
  id: string;
  organization_id: string;
  endpoint_id: string;
  status: WebhookReplayStatus;
  created_at_gte: Date;
  created_at_lt: Date;
  types: string[] | null;
  failed_only: boolean;
  events_total: number;
  events_sent: number;
  events_failed: number;
  failure_reason: string | null;
  /** The last event sent, in the replay's order; the next batch starts after it. */
  cursor_event_id: string | null;
  created_at: Date;
  completed_at: Date | null;
}

const REPLAY_COLUMNS =
  'id, organization_id, endpoint_id, status, created_at_gte, created_at_lt, types, failed_only, events_total, events_sent, ' +
  'events_failed, failure_reason, cursor_event_id, created_at, completed_at';

export function replayView(row: ReplayRow): WebhookReplayView {
  return {
    id: row.id,
    endpoint_id: row.endpoint_id,
    status: row.status,
    events_total: row.events_total,
    events_sent: row.events_sent,
    events_failed: row.events_failed,
    created_at_gte: row.created_at_gte.toISOString(),
    created_at_lt: row.created_at_lt.toISOString(),
    types: row.types,
    failed_only: row.failed_only,
    failure_reason: row.failure_reason,
    created_at: row.created_at.toISOString(),
    completed_at: row.completed_at?.toISOString() ?? null,
  };
}

export function progressOf(row: ReplayRow): WebhookReplayProgress {
  return { status: row.status, eventsTotal: row.events_total, eventsSent: row.events_sent, eventsFailed: row.events_failed };
}

/** The lock a replay's request holds until it commits: the replay's first batch takes it, so it never runs ahead of the row. */
export async function lockReplay(db: Queryable, replayId: string): Promise<void> {
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`webhook_replay:${replayId}`]);
}

/**
 * The events a replay sends, in the order it sends them (created_at, id), as one predicate over `e` and the
 * replay `r`: the organization, the range, the types, and with failed_only only events no delivery of which
 * to this endpoint succeeded. Count and pages use the same text, so events_total counts what is sent.
 */
const REPLAY_EVENTS = `e.organization_id = r.organization_id
   AND e.created_at >= r.created_at_gte AND e.created_at < r.created_at_lt
   AND (r.types IS NULL OR e.type = ANY(r.types))
   AND (NOT r.failed_only OR NOT EXISTS (
         SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.endpoint_id = r.endpoint_id AND d.outcome = 'succeeded'))`;

export interface NewReplay {
  organizationId: string;
  endpointId: string;
  createdAtGte: string;
  createdAtLt: string;
  types: string[] | null;
  failedOnly: boolean;
}

/** Inserts the replay with its events counted; the partial unique index refuses a second running one (23505). */
export async function insertReplay(db: Queryable, replay: NewReplay): Promise<ReplayRow> {
  const { rows } = await db.query<ReplayRow>(
    `WITH r AS (
       SELECT $1::text AS id, $2::text AS organization_id, $3::text AS endpoint_id, $4::timestamptz AS created_at_gte,
              $5::timestamptz AS created_at_lt, $6::text[] AS types, $7::boolean AS failed_only
     )
     INSERT INTO webhook_replays (id, organization_id, endpoint_id, created_at_gte, created_at_lt, types, failed_only, events_total)
     SELECT r.id, r.organization_id, r.endpoint_id, r.created_at_gte, r.created_at_lt, r.types, r.failed_only,
            (SELECT count(*) FROM events e WHERE ${REPLAY_EVENTS})
       FROM r
     RETURNING ${REPLAY_COLUMNS}`,
    [newId('whr'), replay.organizationId, replay.endpointId, replay.createdAtGte, replay.createdAtLt, replay.types, replay.failedOnly],
  );
  return rowOf(rows, 'INSERT … RETURNING answers the replay it inserted');
}

export async function getReplay(
  db: Queryable,
  input: { organizationId: string; endpointId: string; id: string },
): Promise<ReplayRow | null> {
  const { rows } = await db.query<ReplayRow>(
    `SELECT ${REPLAY_COLUMNS} FROM webhook_replays WHERE id = $1 AND endpoint_id = $2 AND organization_id = $3`,
    [input.id, input.endpointId, input.organizationId],
  );
  return rows[0] ?? null;
}

export interface ReplayEndpoint {
  url: string;
  status: 'enabled' | 'disabled';
  deleted: boolean;
  secret_sealed: string | null;
}

/** The replay, its endpoint (the secret for signing, only here) and the next batch of its events after its cursor. */
export async function loadReplayBatch(
  db: Queryable,
  replayId: string,
  limit: number,
): Promise<{ replay: ReplayRow; endpoint: ReplayEndpoint; events: EventRow[] } | null> {
  const { rows } = await db.query<{ replay: ReplayRow; endpoint: ReplayEndpoint }>(
    `SELECT row_to_json(r) AS replay,
            json_build_object('url', w.url, 'status', w.status, 'deleted', w.deleted_at IS NOT NULL, 'secret_sealed', w.secret_sealed) AS endpoint
       FROM (SELECT ${REPLAY_COLUMNS} FROM webhook_replays WHERE id = $1) r
       JOIN webhook_endpoints w ON w.id = r.endpoint_id AND w.organization_id = r.organization_id`,
    [replayId],
  );
  const found = rows[0];
  if (!found) return null;
  const replay = reviveReplay(found.replay);
  if (replay.status !== 'running') return { replay, endpoint: found.endpoint, events: [] };
  // The cursor stays in SQL: timestamps keep their microseconds, so no event is skipped or sent twice.
  const { rows: events } = await db.query<EventRow>(
    `SELECT e.id, e.organization_id, e.type, e.data, e.created_at
       FROM webhook_replays r, events e
      WHERE r.id = $1 AND ${REPLAY_EVENTS}
        AND (r.cursor_event_id IS NULL OR (e.created_at, e.id) > (r.cursor_created_at, r.cursor_event_id))
      ORDER BY e.created_at, e.id
      LIMIT $2`,
    [replayId, limit],
  );
  return { replay, endpoint: found.endpoint, events };
}

function reviveReplay(raw: ReplayRow): ReplayRow {
  const date = (value: unknown) => (value === null ? null : new Date(value as string));
  return {
    ...raw,
    created_at_gte: date(raw.created_at_gte)!,
    created_at_lt: date(raw.created_at_lt)!,
    created_at: date(raw.created_at)!,
    completed_at: date(raw.completed_at),
  };
}

/**
 * One `pending` attempt row per event of the batch, written before anything is sent (as every delivery
 * attempt is), closing earlier attempts of the same (event, endpoint) still pending: a batch cut short by a
 * dying worker shows its sends as failed when the batch runs again.
 */
export async function beginReplayAttempts(db: Queryable, replay: ReplayRow, events: EventRow[]): Promise<string[]> {
  const ids = events.map(() => newAttemptId());
  await db.query(
    `WITH batch AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) AS b(id, event_id, event_type)),
     interrupted AS (
       UPDATE webhook_deliveries d SET outcome = 'failed', error = $6
         FROM batch WHERE d.event_id = batch.event_id AND d.endpoint_id = $4 AND d.outcome = 'pending'
     )
     INSERT INTO webhook_deliveries (id, endpoint_id, organization_id, event_id, event_type, attempt, outcome)
     SELECT batch.id, $4, $5, batch.event_id, batch.event_type, 1, 'pending' FROM batch`,
    [
      ids,
      events.map((event) => event.id),
      events.map((event) => event.type),
      replay.endpoint_id,
      replay.organization_id,
      INTERRUPTED_ATTEMPT_ERROR,
    ],
  );
  return ids;
}

export interface SendResult {
  attemptId: string;
  outcome: 'succeeded' | 'failed';
  responseStatusCode: number | null;
  durationMs: number;
  error: string | null;
}

/** Records every send's outcome, in one statement. */
export async function finishReplayAttempts(db: Queryable, results: SendResult[]): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries d
        SET outcome = r.outcome, response_status_code = r.status, duration_ms = r.duration_ms, error = r.error
       FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::text[]) AS r(id, outcome, status, duration_ms, error)
      WHERE d.id = r.id`,
    [
      results.map((r) => r.attemptId),
      results.map((r) => r.outcome),
      results.map((r) => r.responseStatusCode),
      results.map((r) => Math.max(0, Math.round(r.durationMs))),
      results.map((r) => (r.error === null ? null : r.error.slice(0, 1000))),
    ],
  );
}

/**
 * Moves the cursor past the batch and adds its counts, only if the cursor is still where the batch began: a
 * second execution of the same batch (a retry racing a slow first one) counts nothing twice. Answers the row.
 */
export async function advanceReplay(
  tx: PoolClient,
  input: { replayId: string; fromEventId: string | null; lastEventId: string; sent: number; failed: number },
): Promise<ReplayRow> {
  const { rows } = await tx.query<ReplayRow>(
    `UPDATE webhook_replays
        SET events_sent = events_sent + $4, events_failed = events_failed + $5, cursor_event_id = $3,
            cursor_created_at = (SELECT created_at FROM events WHERE id = $3)
      WHERE id = $1 AND status = 'running' AND cursor_event_id IS NOT DISTINCT FROM $2
      RETURNING ${REPLAY_COLUMNS}`,
    [input.replayId, input.fromEventId, input.lastEventId, input.sent, input.failed],
  );
  return rows[0] ?? (await currentReplay(tx, input.replayId));
}

export async function finishReplay(
  db: Queryable,
  replayId: string,
  status: 'completed' | 'failed',
  reason: string | null,
): Promise<ReplayRow> {
  const { rows } = await db.query<ReplayRow>(
    `UPDATE webhook_replays SET status = $2, failure_reason = $3, completed_at = now()
      WHERE id = $1 AND status = 'running' RETURNING ${REPLAY_COLUMNS}`,
    [replayId, status, reason === null ? null : reason.slice(0, 500)],
  );
  return rows[0] ?? (await currentReplay(db, replayId));
}

async function currentReplay(db: Queryable, replayId: string): Promise<ReplayRow> {
  const { rows } = await db.query<ReplayRow>(`SELECT ${REPLAY_COLUMNS} FROM webhook_replays WHERE id = $1`, [replayId]);
  return rowOf(rows, 'a replay that a workflow updates exists');
}
