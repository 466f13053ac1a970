/** `npm run worker`: one Temporal worker process against the configured Postgres and Temporal. */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { databaseUrlOf, loadConfig, temporalAddressOf } from '../config';
import { migrate } from '../db/migrate';
import { createPool } from '../db/pool';
import { createLogger } from '../logger';
import { connectTemporal, registerSearchAttributes } from '../platform/temporal';
import { startWorker } from '../worker';
import { onShutdownSignal, runMain } from './run';

runMain(async () => {
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL, 'ledger-worker');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  // Every process applies pending migrations at start; node-pg-migrate's lock makes concurrent starts safe.
  await migrate(databaseUrlOf(config), (message) => log.info(message));
  const pool = createPool(databaseUrlOf(config), config.DATABASE_POOL_MAX, (error) => log.warn({ err: error }, 'idle database connection lost'));
  const address = temporalAddressOf(config);
  const { connection, client } = await connectTemporal(address, config.TEMPORAL_NAMESPACE);
  await registerSearchAttributes(connection, config.TEMPORAL_NAMESPACE);
  const worker = await startWorker({ config, pool, log, temporal: client, address });
  log.info({ taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
  onShutdownSignal(async () => {
    await worker.shutdown();
    await connection.close();
    await pool.end();
  });
  await worker.running;
});
