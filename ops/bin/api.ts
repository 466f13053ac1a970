/** `npm run api`: one API process against the configured Postgres and Temporal. */
import { startApi } from '../../src/api';
import { databaseUrlOf, loadConfig, temporalAddressOf } from '../../src/config';
import { migrate } from '../../src/db/migrate';
import { createPool } from '../../src/db/pool';
import { createLogger } from '../../src/logger';
import { connectTemporal, temporalConnectionOptions } from '../../src/platform/temporal';
import { onShutdownSignal, runMain, standbyIfSpare, waitForDependencies } from '../run';

runMain(async () => {
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL, 'ledger-api');
  await waitForDependencies(config, log);
  // Every process applies pending migrations at start; concurrent starts wait on one lock (src/db/migrate.ts).
  await migrate(databaseUrlOf(config), (message) => log.info(message));
  const pool = createPool(databaseUrlOf(config), config.DATABASE_POOL_MAX, (error) =>
    log.warn({ err: error }, 'idle database connection lost'),
  );
  const { connection, client } = await connectTemporal(
    temporalAddressOf(config),
    config.TEMPORAL_NAMESPACE,
    temporalConnectionOptions(config),
  );
  // A warm spare of `npm run cluster` waits here; taken over, it is the api process it replaces.
  await standbyIfSpare();
  const api = await startApi({ config, pool, log, temporal: client });
  log.info({ url: api.url }, 'api listening');
  onShutdownSignal(async () => {
    await api.close();
    await connection.close();
    await pool.end();
  });
});
