import pg from 'pg';

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

export function createPool(databaseUrl: string, max = 20, onIdleError: (error: Error) => void = () => undefined): pg.Pool {
  const pool = new pg.Pool({ connectionString: databaseUrl, max, connectionTimeoutMillis: 5_000, idleTimeoutMillis: 30_000 });
  // An idle client whose server went away (a restart, a failover) is dropped by the pool; without a
  // listener that 'error' event would crash the process.
  pool.on('error', onIdleError);
  return pool;
}

/** Runs `work` in one database transaction; any throw rolls everything back. */
export async function withTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
