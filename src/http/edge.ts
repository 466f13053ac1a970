import type { Logger } from 'pino';
import type { Pool } from '../db/pool';
import { LifecyclePoke } from '../platform/lifecyclePoke';
import { InflightLocks } from './idempotency';
import { KeyCache } from './keyCache';
import { RateLimiter } from './rateLeases';

/**
 * What one app's edge keeps between requests, built with the app (createApp) and closed with it: the key
 * cache, the rate-limit leases, the idempotency locks its requests hold and the poke that wakes the
 * lifecycle drainers. Two apps in one process share none of it; across processes only Postgres is shared (docs/edge.md).
 */
export class Edge {
  /** Keys seen before, kept true by LISTEN (src/http/keyCache.ts). */
  readonly keys: KeyCache;
  readonly limiter: RateLimiter;
  readonly inflight = new InflightLocks();
  readonly lifecyclePoke: LifecyclePoke;

  constructor(pool: Pool, log: Logger) {
    this.keys = new KeyCache(pool, log);
    this.limiter = new RateLimiter(pool, log);
    this.lifecyclePoke = new LifecyclePoke(pool, log);
    this.keys.start();
  }

  /** Stops listening, settles every lease (its unused slots return to the other processes at once) and sends a pending poke. */
  async close(): Promise<void> {
    await this.keys.close();
    await this.limiter.close();
    await this.lifecyclePoke.close();
  }
}
