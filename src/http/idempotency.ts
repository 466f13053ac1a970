import { createHash } from 'node:crypto';
import type { Request } from 'express';
import pg, { type QueryResult } from 'pg';
import type { Pool, Queryable } from '../db/pool';
import { ApiError, errors } from '../errors';
import { eventsParam, insertEventsSql, recordPendingEvents, type PendingEvent } from '../outbox';
import { canonicalJson } from './canonicalJson';
import { EDGE_LIMITS, IDEMPOTENCY_KEY_PATTERN } from './limits';
import type { AnyRoute } from './route';
import { WriteTransaction } from './writeTransaction';

/**
 * Idempotency of every POST (SPEC §5): which earlier request a request duplicates, the locks that make a
 * duplicate wait for its original, and the stored answers it replays.
 */

export interface IdempotencyIdentity {
  /** 'header' for X-Idempotency-Key (shared by every endpoint, so reuse elsewhere is caught), else per endpoint. */
  scope: string;
  key: string;
}

export interface IdempotencyRequest {
  identities: IdempotencyIdentity[];
  /** The concrete endpoint (`POST /intent/intent_…/approve`) and a hash of it with the exact body. */
  endpoint: string;
  requestHash: string;
  /** The unique body field's value, when the route has one and the body carries it. */
  fieldValue: string | null;
}

function sha256Hex(...parts: (string | Buffer)[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part).update('\n');
  return hash.digest('hex');
}

/** The hash a stored answer is matched by: the endpoint with the body as data (keys sorted). */
export function requestHashOf(endpoint: string, body: unknown): string {
  return sha256Hex(endpoint, canonicalJson(body));
}

/**
 * SPEC §5: a POST is a duplicate when its X-Idempotency-Key matches, OR its unique body field matches, or,
 * with neither, its exact body to the same endpoint matches. A request carries every identity it has.
 */
export function idempotencyRequest(route: AnyRoute, req: Request, body: unknown): IdempotencyRequest {
  const endpoint = `${req.method} ${route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(req.params[name] ?? '')))}`;
  // The body as data, keys sorted: a retry that serialises the same object differently is the same request.
  const fingerprint = route.idempotency?.fingerprint;
  const requestHash = requestHashOf(endpoint, fingerprint ? fingerprint(body) : body);
  const identities: IdempotencyIdentity[] = [];
  const header = req.get('x-idempotency-key');
  if (header !== undefined) {
    if (header.length < 1 || header.length > EDGE_LIMITS.idempotencyKeyLengthMax || !IDEMPOTENCY_KEY_PATTERN.test(header)) {
      throw errors.validation([{ param: 'X-Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters' }]);
    }
    identities.push({ scope: 'header', key: header });
  } else if (route.idempotency?.requireHeader) {
    throw errors.validation([{ param: 'X-Idempotency-Key', message: 'this endpoint requires an X-Idempotency-Key header' }]);
  }
  const field = route.idempotency?.bodyField;
  const value =
    field && body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>)[field] : undefined;
  if (field && typeof value === 'string' && value.length > 0) {
    // The field is validated after this lookup; an overlong value is keyed by its hash so it still fits the index.
    const key = value.length <= EDGE_LIMITS.idempotencyKeyLengthMax ? value : `sha256:${sha256Hex(value)}`;
    identities.push({ scope: `POST ${route.path}#${field}`, key });
  }
  if (identities.length === 0 && !fingerprint) identities.push({ scope: `${endpoint}#body`, key: requestHash });
  return { identities, endpoint, requestHash, fieldValue: typeof value === 'string' ? value : null };
}

/** A 64-bit advisory-lock id per (organization, identity), written as a decimal literal (safe to inline). */
export function advisoryLockId(organizationId: string, identity: IdempotencyIdentity): string {
  return createHash('sha256')
    .update(`idempotency\n${organizationId}\n${identity.scope}\n${identity.key}`)
    .digest()
    .readBigInt64BE(0)
    .toString();
}

