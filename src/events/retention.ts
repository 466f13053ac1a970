import type { Queryable } from '../db/pool';
import { ledgerMetrics } from '../metrics';
import { EVENT_LIMITS } from './limits';
import { deleteExpiredEventBatch } from './repo';

const DAY_MS = 24 * 60 * 60_000;

/** The oldest instant an event may have and still be retrievable (SPEC §17). */
export function retentionStart(now: Date, retentionDays: number): Date {
  return new Date(now.getTime() - retentionDays * DAY_MS);
}

/**
 * One pass of the retention sweep (SPEC §17), run by the api's housekeeping: batches of at most
 * retentionDeleteBatchMax events, each its own statement and transaction so no lock is held long, until a
 * batch comes back short or the pass has deleted retentionBatchesPerPassMax batches. Answers the count.
 */
export async function purgeExpiredEvents(db: Queryable, input: { now: Date; retentionDays: number }): Promise<number> {
  const olderThan = retentionStart(input.now, input.retentionDays);
  let deleted = 0;
  for (let batch = 0; batch < EVENT_LIMITS.retentionBatchesPerPassMax; batch += 1) {
    const count = await deleteExpiredEventBatch(db, { olderThan, now: input.now, limit: EVENT_LIMITS.retentionDeleteBatchMax });
    deleted += count;
    ledgerMetrics.eventsDeletedTotal.inc(count);
    if (count < EVENT_LIMITS.retentionDeleteBatchMax) break;
  }
  return deleted;
}
