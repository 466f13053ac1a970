/**
 * `npm run cluster`: the service on the production topology, on one box. The same settings and addresses as
 * `npm start`, but:
 * - Temporal is the real server (go.temporal.io/server, built once into .tools/), its persistence and SQL
 *   visibility in their own databases on the ledger's Postgres (the embedded one unless DATABASE_URL), with
 *   TEMPORAL_HISTORY_SHARDS history shards, and the Temporal Web UI server beside it;
 * - the API runs as API_PROCESSES processes sharing PORT (node:cluster), the Temporal workers as
 *   WORKER_PROCESSES processes; each is restarted with backoff when it dies, from its role's warm spare
 *   (ops/warmSpare.ts) when one stands by.
 * docs/production.md explains the processes and what scales what.
 */
import cluster from 'node:cluster';
import path from 'node:path';
import pg from 'pg';
import { rowOf } from '../../src/assert';
import { temporalAddressOf, type Config } from '../../src/config';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import type { Logger } from '../../src/logger';
import { ensureClusterTools } from '../goTools';
import { assertPortFree, hostAndPort } from '../../src/platform/ports';
import { announceReady, ledgerDatabase, startHost, type ServiceHost } from '../serviceHost';
import { connectTemporal, temporalConnectionOptions } from '../../src/platform/temporal';
import {
  CLUSTER_SERVER_PORT_COUNT,
  clusterServerPorts,
  prepareTemporalDatabases,
  startTemporalServer,
  startTemporalUi,
  TEMPORAL_SERVER_CONNECTIONS,
} from '../temporalServer';
import { bundleWorkflowsOnce, launchApiProcess, launchWorkerProcess, startApiProcess, startWorkerProcess } from '../clusterProcesses';
import { WARM_SPARES_PER_ROLE, WarmSpare } from '../warmSpare';
import { StartupError } from '../../src/platform/startupError';
import { ensureSettlementSchedule } from '../../src/settlement/schedule';
import { ensureAchInboundSchedule } from '../../src/ach/inboundSchedule';
import { ensureAchSchedule, warnIfAchUndeliverable } from '../../src/ach/schedule';
import { runMain, WORKER_PER_PROCESS_KEYS } from '../run';

type WorkerMetricsEnv = Partial<Record<(typeof WORKER_PER_PROCESS_KEYS)[number], string>>;

/** The metrics ports of worker process `index`: the first uses the configured ones, the next the pairs after. */
function workerMetricsEnv(config: Config, index: number): WorkerMetricsEnv {
  const env: WorkerMetricsEnv = {};
  if (config.TEMPORAL_METRICS_ADDRESS !== 'off') {
    const { host, port } = hostAndPort(config.TEMPORAL_METRICS_ADDRESS);
    env.TEMPORAL_METRICS_ADDRESS = `${host}:${port + 2 * index}`;
  }
  if (config.WORKER_METRICS_PORT !== 0) env.WORKER_METRICS_PORT = String(config.WORKER_METRICS_PORT + 2 * index);
  return env;
}

/** The address as printed: an operator's DATABASE_URL may carry a real password. */
function withoutPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

/** The warm spares of the api and worker roles (ops/warmSpare.ts), WARM_SPARES_PER_ROLE each; armed once every process serves. */
function warmSpares(config: Config, log: Logger, childEnv: NodeJS.ProcessEnv, bundle: string) {
  const common = {
    enabled: config.CLUSTER_WARM_SPARES === 'on',
    count: WARM_SPARES_PER_ROLE,
    log: { info: (message: string) => log.info(message), warn: (message: string) => log.warn(message) },
  };
  return {
    api: new WarmSpare({ ...common, role: 'api', launch: launchApiProcess, env: childEnv }),
    worker: new WarmSpare({ ...common, role: 'worker', launch: launchWorkerProcess, env: { ...childEnv, LEDGER_WORKFLOW_BUNDLE: bundle } }),
  };
}

/** Connections the primary keeps (migrations, the schedule, the demo organization). */
const PRIMARY_POOL = 4;
/** Left for the operator CLI and a psql session. */
const SPARE_CONNECTIONS = 5;

