import path from 'node:path';
import { runner } from 'node-pg-migrate';
import pg from 'pg';
import { REPO_ROOT } from '../config';

export const MIGRATIONS_DIR = path.join(REPO_ROOT, 'migrations');

/** Applies every pending migration; applying twice is a no-op. Concurrent callers serialize on a lock. */
export async function migrate(databaseUrl: string, log: (message: string) => void = () => undefined): Promise<string[]> {
  // Our own client, ended before we return: one the runner opened itself could still be closing, and a
  // server ending it then (a restart, a dropped database) would raise an 'error' nobody listens to.
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const applied = await runner({
      dbClient: client,
      dir: MIGRATIONS_DIR,
      direction: 'up',
      migrationsTable: 'pgmigrations',
      count: Infinity,
      singleTransaction: true,
      noLock: false,
      verbose: false,
      log: () => undefined,
    });
    for (const migration of applied) log(`applied migration ${migration.name}`);
    return applied.map((migration) => migration.name);
  } finally {
    await client.end();
  }
}
