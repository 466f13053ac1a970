import path from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { migrate } from '../../src/db/migrate';
import { startTemporalDevServer, type DevServer } from '../../src/platform/devServer';
import { connectTemporal, registerSearchAttributes } from '../../src/platform/temporal';
import { freePort } from './ports';

/** Runs one statement on the Postgres at `adminUrl` (a database there we may create and drop others from). */
async function onAdmin(adminUrl: string, sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

/**
 * A fresh, migrated database `name` beside the one `adminUrl` names (a leftover of that name is dropped
 * first); `drop` removes it, ending whatever is still connected to it.
 */
export async function createScratchDatabase(adminUrl: string, name: string): Promise<{ databaseUrl: string; drop(): Promise<void> }> {
  await onAdmin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await onAdmin(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  await migrate(databaseUrl);
  return { databaseUrl, drop: () => onAdmin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/**
 * A Temporal dev server of our own (no UI, a free port) with the ledger's search attributes, for the benches.
 * It keeps its state in a SQLite file (`dbFile`, default temporal.db beside `logFile`) with `npm start`'s
 * flags and pragmas, since that is the server users run and what a bench must measure; `dbFile: null` keeps
 * it in memory.
 */
export async function startScratchTemporal(
  cliPath: string,
  logFile: string,
  options: { dbFile?: string | null } = {},
): Promise<{
  dev: DevServer;
  connection: Connection;
  client: Client;
  stop(): Promise<void>;
}> {
  const dbFile = options.dbFile === undefined ? path.join(path.dirname(logFile), 'temporal.db') : options.dbFile;
  const dev = await startTemporalDevServer({ cliPath, port: await freePort(), uiPort: null, dbFile, namespace: 'default', logFile });
  const { connection, client } = await connectTemporal(dev.address, 'default');
  await registerSearchAttributes(connection, 'default');
  return {
    dev,
    connection,
    client,
    async stop() {
      await connection.close();
      await dev.stop();
    },
  };
}
