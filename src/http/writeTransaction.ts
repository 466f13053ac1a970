import type { Pool, PoolClient } from '../db/pool';
import { EDGE_LIMITS } from './limits';

/** A pooled connection checked out for one transaction. */
export interface Checkout {
  client: PoolClient;
  release(destroy?: boolean): void;
  /** Rolls back and releases; a connection that cannot even roll back is destroyed, never reused. */
  abandon(): Promise<void>;
}

export async function checkout(pool: Pool): Promise<Checkout> {
  const client = await pool.connect();
  // A connection that dies while checked out also emits 'error' on the client; unheard, that event would
  // crash the process. The same failure reaches the request through its next query.
  const ignore = () => undefined;
  client.on('error', ignore);
  let released = false;
  const release = (destroy = false) => {
    if (released) return;
    released = true;
    client.off('error', ignore);
    client.release(destroy);
  };
  return {
    client,
    release,
    async abandon() {
      try {
        await client.query('ROLLBACK');
        release();
      } catch {
        release(true);
      }
    },
  };
}

/** Opens a write's transaction with its bounds (one round trip together with whatever `then` adds). */
export function beginWrite(then = ''): string {
  return (
    `BEGIN; SET LOCAL statement_timeout = ${EDGE_LIMITS.transactionStatementTimeoutMs}; ` +
    `SET LOCAL idle_in_transaction_session_timeout = ${EDGE_LIMITS.transactionIdleTimeoutMs}; ${then}`
  );
}
