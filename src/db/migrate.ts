import path from 'node:path';
import { runner } from 'node-pg-migrate';
import { REPO_ROOT } from '../config';

export const MIGRATIONS_DIR = path.join(REPO_ROOT, 'migrations');

/** Applies every pending migration; applying twice is a no-op. Concurrent callers serialize on a lock. */
export async function migrate(databaseUrl: string, log: (message: string) => void = () => undefined): Promise<string[]> {
  const applied = await runner({
    databaseUrl,
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
}
