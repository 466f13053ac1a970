import pg from 'pg';
import { retryWithBackoff } from '../concurrency';
import { StartupError } from '../platform/startupError';

// Money columns are bigint; node-postgres returns int8 as a string by default. Amounts are cents far below
// 2^53, and parsing refuses anything that is not a safe integer rather than rounding it.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed)) throw new Error(`int8 value ${value} is outside the safe integer range`);
  return parsed;
});

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that runs a query: the pool for reads, a checked-out client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

function ignoreCheckedOutError(): void {}

/** How long a new connection may take before it fails: the api and worker answer or retry after it. */
export const CONNECT_TIMEOUT_MS = 5_000;

export function createPool(
  databaseUrl: string,
  max = 20,
  onIdleError: (error: Error) => void = () => undefined,
  connectTimeoutMs = CONNECT_TIMEOUT_MS,
): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max, connectionTimeoutMillis: connectTimeoutMs, idleTimeoutMillis: 30_000 });
  // An idle client whose server went away (a restart, a failover) is dropped by the pool; without a
  // listener that 'error' event would crash the process.
  pool.on('error', onIdleError);
  // The pool listens only while a client is idle. A connection that dies while checked out (a transaction,
  // a COPY stream, a report) also emits 'error' on the client, and unheard that crashes the process; the
  // same failure reaches its holder through the query in flight or the next one.
  pool.on('connect', (client) => client.on('error', ignoreCheckedOutError));
  return pool;
}

/**
 * Runs `work` in one database transaction; any throw rolls everything back.
 *
 * `discardConnection`: close the connection afterwards instead of giving it back to the pool. For the
 * statements over a whole window (thousands of rows): Postgres caches the plans of the triggers they fire, on
 * the connection, shaped for that many rows, and every small write that later ran there used them (a lifecycle
 * took 60 ms instead of 3.8 ms on a connection that had settled a 20,000-member window).
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  options: { discardConnection?: boolean; snapshot?: boolean } = {},
): Promise<T> {
  const client = await pool.connect();
  try {
    // snapshot: every statement of `work` reads the same committed state (a check that compares several reads
    // must not see a write commit between them), and it writes nothing.
    await client.query(options.snapshot ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release(options.discardConnection === true);
  }
}

/**
 * Errors of a server that is not up yet: no answer (refused, unreachable, a name not resolving yet, a
 * dropped connection) or Postgres saying it is starting up or full. A server that answers anything else
 * (a wrong password, a missing database) will answer it again: that is thrown at once.
 */
function databaseNotUpYet(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code === '57P03' || code === '53300';
  return true;
}

/**
 * Waits until the database at `databaseUrl` accepts a connection, with backoff (250 ms doubling to 5 s) and a
 * line to `progress` before each pause, up to `timeoutMs`; then throws a StartupError naming the last failure.
 */
export async function waitForDatabase(databaseUrl: string, timeoutMs: number, progress: (message: string) => void): Promise<void> {
  const where = new URL(databaseUrl).host;
  try {
    await retryWithBackoff(
      async () => {
        const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
        client.on('error', () => undefined);
        await client.connect();
        await client.end();
      },
      {
        timeoutMs,
        initialMs: 250,
        maxMs: 5_000,
        retryable: databaseNotUpYet,
        onRetry: ({ attempt, error, delayMs }) =>
          progress(`waiting for Postgres at ${where} (attempt ${attempt}, next in ${delayMs} ms): ${(error as Error).message}`),
      },
    );
  } catch (error) {
    const outcome = databaseNotUpYet(error) ? `did not accept a connection within ${timeoutMs} ms` : 'refused the connection';
    throw new StartupError(`Postgres at ${where} ${outcome}: ${(error as Error)?.message}`);
  }
}
