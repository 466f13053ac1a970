/** `npm run worker`: one Temporal worker process against the configured Postgres and Temporal. */
import { databaseUrlOf, loadConfig, temporalAddressOf } from '../../src/config';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { createLogger } from '../../src/logger';
import { serveWorkerMetrics } from '../../src/platform/metricsServer';
import { connectTemporal, registerSearchAttributes, temporalConnectionOptions } from '../../src/platform/temporal';
import { installTemporalRuntime } from '../../src/platform/temporalRuntime';
import { ensureSettlementSchedule } from '../../src/settlement/schedule';
import { ensureAchInboundSchedule } from '../../src/ach/inboundSchedule';
import { ensureAchSchedule, warnIfAchUndeliverable } from '../../src/ach/schedule';
import { EXPECTED_ACTIVITY_FAILURES, startWorker } from '../../src/worker';
import { onShutdownSignal, runMain, standbyIfSpare, waitForDependencies } from '../run';

runMain(async () => {
  let config = loadConfig();
  const log = createLogger(config.LOG_LEVEL, 'ledger-worker');
  await waitForDependencies(config, log);
  // Every process applies pending migrations at start; concurrent starts wait on one lock (src/db/migrate.ts).
  await migrate(databaseUrlOf(config), (message) => log.info(message));
  const pool = createPool(databaseUrlOf(config), config.DATABASE_POOL_MAX, (error) =>
    log.warn({ err: error }, 'idle database connection lost'),
  );
  const address = temporalAddressOf(config);
  const { connection, client } = await connectTemporal(address, config.TEMPORAL_NAMESPACE, temporalConnectionOptions(config));
  await registerSearchAttributes(connection, config.TEMPORAL_NAMESPACE, log);
  // A warm spare of `npm run cluster` waits here; taken over, it is the worker it replaces, with its metrics ports.
  if (await standbyIfSpare()) config = loadConfig();
  await installTemporalRuntime(config, log, EXPECTED_ACTIVITY_FAILURES);
  const metrics = config.WORKER_METRICS_PORT === 0 ? null : await serveWorkerMetrics(config.HOST, config.WORKER_METRICS_PORT);
  // LEDGER_WORKFLOW_BUNDLE: a prebuilt workflow bundle (tests and benches spawn many workers; bundling takes seconds).
  const workflowBundlePath = process.env.LEDGER_WORKFLOW_BUNDLE || undefined;
  const worker = await startWorker({ config, pool, log, temporal: client, address, ...(workflowBundlePath ? { workflowBundlePath } : {}) });
  // The daily window close (SPEC §10), created or updated at every start.
  await ensureSettlementSchedule(client, { taskQueue: config.TEMPORAL_TASK_QUEUE, cutoff: config.SETTLEMENT_CUTOFF });
  // SPEC §25: production polls the bank's inbound/ for returns and notifications of change.
  await ensureAchInboundSchedule(client, config.TEMPORAL_TASK_QUEUE, config);
  // The ACH windows (SPEC §24), likewise; says so when production builds files it cannot deliver.
  await ensureAchSchedule(client, config.TEMPORAL_TASK_QUEUE, config);
  warnIfAchUndeliverable(config, log);
  log.info(
    { taskQueue: config.TEMPORAL_TASK_QUEUE, metrics: metrics?.url ?? null, temporal_metrics: config.TEMPORAL_METRICS_ADDRESS },
    'worker running',
  );
  onShutdownSignal(async () => {
    await worker.shutdown();
    await connection.close();
    await pool.end();
    await metrics?.close();
  });
  await worker.running;
});