export interface StoredResponse {
  scope: string;
  key: string;
  status_code: number;
  response_body: string;
  endpoint: string;
  request_hash: string;
}

const STORED_RESPONSE_COLUMNS = 'scope, key, status_code, response_body, endpoint, request_hash';

/**
 * storedResponsesOf's lookup as one statement of literals (null: no identities), so that it can go with a
 * write's opening statements (WriteTransaction.begin) instead of in a round trip of its own.
 */
function storedResponsesSql(organizationId: string, identities: readonly IdempotencyIdentity[], now: Date): string | null {
  if (identities.length === 0) return null;
  const literal = (value: string) => pg.escapeLiteral(value);
  const pairs = identities.map((identity) => `(${literal(identity.scope)}, ${literal(identity.key)})`).join(', ');
  return `SELECT ${STORED_RESPONSE_COLUMNS} FROM idempotency_keys
      WHERE organization_id = ${literal(organizationId)} AND (scope, key) IN (${pairs})
        AND created_at > ${literal(now.toISOString())}::timestamptz - interval '${EDGE_LIMITS.idempotencyRetentionHours} hours'`;
}

/** The answers stored within the retention period under any of these identities, in one query. */
export async function storedResponsesOf(
  db: Queryable,
  organizationId: string,
  identities: readonly IdempotencyIdentity[],
  now: Date,
): Promise<StoredResponse[]> {
  if (identities.length === 0) return [];
  const { rows } = await db.query<StoredResponse>(
    `SELECT ${STORED_RESPONSE_COLUMNS} FROM idempotency_keys
      WHERE organization_id = $1 AND (scope, key) IN (SELECT * FROM unnest($2::text[], $3::text[]))
        AND created_at > $4::timestamptz - $5::interval`,
    [organizationId, identities.map((i) => i.scope), identities.map((i) => i.key), now, `${EDGE_LIMITS.idempotencyRetentionHours} hours`],
  );
  return rows;
}

/**
 * The stored answer this request replays, by precedence header → body field → exact body; 422 on key reuse
 * with another endpoint or body; the route's own error when a single-use body field comes with another body.
 */
export function replayOf(route: AnyRoute, request: IdempotencyRequest, stored: StoredResponse[]): StoredResponse | undefined {
  for (const identity of request.identities) {
    const found = stored.find((row) => row.scope === identity.scope);
    if (!found) continue;
    const sameRequest = found.endpoint === request.endpoint && found.request_hash === request.requestHash;
    if (identity.scope === 'header' && !sameRequest) throw errors.idempotencyKeyReused();
    if (identity.scope !== 'header' && !sameRequest && route.idempotency?.onFieldReuse && request.fieldValue !== null) {
      throw route.idempotency.onFieldReuse(request.fieldValue);
    }
    return found;
  }
  return undefined;
}

/**
 * Idempotency locks held by one app's requests: a duplicate arriving at the same app awaits the original
 * instead of polling Postgres. One per app (its Edge); other apps are seen only through Postgres.
 */
export class InflightLocks {
  private readonly held = new Map<string, Promise<void>>();

  /** Settles when the request of this app holding any of these locks finishes; undefined when none does. */
  holder(lockIds: string[]): Promise<void> | undefined {
    return lockIds.map((id) => this.held.get(id)).find((promise) => promise !== undefined);
  }

  /** Marks the locks held by a request of this app until the returned function is called. */
  hold(lockIds: string[]): () => void {
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => {
      finish = resolve;
    });
    for (const id of lockIds) this.held.set(id, finished);
    return () => {
      for (const id of lockIds) if (this.held.get(id) === finished) this.held.delete(id);
      finish();
    };
  }
}

/** Set with the locks: a refusal rolls back to it, keeping them (executeOrRefuse). */
const OPERATION_SAVEPOINT = 'operation';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A duplicate's wait for the request that holds its key: idempotencyWaitMs in all, tries spaced by
 * idempotencyPollMsMin doubling to idempotencyPollMsMax (never past the deadline).
 */
