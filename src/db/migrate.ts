import path from 'node:path';
import { runner } from 'node-pg-migrate';
import pg from 'pg';
import { REPO_ROOT } from '../config';

export const MIGRATIONS_DIR = path.join(REPO_ROOT, 'migrations');

/**
 * The advisory lock node-pg-migrate takes (its runner's PG_MIGRATE_LOCK_ID), so its own command-line tool run by
 * hand and our processes exclude each other too.
 */
const MIGRATION_LOCK_ID = '7241865325823964';
/** How long a start waits for another process's migrations before it fails (a long migration takes minutes). */
const MIGRATION_LOCK_WAIT = '10min';

/**
 * Applies every pending migration; applying twice is a no-op. Concurrent callers (the processes of `npm run
 * cluster`, starting at once) wait for each other on one session lock, and each then applies what is left.
 * node-pg-migrate's own lock is a try-lock: the second of two callers failed ("Another migration is already
 * running") instead of waiting.
 */
export async function migrate(databaseUrl: string, log: (message: string) => void = () => undefined): Promise<string[]> {
  // Our own client, ended before we return: one the runner opened itself could still be closing, and a
  // server ending it then (a restart, a dropped database) would raise an 'error' nobody listens to.
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => undefined);
  await client.connect();
  try {
    // The wait is bounded for this statement only; the migrations themselves run with the server's settings.
    // Ending the session (below, or a crash) releases the lock.
    await client
      .query(`SET lock_timeout = '${MIGRATION_LOCK_WAIT}'; SELECT pg_advisory_lock(${MIGRATION_LOCK_ID}); RESET lock_timeout`)
      .catch((error: { code?: string }) => {
        if (error.code !== '55P03') throw error;
        throw new Error(
          `another process has held the migration lock for ${MIGRATION_LOCK_WAIT}; its migrations are still running or stuck`,
        );
      });
    const applied = await runner({
      dbClient: client,
      dir: MIGRATIONS_DIR,
      direction: 'up',
      migrationsTable: 'pgmigrations',
      count: Infinity,
      singleTransaction: true,
      // Held already (above), by this session.
      noLock: true,
      verbose: false,
      log: () => undefined,
    });
    for (const migration of applied) log(`applied migration ${migration.name}`);
    return applied.map((migration) => migration.name);
  } finally {
    await client.end();
  }
}
