import type { Queryable } from '../db/pool';
import { EDGE_LIMITS, windowInterval } from './limits';

/**
 * Periodic cleanup of the edge's tables: expired idempotency records (in bounded batches), old failed
 * logins, and rate-limit hits of organizations that went quiet (an active one sheds its own on admission).
 */
export async function purgeEdgeState(db: Queryable, now: Date): Promise<{ idempotency: number; authFailures: number; rateLimitHits: number }> {
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
  // One (organization, kind) per statement: each holds only its own counter lock, and only briefly.
  const { rows: stale } = await db.query<{ organization_id: string; kind: string; used: number }>(
    `SELECT c.organization_id, c.kind, c.used FROM rate_limit_counters c
      WHERE c.used > 0 AND EXISTS (SELECT 1 FROM rate_limit_hits h WHERE h.organization_id = c.organization_id
                                      AND h.kind = c.kind AND h.admitted_at <= $1::timestamptz - $2::interval)
      LIMIT $3`,
    [now, windowInterval, EDGE_LIMITS.rateLimitPurgeBatchCounters],
  );
  let rateLimitHits = 0;
  for (const counter of stale) {
    const { rows } = await db.query<{ used: number }>(
      `SELECT used FROM rate_limit_take($1, $2, $3, $4::interval, 1, false)`,
      [counter.organization_id, counter.kind, now, windowInterval],
    );
    rateLimitHits += Math.max(0, counter.used - rows[0]!.used);
  }
  return { idempotency, authFailures: failures.rowCount ?? 0, rateLimitHits };
}

