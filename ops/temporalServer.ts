import fs from 'node:fs';
import path from 'node:path';
import { msToTs } from '@temporalio/common/lib/time';
import pg from 'pg';
import { pollWhileRunning, readyOrStopped, runToEnd, spawnService, type ServiceProcess } from './childProcess';
import { EAGER_ACTIVITIES } from './devServer';
import { connectTemporal, registerSearchAttributes, waitForTemporal } from '../src/platform/temporal';

/**
 * The production topology's Temporal (`npm run cluster`, the cluster test project): the real server built from
 * the Go module proxy, one process running all four services (frontend, history, matching, worker), with its
 * persistence and SQL visibility in two Postgres databases that the server's own SQL tool creates and upgrades.
 * docker-compose.yml runs the same release as images; docs/production.md explains the choices.
 */

export interface TemporalDatabases {
  /** Postgres server (any database on it): the SQL tool and the server connect with its host, port and user. */
  serverUrl: string;
  persistence: string;
  visibility: string;
}

/** The ports one server process listens on; `frontend` is the gRPC address clients and workers use. */
export interface TemporalServerPorts {
  frontend: number;
  frontendHttp: number;
  history: number;
  matching: number;
  worker: number;
  frontendMembership: number;
  historyMembership: number;
  matchingMembership: number;
  workerMembership: number;
}

/** `npm run cluster`'s layout: the frontend on TEMPORAL_PORT and the server's other listeners on the next eight. */
export const CLUSTER_SERVER_PORT_COUNT = 9;

export function clusterServerPorts(frontend: number): TemporalServerPorts {
  return {
    frontend,
    frontendHttp: frontend + 1,
    history: frontend + 2,
    matching: frontend + 3,
    worker: frontend + 4,
    frontendMembership: frontend + 5,
    historyMembership: frontend + 6,
    matchingMembership: frontend + 7,
    workerMembership: frontend + 8,
  };
}

/**
 * The server's connection pools on Postgres, per pool: each of its four services (frontend, history, matching,
 * worker) opens its own persistence pool, and visibility is opened by more than one component per service.
 * `total` bounds that — 4 persistence pools and 8 visibility pools — and is part of the connection budget
 * `npm run cluster` checks before it starts anything; the rendered configuration opens pools of these sizes
 * (temporalServerConfig). Measured in the lifecycle bench on this server (1,000 lifecycles, 32 clients): at most
 * 20 persistence and 5 visibility connections; before stop 49 the configuration opened pools of 20 and 10 whatever
 * this said, and the same bench peaked at 39 and 13 (docs/production.md).
 */
const POOL_SIZES = { persistence: 8, visibility: 2 };
export const TEMPORAL_SERVER_CONNECTIONS = { ...POOL_SIZES, total: 4 * POOL_SIZES.persistence + 8 * POOL_SIZES.visibility };

/** Retention of closed workflows' histories in the namespace we create (the capacity model in docs/production.md). */
export const NAMESPACE_RETENTION_DAYS = 7;

function connectionParts(serverUrl: string) {
  const url = new URL(serverUrl);
  return {
    host: url.hostname || '127.0.0.1',
    port: Number(url.port || 5432),
    user: decodeURIComponent(url.username || 'postgres'),
    password: decodeURIComponent(url.password),
  };
}

/**
 * Creates the server's two databases when absent and brings their schemas to the release's versions with the
 * SQL tool (the schemas are embedded in it): `setup-schema -v 0.0` (its version table; a database already past
 * 0.0 is left as it is), then `update-schema`, which applies only the versions a database does not have yet, so
 * every start runs both.
 */
