/**
 * `npm start`: the whole service on its embedded defaults — Postgres (unless DATABASE_URL), a Temporal dev
 * server with its Web UI (unless TEMPORAL_ADDRESS), migrations, search attributes, the worker and the API.
 */
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { startApi } from '../api';
import { loadConfig, temporalAddressOf } from '../config';
import { migrate } from '../db/migrate';
import { createPool } from '../db/pool';
import { createLogger } from '../logger';
import { countOrganizations, createOrganization } from '../orgs/repo';
import { startTemporalDevServer } from '../platform/devServer';
import { startEmbeddedPostgres } from '../platform/embeddedPostgres';
import { connectTemporal, registerSearchAttributes } from '../platform/temporal';
import { ensureTemporalCli } from '../platform/temporalCli';
import { ensureSettlementSchedule } from '../settlement/schedule';
import { startWorker } from '../worker';
import { onShutdownSignal, runMain } from './run';

runMain(async () => {
  const startedAt = Date.now();
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL);
  Runtime.install({ logger: new DefaultLogger('WARN') });
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
    let databaseUrl = config.DATABASE_URL;
    if (!databaseUrl) {
      const embedded = await startEmbeddedPostgres(config.DATA_DIR, config.EMBEDDED_PG_PORT);
      teardown.push(['embedded postgres', () => embedded.stop()]);
      databaseUrl = embedded.databaseUrl;
    }
    let temporalUi: string | null = null;
    if (!config.TEMPORAL_ADDRESS) {
      const cliPath = await ensureTemporalCli(process.env, say);
      const dev = await startTemporalDevServer({
        cliPath,
        port: config.TEMPORAL_PORT,
        uiPort: config.TEMPORAL_UI_PORT,
        dbFile: path.join(config.DATA_DIR, 'temporal', 'temporal.db'),
        namespace: config.TEMPORAL_NAMESPACE,
        logFile: path.join(config.DATA_DIR, 'temporal', 'server.log'),
        pidFile: path.join(config.DATA_DIR, 'temporal', 'server.pid'),
      });
      teardown.push(['temporal dev server', () => dev.stop()]);
      temporalUi = dev.uiUrl;
    }
    const address = temporalAddressOf(config);
    await migrate(databaseUrl, (message) => log.info(message));
    const pool = createPool(databaseUrl, config.DATABASE_POOL_MAX, (error) => log.warn({ err: error }, 'idle database connection lost'));
    teardown.push(['postgres pool', () => pool.end()]);
    const { connection, client } = await connectTemporal(address, config.TEMPORAL_NAMESPACE);
    teardown.push(['temporal client', () => connection.close()]);
    await registerSearchAttributes(connection, config.TEMPORAL_NAMESPACE);
    const worker = await startWorker({ config, pool, log, temporal: client, address });
    teardown.push(['worker', () => worker.shutdown()]);
    // The daily window close (SPEC §10), created or updated at every start.
    await ensureSettlementSchedule(client, { taskQueue: config.TEMPORAL_TASK_QUEUE, cutoff: config.SETTLEMENT_CUTOFF });
    const api = await startApi({ config, pool, log, temporal: client });
    teardown.push(['api', () => api.close()]);

    const firstStart = (await countOrganizations(pool)) === 0;
    const demo = firstStart && config.LEDGER_ENVIRONMENT === 'sandbox'
      ? await createOrganization(pool, { name: 'Demo operator', kycRequired: true, environment: 'sandbox' })
      : null;

    say('');
    say(`Payments ledger (${config.LEDGER_ENVIRONMENT}) ready in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
    say(`  API            ${api.url}`);
    say(`  API reference  ${api.url}/docs`);
    say(`  Temporal UI    ${temporalUi ?? `(external Temporal at ${address})`}`);
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