function duplicateWait(): { remainingMs(): number; pause(): Promise<void> } {
  const deadlineMs = Date.now() + EDGE_LIMITS.idempotencyWaitMs;
  let pauseMs = EDGE_LIMITS.idempotencyPollMsMin;
  return {
    remainingMs: () => deadlineMs - Date.now(),
    async pause() {
      await sleep(Math.min(pauseMs, deadlineMs - Date.now()));
      pauseMs = Math.min(pauseMs * 2, EDGE_LIMITS.idempotencyPollMsMax);
    },
  };
}

async function settledWithin(promise: Promise<void>, ms: number): Promise<void> {
  if (ms <= 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    promise,
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/**
 * Takes every identity's advisory lock inside a new transaction, or finds the original's stored answer.
 * While the original executes, a duplicate waits WITHOUT a connection (try-lock and back off), so
 * duplicates cannot starve the pool; past the deadline it answers 409 in progress. With the locks it answers
 * the answers stored under the identities, read after the locks were taken in the same round trip (issue 37):
 * a lock held means no original is still executing, so what the read found is final.
 */
export async function lockOrReplay(input: {
  pool: Pool;
  inflight: InflightLocks;
  organizationId: string;
  request: IdempotencyRequest;
  lockIds: string[];
  now: Date;
  /** A read to send with the locks (RouteDef.opening), answered as `opening`. */
  opening?: string | null;
}): Promise<{ tx: WriteTransaction; storedAtLock: StoredResponse[]; opening: QueryResult | null } | { stored: StoredResponse[] }> {
  const { pool, inflight, organizationId, request, lockIds, now, opening = null } = input;
  const wait = duplicateWait();
  const locks = lockIds.length > 0 ? lockIds.map((id, i) => `pg_try_advisory_xact_lock(${id}) AS l${i}`).join(', ') : 'true AS unlocked';
  const lockSql = `SELECT ${locks}`;
  // Without identities nothing is stored: a constant statement keeps the results' shape.
  const storedSql =
    storedResponsesSql(organizationId, request.identities, now) ?? `SELECT ${STORED_RESPONSE_COLUMNS} FROM idempotency_keys WHERE false`;
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0) {
      // Usually the original has finished by now: its stored answer is read without taking any lock.
      const stored = await storedResponsesOf(pool, organizationId, request.identities, now);
      if (stored.length > 0) return { stored };
    }
    const local = inflight.holder(lockIds);
    if (local) {
      await settledWithin(local, wait.remainingMs());
    } else {
      const tx = await WriteTransaction.checkout(pool);
      let locked = false;
      let storedAtLock: StoredResponse[] = [];
      let read: QueryResult | null = null;
      try {
        const statements = { locks: lockSql, stored: storedSql };
        const savepoint = { savepoint: OPERATION_SAVEPOINT };
        const taken: { locks: QueryResult; stored: QueryResult; opening?: QueryResult } =
          opening === null ? await tx.begin(statements, savepoint) : await tx.begin({ ...statements, opening }, savepoint);
        const row = taken.locks.rows[0] as Record<string, boolean>;
        locked = lockIds.every((_, i) => row[`l${i}`] === true);
        storedAtLock = taken.stored.rows as StoredResponse[];
        read = taken.opening ?? null;
      } catch (error) {
        await tx.abandon();
        throw error;
      }
      if (locked) return { tx, storedAtLock, opening: read };
      await tx.abandon();
    }
    if (wait.remainingMs() <= 0) throw errors.idempotencyInProgress();
    if (!local) await wait.pause();
  }
}

/**
 * Runs the operation in the transaction lockOrReplay opened. A business refusal that executed (409
 * invalid_state, 404) is final: its writes roll back to the savepoint set with the locks, which stay held,
 * and it is answered and stored like a success. A 400 judged the request against current state (an unknown
 * id, an unverified identity, a used token) like validation: it is thrown, not stored, so a retry after the
 * operator fixes the cause executes; so is anything else.
 */