export async function prepareTemporalDatabases(
  sqlTool: string,
  databases: TemporalDatabases,
  log: (message: string) => void,
  /** Where the SQL tool's output goes: `sql-tool-<database>.log` (appended), its last lines in an error. */
  logDir: string,
): Promise<void> {
  const admin = new pg.Client({ connectionString: databases.serverUrl });
  await admin.connect();
  try {
    for (const database of [databases.persistence, databases.visibility]) {
      const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
      if (exists.rowCount === 0) {
        log(`Creating Temporal's database ${database}`);
        await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`);
      }
    }
  } finally {
    await admin.end();
  }
  const { host, port, user, password } = connectionParts(databases.serverUrl);
  // The two databases are independent: their schemas are brought up at the same time.
  await Promise.all(
    (
      [
        [databases.persistence, 'postgresql/v12/temporal'],
        [databases.visibility, 'postgresql/v12/visibility'],
      ] as const
    ).map(async ([database, schema]) => {
      const base = ['--plugin', 'postgres12', '--ep', host, '-p', String(port), '-u', user, '--db', database];
      // The password goes through the tool's SQL_PASSWORD variable, not its command line (which `ps` shows).
      const run = (args: string[]) =>
        runToEnd({
          command: sqlTool,
          name: `temporal SQL tool ${args.slice(-3).join(' ')} (${database})`,
          args: [...base, ...args],
          output: { logFile: path.join(logDir, `sql-tool-${database}.log`) },
          env: { ...process.env, SQL_PASSWORD: password },
        });
      await run(['setup-schema', '-v', '0.0']);
      await run(['update-schema', '--schema-name', schema]);
    }),
  );
}

export interface TemporalServerOptions {
  server: string;
  databases: TemporalDatabases;
  ports: TemporalServerPorts;
  /** Fixed when the persistence database is first used; a server started later with another count refuses to run. */
  historyShards: number;
  namespace: string;
  /** Holds the rendered configuration, the log and the pid file. */
  dir: string;
  readyTimeoutMs?: number;
}

/** The server's configuration. YAML is a superset of JSON, so the object is written as JSON. */
export function temporalServerConfig(options: TemporalServerOptions, dynamicConfigFile: string) {
  const { host, port, user, password } = connectionParts(options.databases.serverUrl);
  const store = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${host}:${port}`,
      connectProtocol: 'tcp',
      user,
      password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (grpcPort: number, membershipPort: number, extra: Record<string, unknown> = {}) => ({
    rpc: { grpcPort, membershipPort, bindOnIP: '127.0.0.1', ...extra },
  });
  const { ports } = options;
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'ledger-default',
      visibilityStore: 'ledger-visibility',
      numHistoryShards: options.historyShards,
      datastores: {
        'ledger-default': store(options.databases.persistence, POOL_SIZES.persistence),
        'ledger-visibility': store(options.databases.visibility, POOL_SIZES.visibility),
      },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services: {
      frontend: service(ports.frontend, ports.frontendMembership, { httpPort: ports.frontendHttp }),
      history: service(ports.history, ports.historyMembership),
      matching: service(ports.matching, ports.matchingMembership),
      worker: service(ports.worker, ports.workerMembership),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: {
          enabled: true,
          initialFailoverVersion: 1,
          rpcName: 'frontend',
          rpcAddress: `127.0.0.1:${ports.frontend}`,
          httpAddress: `127.0.0.1:${ports.frontendHttp}`,
        },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: dynamicConfigFile, pollInterval: '10s' },
  };
}

/**
 * Dynamic configuration.
 * - The search-attribute cache is left as Temporal ships it for production (refreshed each minute;
 *   `system.forceSearchAttributesCacheRefreshOnRead`, the CLI dev server's test setting, stays off): with SQL
 *   visibility the cached metadata is the pre-allocated fields (Keyword01…), which the server writes before any of
 *   its services starts, and the names the ledger registers through the operator API after the start are aliases
 *   kept on the namespace, in the namespace registry, which that setting does not touch. Forced, every
 *   search-attribute read took a process-wide mutex and a round trip to Postgres (upsert validation included,
 *   while the history service holds the workflow's lock).
 * - The history service runs at most 32 transfer, 32 timer and 32 visibility tasks at once (512 each by
 *   default). A task gets 3 s from its start to finish (the server's `taskTimeout`), its persistence calls
 *   included, and the persistence pool holds POOL_SIZES.persistence connections: hundreds of tasks started at
 *   once (after a restart, on a loaded box) spent their 3 s waiting for a connection, failed, and were retried
 *   with a growing backoff; waiting in the scheduler's queue costs them none of it (docs/reliability.md, "Late
 *   cash_ins").
 * - Activities are handed to the worker that scheduled them in the answer to its workflow task
 *   (EAGER_ACTIVITIES, as on `npm start`'s dev server; see there).
 */
export const TEMPORAL_DYNAMIC_CONFIG: Record<string, unknown> = {
  'limit.maxIDLength': 255,
  [EAGER_ACTIVITIES]: true,
  ...Object.fromEntries(['transfer', 'timer', 'visibility'].map((queue) => [`history.${queue}ProcessorSchedulerWorkerCount`, 32])),
};

export interface TemporalServer extends ServiceProcess {
  address: string;
}

/**
 * Starts the server process (stopping one a killed earlier run left behind), waits for its frontend, and makes
 * sure the namespace and the ledger's search attributes exist. The process is detached from our process group
 * so Ctrl-C reaches us first and the workers drain before Temporal stops.
 */
export async function startTemporalServer(options: TemporalServerOptions): Promise<TemporalServer> {
  const configDir = path.join(options.dir, 'config');
  fs.mkdirSync(configDir, { recursive: true });
  const dynamicConfigFile = path.join(configDir, 'dynamic.yaml');
  const dynamic = Object.fromEntries(Object.entries(TEMPORAL_DYNAMIC_CONFIG).map(([key, value]) => [key, [{ value, constraints: {} }]]));
  fs.writeFileSync(dynamicConfigFile, JSON.stringify(dynamic, null, 2));
  // It holds the database password: readable by us only.
  fs.writeFileSync(path.join(configDir, 'ledger.yaml'), JSON.stringify(temporalServerConfig(options, dynamicConfigFile), null, 2), {
    mode: 0o600,
  });
  fs.chmodSync(path.join(configDir, 'ledger.yaml'), 0o600);
  const child = await spawnService({
    command: options.server,
    args: ['--root', options.dir, '--config', 'config', '--env', 'ledger', '--allow-no-auth', 'start'],
    logFile: path.join(options.dir, 'server.log'),
    pidFile: path.join(options.dir, 'server.pid'),
    leftoverMarker: options.server,
    killAfterMs: 15_000,
  });
  const address = `127.0.0.1:${options.ports.frontend}`;
  const ready = (async () => {
    await waitForTemporal(address, options.readyTimeoutMs ?? 90_000);
    await ensureNamespace(address, options.namespace);
  })();
  await readyOrStopped(child, 'the Temporal server', ready);
  return { ...child, address };
}

/** Registers the namespace (idempotent) and waits until the frontend serves it, then the search attributes. */
async function ensureNamespace(address: string, namespace: string): Promise<void> {
  const { connection } = await connectTemporal(address, namespace);
  try {
    try {
      await connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs(`${NAMESPACE_RETENTION_DAYS} days`),
      });
    } catch (error) {
      if (!/already exists|already registered/i.test((error as Error).message)) throw error;
    }
    // The frontend learns of a new namespace through its namespace cache, refreshed every few seconds.
    await waitForTemporal(address, 30_000, { namespace });
    await registerSearchAttributes(connection, namespace);
  } finally {
    await connection.close();
  }
}

