import type { Logger } from 'pino';
import type { Pool } from '../db/pool';
import { StartMarks } from '../ledger/lifecycle';
import { InflightLocks } from './idempotency';
import { KeyCache } from './keyCache';
import { RateLimiter } from './rateLeases';

/**
 * What one app's edge keeps between requests, built with the app (createApp) and closed with it: the key
 * cache, the rate-limit leases, the idempotency locks its requests hold and the workflow starts it has yet
 * to note. Two apps in one process share none of it; across processes only Postgres is shared (docs/edge.md).
 */
export class Edge {
  /** Keys seen before, kept true by LISTEN (src/http/keyCache.ts). */
  readonly keys: KeyCache;
  readonly limiter: RateLimiter;
  readonly inflight = new InflightLocks();
  readonly startMarks: StartMarks;

  constructor(pool: Pool, log: Logger) {
    this.keys = new KeyCache(pool, log);
    this.limiter = new RateLimiter(pool, log);
    this.startMarks = new StartMarks(pool, log);
    this.keys.start();
  }

  /** Stops listening, settles every lease (its unused slots return to the other processes at once) and notes the pending starts. */
  async close(): Promise<void> {
    await this.keys.close();
    await this.limiter.close();
    await this.startMarks.close();
  }
}
