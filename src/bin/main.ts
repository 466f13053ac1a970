/**
 * `npm start`: the whole service on its embedded defaults — Postgres (unless DATABASE_URL), a Temporal dev
 * server with its Web UI (unless TEMPORAL_ADDRESS), migrations, search attributes, the worker and the API.
 */
import path from 'node:path';
import { startApi } from '../api';
import { loadConfig, temporalAddressOf } from '../config';
import { migrate } from '../db/migrate';
import { createPool } from '../db/pool';
import { createLogger } from '../logger';
import { countOrganizations, createOrganization } from '../orgs/repo';
import { startTemporalDevServer } from '../platform/devServer';
import { startEmbeddedPostgres } from '../platform/embeddedPostgres';
import { assertPortFree } from '../platform/ports';
import { supervise, type SupervisedChild } from '../platform/supervisor';
import { connectTemporal, registerSearchAttributes, temporalConnectionOptions } from '../platform/temporal';
import { installTemporalRuntime } from '../platform/temporalRuntime';
import { ensureTemporalCli } from '../platform/goTools';
import { ensureSettlementSchedule } from '../settlement/schedule';
import { startWorker } from '../worker';
import { onShutdownSignal, runMain } from './run';

runMain(async () => {
  const startedAt = Date.now();
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL);
  const say = (message: string) => process.stdout.write(`${message}\n`);
  // Teardown steps, run in reverse order of start.
  const teardown: Array<[string, () => Promise<void>]> = [];
  const stopAll = async () => {
    for (const [name, stop] of teardown.reverse()) {
      await stop().catch((error: unknown) => log.error({ err: error }, `stopping ${name} failed`));
    }
  };
  onShutdownSignal(async (signal) => {
    say(`${signal}: stopping (api, worker drain, connections, servers)...`);
    await stopAll();
    say('Stopped.');
  });

  try {
    // The embedded services run supervised: restarted with backoff when they die, /readyz 503 meanwhile,
    // and `npm start` exits 1 naming the component once one keeps failing.
    const readiness: Record<string, () => Promise<void>> = {};
    const supervisorLog = { warn: (message: string) => log.warn(message), info: (message: string) => log.info(message) };
    const giveUp = (error: Error) => {
      process.stderr.write(`${error.message}\n`);
      void stopAll().finally(() => process.exit(1));
    };
    /** Starts a child service, then keeps it running: torn down last-in first-out, its health behind /readyz. */
    const startSupervised = async <T extends SupervisedChild>(
      component: string,
      readinessKey: string,
      start: () => Promise<T>,
    ): Promise<T> => {
      const first = await start();
      const supervisor = supervise({ component, first, start, log: supervisorLog, onGiveUp: giveUp });
      teardown.push([component, () => supervisor.stop()]);
      readiness[readinessKey] = () => supervisor.check();
      return first;
    };
    let databaseUrl = config.DATABASE_URL;
    if (!databaseUrl) {
      const embedded = await startSupervised('embedded Postgres', 'embedded_postgres', () =>
        startEmbeddedPostgres({ dataDir: config.DATA_DIR, port: config.EMBEDDED_PG_PORT, sharedDir: config.EMBEDDED_PG_SHARED_DIR, say }),
      );
      databaseUrl = embedded.databaseUrl;
    }
    let temporalUi: string | null = null;
    if (!config.TEMPORAL_ADDRESS) {
      const cliPath = await ensureTemporalCli(process.env, say);
      const startDevServer = async () => {
        await assertPortFree('Temporal dev server', config.TEMPORAL_PORT, 'TEMPORAL_PORT');
        await assertPortFree('Temporal Web UI', config.TEMPORAL_UI_PORT, 'TEMPORAL_UI_PORT');
        return startTemporalDevServer({
          cliPath,
          port: config.TEMPORAL_PORT,
          uiPort: config.TEMPORAL_UI_PORT,
          dbFile: path.join(config.DATA_DIR, 'temporal', 'temporal.db'),
          namespace: config.TEMPORAL_NAMESPACE,
          logFile: path.join(config.DATA_DIR, 'temporal', 'server.log'),
          pidFile: path.join(config.DATA_DIR, 'temporal', 'server.pid'),
        });
      };
      const dev = await startSupervised('Temporal dev server', 'temporal_dev_server', startDevServer);
      temporalUi = dev.uiUrl;
    }
    const address = temporalAddressOf(config);
    // The worker's runtime: SDK logs through pino, SDK metrics on TEMPORAL_METRICS_ADDRESS (api /metrics has ours).
    await installTemporalRuntime(config, log);
    await migrate(databaseUrl, (message) => log.info(message));
    const pool = createPool(databaseUrl, config.DATABASE_POOL_MAX, (error) => log.warn({ err: error }, 'idle database connection lost'));
    teardown.push(['postgres pool', () => pool.end()]);
    const { connection, client } = await connectTemporal(address, config.TEMPORAL_NAMESPACE, temporalConnectionOptions(config));
    teardown.push(['temporal client', () => connection.close()]);
    await registerSearchAttributes(connection, config.TEMPORAL_NAMESPACE, log);
    const worker = await startWorker({ config, pool, log, temporal: client, address });
    teardown.push(['worker', () => worker.shutdown()]);
    // The daily window close (SPEC §10), created or updated at every start.
    await ensureSettlementSchedule(client, { taskQueue: config.TEMPORAL_TASK_QUEUE, cutoff: config.SETTLEMENT_CUTOFF });
    const api = await startApi({ config, pool, log, temporal: client, readiness });
    teardown.push(['api', () => api.close()]);

    const firstStart = (await countOrganizations(pool)) === 0;
    const demo =
      firstStart && config.LEDGER_ENVIRONMENT === 'sandbox'
        ? await createOrganization(pool, { name: 'Demo operator', kycRequired: true, environment: 'sandbox' })
        : null;

    say('');
    say(`Payments ledger (${config.LEDGER_ENVIRONMENT}) ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
    say(`  API            ${api.url}`);
    say(`  API reference  ${api.url}/docs`);
    say(`  Temporal UI    ${temporalUi ?? `(external Temporal at ${address})`}`);
    say(
      `  Metrics        ${api.url}/metrics${config.TEMPORAL_METRICS_ADDRESS === 'off' ? '' : `, Temporal SDK http://${config.TEMPORAL_METRICS_ADDRESS}/metrics`}`,
    );
    if (demo) {
      say(`  Demo organization ${demo.organization.id}, account ${demo.account.id}`);
      say(`  Demo sandbox API key (shown once): ${demo.key.api_key}`);
      say(`  Try: curl -X POST -H "Authorization: Bearer ${demo.key.api_key}" ${api.url}/keys/verify`);
    }
    say('Ctrl-C stops everything.');
  } catch (error) {
    await stopAll();
    throw error;
  }
});
