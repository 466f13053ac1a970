/**
 * A ledger worker in a process of its own, so a test can SIGKILL it mid-task: a crash, not a shutdown.
 * Configuration comes from the environment (loadConfig); the workflow bundle from LEDGER_TEST_WORKFLOW_BUNDLE.
 * Prints "ready" on stdout once the worker polls.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadConfig, databaseUrlOf, temporalAddressOf } from '../../src/config';
import { createPool } from '../../src/db/pool';
import { createLogger } from '../../src/logger';
import { connectTemporal } from '../../src/platform/temporal';
import { startWorker } from '../../src/worker';

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const config = loadConfig();
  const pool = createPool(databaseUrlOf(config), 5);
  const address = temporalAddressOf(config);
  const { client } = await connectTemporal(address, config.TEMPORAL_NAMESPACE);
  const worker = await startWorker({
    config,
    pool,
    log: createLogger(config.LOG_LEVEL, 'test-worker'),
    temporal: client,
    address,
    workflowBundlePath: process.env.LEDGER_TEST_WORKFLOW_BUNDLE,
  });
  process.stdout.write('ready\n');
  await worker.running;
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