/**
 * Refuses to start when the processes' pools could ask Postgres for more connections than it allows: a pool
 * that cannot connect fails requests ("too many clients") long after the start looked fine.
 */
async function assertConnectionBudget(databaseUrl: string, config: Config): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const { rows } = await client
    .query<{ max: number; reserved: number }>(
      `SELECT current_setting('max_connections')::int AS max, current_setting('superuser_reserved_connections')::int AS reserved`,
    )
    .finally(() => client.end());
  const settings = rowOf(rows, 'current_setting answers one row');
  const available = settings.max - settings.reserved;
  const temporal = config.TEMPORAL_ADDRESS ? 0 : TEMPORAL_SERVER_CONNECTIONS.total;
  // Each process holds one more than its pool: an api the edge's LISTEN connection (key and rate-limit
  // invalidation), a worker its lifecycle drainer's (pokes for the lifecycle queue).
  const processes = (config.API_PROCESSES + config.WORKER_PROCESSES) * (config.DATABASE_POOL_MAX + 1);
  const needed = processes + PRIMARY_POOL + temporal + SPARE_CONNECTIONS;
  if (needed > available) {
    throw new StartupError(
      `(API_PROCESSES ${config.API_PROCESSES} + WORKER_PROCESSES ${config.WORKER_PROCESSES}) × (DATABASE_POOL_MAX ${config.DATABASE_POOL_MAX} + 1) ` +
        `+ ${PRIMARY_POOL + temporal + SPARE_CONNECTIONS} (this process, the Temporal server, spare) = ${needed} Postgres connections, ` +
        `but the server allows ${available}. Lower DATABASE_POOL_MAX or the process counts, or raise max_connections.`,
    );
  }
}

/**
 * The Temporal server on the ledger's Postgres (its databases created or upgraded first) and its Web UI, both
 * supervised; answers the UI's address.
 */
async function startTemporal(host: ServiceHost, config: Config, databaseUrl: string, say: (line: string) => void): Promise<string> {
  const ports = clusterServerPorts(config.TEMPORAL_PORT);
  if (ports.workerMembership > 32_767) {
    throw new StartupError(
      `TEMPORAL_PORT=${config.TEMPORAL_PORT}: npm run cluster uses it and the ${CLUSTER_SERVER_PORT_COUNT - 1} ports after it, which must stay below 32768 (the server stores membership ports as smallint).`,
    );
  }
  const tools = await ensureClusterTools(say);
  const databases = {
    serverUrl: databaseUrl,
    persistence: config.TEMPORAL_PERSISTENCE_DATABASE,
    visibility: config.TEMPORAL_VISIBILITY_DATABASE,
  };
  const serverDir = path.join(config.DATA_DIR, 'temporal-server');
  await prepareTemporalDatabases(tools.sqlTool, databases, say, serverDir);
  const startServer = async () => {
    for (const [name, port] of Object.entries(ports) as Array<[string, number]>)
      await assertPortFree(`Temporal server (${name})`, port, 'TEMPORAL_PORT');
    return startTemporalServer({
      server: tools.server,
      databases,
      ports,
      historyShards: config.TEMPORAL_HISTORY_SHARDS,
      namespace: config.TEMPORAL_NAMESPACE,
      dir: serverDir,
    });
  };
  const server = await host.startSupervised('Temporal server', 'temporal_server', startServer);
  const startUi = async () => {
    await assertPortFree('Temporal Web UI', config.TEMPORAL_UI_PORT, 'TEMPORAL_UI_PORT');
    return startTemporalUi({
      ui: tools.ui,
      port: config.TEMPORAL_UI_PORT,
      temporalAddress: server.address,
      namespace: config.TEMPORAL_NAMESPACE,
      dir: path.join(serverDir, 'ui'),
    });
  };
  return (await host.startSupervised('Temporal Web UI', null, startUi)).url;
}

/**
 * The workflow bundle needs nothing else, so it is built while Postgres and Temporal start. Awaited where it is
 * used; a failure before that point is reported there, not as an unhandled rejection.
 */
