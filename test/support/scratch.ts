import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { migrate } from '../../src/db/migrate';
import { startTemporalDevServer } from '../../ops/devServer';
import { ensureClusterTools } from '../../ops/goTools';
import { connectTemporal, registerSearchAttributes } from '../../src/platform/temporal';
import { CLUSTER_SERVER_PORT_COUNT, clusterServerPorts, prepareTemporalDatabases, startTemporalServer } from '../../ops/temporalServer';
import { freePort, freePortBlock } from './ports';

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
 * A new database `name` copied from `template` (a migrated database nobody connects to): Postgres copies its
 * files, a second where running every migration again takes several. `drop` removes it.
 */
export async function cloneScratchDatabase(
  adminUrl: string,
  template: string,
  name: string,
): Promise<{ databaseUrl: string; drop(): Promise<void> }> {
  await onAdmin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await onAdmin(adminUrl, `CREATE DATABASE ${name} TEMPLATE ${template}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { databaseUrl: url.toString(), drop: () => onAdmin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** Which Temporal a bench or test runs on: BENCH_TEMPORAL / LEDGER_TEST_TEMPORAL = dev (default) or cluster. */
export type TemporalTopology = 'dev' | 'cluster';

export function topologyFrom(value: string | undefined): TemporalTopology {
  if (value === undefined || value === '' || value === 'dev') return 'dev';
  if (value === 'cluster') return 'cluster';
  throw new Error(`unknown Temporal topology ${JSON.stringify(value)}: dev or cluster`);
}

export interface ScratchTemporal {
  topology: TemporalTopology;
  server: { address: string; process: ChildProcess };
  /** The server's log. */
  logFile: string;
  connection: Connection;
  client: Client;
  stop(): Promise<void>;
}

/**
 * A Temporal server of our own (no UI, free ports) with the ledger's search attributes, for the benches and
 * the tests that need one to themselves.
 * - `dev`: the CLI's dev server keeping its state in a SQLite file (`dbFile`, default temporal.db beside
 *   `logFile`) with `npm start`'s flags and pragmas, since that is the server `npm start` runs; `dbFile: null`
 *   keeps it in memory.
 * - `cluster`: the server `npm run cluster` runs (ops/temporalServer.ts), its persistence and
 *   visibility in two new databases on the Postgres at `adminUrl`, dropped by `stop`.
 */
export async function startScratchTemporal(
  cliPath: string,
  logFile: string,
  options: { dbFile?: string | null; topology?: TemporalTopology; adminUrl?: string; historyShards?: number } = {},
): Promise<ScratchTemporal> {
  const topology = options.topology ?? 'dev';
  let server: { address: string; process: ChildProcess; stop(): Promise<void> };
  let dropDatabases = async () => undefined as void;
  let serverLog = logFile;
  if (topology === 'cluster') {
    const adminUrl = options.adminUrl ?? 'postgres://postgres@127.0.0.1:5432/postgres';
    const tools = await ensureClusterTools();
    const prefix = `temporal_scratch_${Date.now()}_${process.pid}`;
    const databases = { serverUrl: adminUrl, persistence: prefix, visibility: `${prefix}_visibility` };
    await prepareTemporalDatabases(tools.sqlTool, databases, () => undefined, path.dirname(logFile));
    dropDatabases = async () => {
      for (const name of [databases.persistence, databases.visibility])
        await onAdmin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    };
    const ports = clusterServerPorts(await freePortBlock(CLUSTER_SERVER_PORT_COUNT));
    const dir = path.join(path.dirname(logFile), `temporal-server-${ports.frontend}`);
    serverLog = path.join(dir, 'server.log');
    try {
      server = await startTemporalServer({
        server: tools.server,
        databases,
        ports,
        historyShards: options.historyShards ?? 4,
        namespace: 'default',
        dir,
      });
    } catch (error) {
      await dropDatabases();
      throw error;
    }
  } else {
    const dbFile = options.dbFile === undefined ? path.join(path.dirname(logFile), 'temporal.db') : options.dbFile;
    server = await startTemporalDevServer({ cliPath, port: await freePort(), uiPort: null, dbFile, namespace: 'default', logFile });
  }
  const { connection, client } = await connectTemporal(server.address, 'default');
  await registerSearchAttributes(connection, 'default');
  return {
    topology,
    server,
    logFile: serverLog,
    connection,
    client,
    async stop() {
      await connection.close();
      await server.stop();
      await dropDatabases();
    },
  };
}
