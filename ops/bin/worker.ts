/** `npm run worker`: one Temporal worker process against the configured Postgres and Temporal. */
import { databaseUrlOf, loadConfig, temporalAddressOf, type Config } from '../../src/config';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { createLogger } from '../../src/logger';
import { forwardTemporalMetrics, serveWorkerMetrics, type MetricsServer } from '../../src/platform/metricsServer';
import { freePort, hostAndPort } from '../../src/platform/ports';
import { StartupError } from '../../src/platform/startupError';
import { connectTemporal, registerSearchAttributes, temporalConnectionOptions } from '../../src/platform/temporal';
import { installTemporalRuntime } from '../../src/platform/temporalRuntime';
import { ensureSettlementSchedule } from '../../src/settlement/schedule';
import { ensureAchInboundSchedule } from '../../src/ach/inboundSchedule';
import { ensureAchSchedule, warnIfAchUndeliverable } from '../../src/ach/schedule';
import { EXPECTED_ACTIVITY_FAILURES, prepareWorker } from '../../src/worker';
import { isWarmSpare, onShutdownSignal, runMain, standbyIfSpare, waitForDependencies, WORKER_PER_PROCESS_KEYS } from '../run';

/** Where a warm spare's runtime exports its metrics: the configured host, a port free now; off stays off. */
async function addressOfItsOwn(address: string): Promise<string> {
  if (address === 'off') return address;
  const { host } = hostAndPort(address);
  return `${host}:${await freePort(host)}`;
}

/** The keys a take-over may change: each worker process of `npm run cluster` has its own metrics ports. */
const PER_PROCESS: ReadonlySet<keyof Config> = new Set(WORKER_PER_PROCESS_KEYS);

/**
 * The replaced process's configuration, once it is clear that the worker the spare made with its own serves it:
 * every setting but the metrics ports the same (its activities and connection were made with the spare's), and
 * metrics on or off as they were when the spare installed its runtime.
 */
function sameButMetricsPorts(spare: Config, replaced: Config): Config {
  const differing = (Object.keys(replaced) as (keyof Config)[]).filter(
    (key) => !PER_PROCESS.has(key) && JSON.stringify(spare[key]) !== JSON.stringify(replaced[key]),
  );
  if ((spare.TEMPORAL_METRICS_ADDRESS === 'off') !== (replaced.TEMPORAL_METRICS_ADDRESS === 'off'))
    differing.push('TEMPORAL_METRICS_ADDRESS');
  if (differing.length > 0)
    throw new StartupError(
      `a warm spare cannot replace a worker configured otherwise (${differing.join(', ')}); the supervisor starts one from nothing`,
    );
  return replaced;
}

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
  // A warm spare of `npm run cluster` makes its worker before it waits, so that a take-over only starts polling:
  // the Temporal runtime, the worker's connection and the workflow bundle loaded into its sandbox were most of a
  // worker's restart on a loaded box (docs/reliability.md, "Recovery"). The runtime binds its metrics address
  // at install, and the replaced process's is its own until it dies: a spare's exports on a port of its own,
  // which the taken-over process serves on the replaced address by forwarding.
  const runtimeMetrics = isWarmSpare() ? await addressOfItsOwn(config.TEMPORAL_METRICS_ADDRESS) : config.TEMPORAL_METRICS_ADDRESS;
  await installTemporalRuntime({ TEMPORAL_METRICS_ADDRESS: runtimeMetrics }, log, EXPECTED_ACTIVITY_FAILURES);
  // LEDGER_WORKFLOW_BUNDLE: a prebuilt workflow bundle (tests and benches spawn many workers; bundling takes seconds).
  const workflowBundlePath = process.env.LEDGER_WORKFLOW_BUNDLE || undefined;
  const prepared = await prepareWorker({
    config,
    pool,
    log,
    temporal: client,
    address,
    ...(workflowBundlePath ? { workflowBundlePath } : {}),
  });
  // Taken over, it is the worker it replaces, with that process's metrics ports.
  let forwarded: MetricsServer | null = null;
  if (await standbyIfSpare()) {
    config = sameButMetricsPorts(config, loadConfig());
    if (config.TEMPORAL_METRICS_ADDRESS !== runtimeMetrics)
      forwarded = await forwardTemporalMetrics(config.TEMPORAL_METRICS_ADDRESS, runtimeMetrics);
  }
  const metrics = config.WORKER_METRICS_PORT === 0 ? null : await serveWorkerMetrics(config.HOST, config.WORKER_METRICS_PORT);
  const worker = prepared.run();
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
    await forwarded?.close();
  });
  await worker.running;
});