export interface TemporalUi extends ServiceProcess {
  url: string;
}

/** The Temporal Web UI server (the same release the CLI's dev server embeds), pointed at the frontend. */
export async function startTemporalUi(options: { ui: string; port: number; temporalAddress: string; namespace: string; dir: string }) {
  const configDir = path.join(options.dir, 'config');
  fs.mkdirSync(configDir, { recursive: true });
  const config = {
    temporalGrpcAddress: options.temporalAddress,
    host: '127.0.0.1',
    port: options.port,
    enableUi: true,
    defaultNamespace: options.namespace,
    cors: { allowOrigins: [`http://127.0.0.1:${options.port}`, `http://localhost:${options.port}`] },
    notifyOnNewVersion: false,
  };
  fs.writeFileSync(path.join(configDir, 'ledger.yaml'), JSON.stringify(config, null, 2));
  const child = await spawnService({
    command: options.ui,
    args: ['--root', options.dir, '--config', 'config', '--env', 'ledger', 'start'],
    logFile: path.join(options.dir, 'ui.log'),
    pidFile: path.join(options.dir, 'ui.pid'),
    leftoverMarker: options.ui,
  });
  const url = `http://127.0.0.1:${options.port}`;
  const answering = pollWhileRunning(
    child.process,
    async () => {
      const response = await fetch(url);
      if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
  try {
    await readyOrStopped(child, 'the Temporal Web UI', answering);
  } catch (error) {
    throw new Error(`the Temporal Web UI did not answer at ${url} within 30 s (${(error as Error).message}); see ${options.dir}/ui.log`);
  }
  return { ...child, url } satisfies TemporalUi;
}