export async function executeOrRefuse<T>(tx: WriteTransaction, operation: () => Promise<T>): Promise<{ done: T } | { refused: ApiError }> {
  try {
    return { done: await operation() };
  } catch (error) {
    if (!(error instanceof ApiError) || error.status >= 500 || error.status === 400) throw error;
    await tx.rollbackTo(OPERATION_SAVEPOINT);
    return { refused: error };
  }
}

/** One answer to store: under which identity, for which endpoint and request, and what it was. */
export interface AnswerRecord {
  identity: IdempotencyIdentity;
  endpoint: string;
  requestHash: string;
  status: number;
  text: string;
}

/**
 * Stores answers, each under its identity, in one statement of the request's own transaction, with the events
 * the operation handed back (Outcome.events) recorded by the same statement.
 */
export async function storeAnswers(
  db: Queryable,
  stored: { organizationId: string; records: readonly AnswerRecord[]; now: Date; events?: readonly PendingEvent[] },
): Promise<void> {
  const { organizationId, records, now, events = [] } = stored;
  if (records.length === 0) return recordPendingEvents(db, events, now);
  const column = <T>(pick: (record: AnswerRecord) => T) => records.map(pick);
  const store = `INSERT INTO idempotency_keys (organization_id, scope, key, endpoint, request_hash, status_code, response_body, created_at)
     SELECT $1, scope, key, endpoint, request_hash, status_code, response_body, $8
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[])
            AS i (scope, key, endpoint, request_hash, status_code, response_body)
     ON CONFLICT (organization_id, scope, key) DO UPDATE
       SET endpoint = EXCLUDED.endpoint, request_hash = EXCLUDED.request_hash, status_code = EXCLUDED.status_code,
           response_body = EXCLUDED.response_body, created_at = EXCLUDED.created_at`;
  const values: unknown[] = [
    organizationId,
    column((r) => r.identity.scope),
    column((r) => r.identity.key),
    column((r) => r.endpoint),
    column((r) => r.requestHash),
    column((r) => r.status),
    column((r) => r.text),
    now,
  ];
  await db.query(
    // Named, as the other inserts of a write (src/outbox.ts says why).
    events.length === 0
      ? { name: 'idempotency_store', text: store, values }
      : {
          name: 'idempotency_store_events',
          text: `WITH recorded AS (${insertEventsSql('$9', '$8')}) ${store}`,
          values: [...values, eventsParam(events)],
        },
  );
}

/** Stores the answer under every identity of the request, with the operation's pending events, in the request's own transaction. */
export async function storeResponse(
  db: Queryable,
  stored: {
    organizationId: string;
    request: IdempotencyRequest;
    answer: { status: number; text: string };
    now: Date;
    events?: readonly PendingEvent[];
  },
): Promise<void> {
  const { organizationId, request, answer, now, events } = stored;
  await storeAnswers(db, {
    organizationId,
    records: request.identities.map((identity) => ({
      identity,
      endpoint: request.endpoint,
      requestHash: request.requestHash,
      status: answer.status,
      text: answer.text,
    })),
    now,
    events,
  });
}

/**
 * Takes, inside the caller's transaction, as many of these advisory locks as it can before a duplicate's
 * deadline (idempotencyWaitMs): try-locks only, retried with backoff for the ones another request holds, so
 * two requests that each hold a lock the other wants can never deadlock. Answers the ids taken; without
 * contention that is one round trip.
 */
export async function takeLocksWithin(db: Queryable, lockIds: readonly string[]): Promise<Set<string>> {
  const wanted = new Set(lockIds);
  const taken = new Set<string>();
  const wait = duplicateWait();
  for (;;) {
    const missing = [...wanted].filter((id) => !taken.has(id));
    const { rows } = await db.query<{ id: string; locked: boolean }>(
      `SELECT id::text AS id, pg_try_advisory_xact_lock(id) AS locked FROM unnest($1::bigint[]) AS id`,
      [missing],
    );
    for (const row of rows) if (row.locked) taken.add(row.id);
    if (taken.size === wanted.size || wait.remainingMs() <= 0) return taken;
    await wait.pause();
  }
}