function bundleEarly(config: Config, log: Logger): Promise<string> {
  const bundling = bundleWorkflowsOnce(path.join(config.DATA_DIR, 'cluster'), log);
  bundling.catch(() => undefined);
  return bundling;
}

runMain(async () => {
  if (!cluster.isPrimary) throw new Error('ops/bin/cluster.ts runs as the primary only');
  const { startedAt, config, log, say, host } = startHost('api processes, workers drain, Temporal, Postgres');

  const bundling = bundleEarly(config, log);
  try {
    const databaseUrl = await ledgerDatabase(host, config, say);
    await assertConnectionBudget(databaseUrl, config);
    // The ledger's migrations and the Temporal server's databases and start are independent of each other.
    const [temporalUi] = await Promise.all([
      config.TEMPORAL_ADDRESS ? null : startTemporal(host, config, databaseUrl, say),
      migrate(databaseUrl, (message) => log.info(message)),
    ]);
    const address = temporalAddressOf(config);
    const pool = createPool(databaseUrl, PRIMARY_POOL, (error) => log.warn({ err: error }, 'idle database connection lost'));
    host.onStop('postgres pool', () => pool.end());
    const { connection, client } = await connectTemporal(address, config.TEMPORAL_NAMESPACE, temporalConnectionOptions(config));
    host.onStop('temporal client', () => connection.close());

    // Every child gets the primary's settings with the addresses resolved, so none starts services of its own;
    // the api processes' console links workflows to the Web UI started here unless TEMPORAL_UI_URL names another.
    const childEnv = {
      ...process.env,
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: address,
      ...(temporalUi && !config.TEMPORAL_UI_URL ? { TEMPORAL_UI_URL: temporalUi } : {}),
    };
    const bundle = await bundling;
    const spares = warmSpares(config, log, childEnv, bundle);
    for (let index = 0; index < config.WORKER_PROCESSES; index += 1) {
      const env = { ...childEnv, ...workerMetricsEnv(config, index), LEDGER_WORKFLOW_BUNDLE: bundle };
      await host.startSupervised(`worker process ${index + 1}`, `worker_${index + 1}`, () =>
        startWorkerProcess({ env, client, taskQueue: config.TEMPORAL_TASK_QUEUE, spare: spares.worker }),
      );
    }
    // The daily window close (SPEC §10), created or updated at every start.
    await ensureSettlementSchedule(client, { taskQueue: config.TEMPORAL_TASK_QUEUE, cutoff: config.SETTLEMENT_CUTOFF });
    // SPEC §25: production polls the bank's inbound/ for returns and notifications of change.
    await ensureAchInboundSchedule(client, config.TEMPORAL_TASK_QUEUE, config);
    // The ACH windows (SPEC §24), likewise; says so when production builds files it cannot deliver.
    await ensureAchSchedule(client, config.TEMPORAL_TASK_QUEUE, config);
    warnIfAchUndeliverable(config, log);
    await assertPortFree('API', config.PORT, 'PORT', config.HOST);
    let apiUrl = '';
    for (let index = 0; index < config.API_PROCESSES; index += 1) {
      const api = await host.startSupervised(`api process ${index + 1}`, null, () => startApiProcess({ env: childEnv, spare: spares.api }));
      apiUrl = api.url;
    }
    // Torn down first (last in); started once every process serves, so they do not slow the start.
    host.onStop('warm spares', async () => {
      await Promise.all([spares.api.stop(), spares.worker.stop()]);
    });

    await announceReady({
      say,
      config,
      pool,
      startedAt,
      apiUrl,
      temporalUi,
      temporalAddress: address,
      more: [
        `Processes      ${config.API_PROCESSES} api (sharing port ${config.PORT}), ${config.WORKER_PROCESSES} worker, ` +
          (config.TEMPORAL_ADDRESS ? 'Temporal external' : `Temporal server ${address} (${config.TEMPORAL_HISTORY_SHARDS} history shards)`),
        `Database       ${withoutPassword(databaseUrl)}`,
      ],
    });
    spares.api.arm();
    spares.worker.arm();
  } catch (error) {
    await host.stopAll();
    throw error;
  }
});
