import type { Queryable } from '../db/pool';
import { EDGE_LIMITS, windowInterval } from './limits';

/**
 * Periodic cleanup of the edge's tables: expired idempotency records (in bounded batches), old failed
 * logins, and rate-limit leases that left the window.
 */
export async function purgeEdgeState(
  db: Queryable,
  now: Date,
): Promise<{ idempotency: number; authFailures: number; rateLimitLeases: number }> {
  let idempotency = 0;
  for (;;) {
    const { rowCount } = await db.query(
      `DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
         SELECT ctid FROM idempotency_keys WHERE created_at <= $1::timestamptz - $2::interval LIMIT $3))`,
      [now, `${EDGE_LIMITS.idempotencyRetentionHours} hours`, EDGE_LIMITS.idempotencyPurgeBatchRows],
    );
    idempotency += rowCount ?? 0;
    if ((rowCount ?? 0) < EDGE_LIMITS.idempotencyPurgeBatchRows) break;
  }
  const failures = await db.query(`DELETE FROM auth_failures WHERE failed_at <= $1::timestamptz - $2::interval`, [now, windowInterval]);
  // Leases whose span left the window count for nothing (rate_limit_count); a live process never admits from them
  // again (it admits only until its lease's last_at). Deleted in bounded batches, so no statement runs long.
  let rateLimitLeases = 0;
  for (;;) {
    const { rowCount } = await db.query(
      `DELETE FROM rate_limit_leases WHERE id = ANY (ARRAY(
         SELECT id FROM rate_limit_leases WHERE last_at <= $1::timestamptz - $2::interval LIMIT $3))`,
      [now, windowInterval, EDGE_LIMITS.rateLimitPurgeBatchRows],
    );
    rateLimitLeases += rowCount ?? 0;
    if ((rowCount ?? 0) < EDGE_LIMITS.rateLimitPurgeBatchRows) break;
  }
  return { idempotency, authFailures: failures.rowCount ?? 0, rateLimitLeases };
}
