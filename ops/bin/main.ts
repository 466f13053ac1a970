/**
 * `npm start`: the whole service on its embedded defaults — Postgres (unless DATABASE_URL), a Temporal dev
 * server with its Web UI (unless TEMPORAL_ADDRESS), migrations, search attributes, the worker and the API.
 */
import path from 'node:path';
import { startApi } from '../../src/api';
import { temporalAddressOf } from '../../src/config';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { devServerLiveness, startTemporalDevServer } from '../devServer';
import { assertPortFree } from '../../src/platform/ports';
import { announceReady, ledgerDatabase, startHost } from '../serviceHost';
import { connectTemporal, registerSearchAttributes, temporalConnectionOptions } from '../../src/platform/temporal';
import { installTemporalRuntime } from '../../src/platform/temporalRuntime';
import { ensureTemporalCli } from '../goTools';
import { ensureSettlementSchedule } from '../../src/settlement/schedule';
import { ensureAchInboundSchedule } from '../../src/ach/inboundSchedule';
import { ensureAchSchedule, warnIfAchUndeliverable } from '../../src/ach/schedule';
import { EXPECTED_ACTIVITY_FAILURES, startWorker } from '../../src/worker';
import { runMain } from '../run';

runMain(async () => {
  const { startedAt, config, log, say, host } = startHost('api, worker drain, connections, servers');

  try {
    const databaseUrl = await ledgerDatabase(host, config, say);
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
      const unresponsiveMs = config.TEMPORAL_DEV_SERVER_UNRESPONSIVE_SECONDS * 1000;
      const health =
        unresponsiveMs > 0
          ? devServerLiveness({ address: `127.0.0.1:${config.TEMPORAL_PORT}`, namespace: config.TEMPORAL_NAMESPACE, unresponsiveMs })
          : null;
      if (health) host.onStop('dev server health check', () => health.close());
      const dev = await host.startSupervised(
        'Temporal dev server',
        'temporal_dev_server',
        startDevServer,
        health ? { liveness: health.liveness } : {},
      );
      temporalUi = dev.uiUrl;
    }
    const address = temporalAddressOf(config);
    // The worker's runtime: SDK logs through pino, SDK metrics on TEMPORAL_METRICS_ADDRESS (api /metrics has ours).
    await installTemporalRuntime(config, log, EXPECTED_ACTIVITY_FAILURES);
    await migrate(databaseUrl, (message) => log.info(message));
    const pool = createPool(databaseUrl, config.DATABASE_POOL_MAX, (error) => log.warn({ err: error }, 'idle database connection lost'));
    host.onStop('postgres pool', () => pool.end());
    const { connection, client } = await connectTemporal(address, config.TEMPORAL_NAMESPACE, temporalConnectionOptions(config));
    host.onStop('temporal client', () => connection.close());
    await registerSearchAttributes(connection, config.TEMPORAL_NAMESPACE, log);
    const worker = await startWorker({ config, pool, log, temporal: client, address });
    host.onStop('worker', () => worker.shutdown());
    // The daily window close (SPEC §10), created or updated at every start.
    await ensureSettlementSchedule(client, { taskQueue: config.TEMPORAL_TASK_QUEUE, cutoff: config.SETTLEMENT_CUTOFF });
    // SPEC §25: production polls the bank's inbound/ for returns and notifications of change.
    await ensureAchInboundSchedule(client, config.TEMPORAL_TASK_QUEUE, config);
    // The ACH windows (SPEC §24), likewise; says so when production builds files it cannot deliver.
    await ensureAchSchedule(client, config.TEMPORAL_TASK_QUEUE, config);
    warnIfAchUndeliverable(config, log);
    // SPEC §20: the API serves reads and writes while Temporal is away, so the dev server's supervision is
    // named by /readyz without failing it; Postgres's fails it.
    const { temporal_dev_server: temporalDevServer, ...required } = host.readiness;
    const api = await startApi({
      config,
      pool,
      log,
      temporal: client,
      readiness: required,
      ...(temporalDevServer ? { informational: { temporal_dev_server: temporalDevServer } } : {}),
    });
    host.onStop('api', () => api.close());
    await announceReady({ say, config, pool, startedAt, apiUrl: api.url, temporalUi, temporalAddress: address });
  } catch (error) {
    await host.stopAll();
    throw error;
  }
});
