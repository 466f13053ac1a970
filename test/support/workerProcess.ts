/**
 * A ledger worker in a process of its own, so a test can SIGKILL it mid-task: a crash, not a shutdown.
 * Configuration comes from the environment (loadConfig); the workflow bundle from LEDGER_TEST_WORKFLOW_BUNDLE.
 * Prints "ready" on stdout once the worker polls. With LEDGER_TEST_ACH_HALT_AT=<step> (src/ach/steps.ts) an
 * ACH window that reaches that step prints "halted at <step>" and goes no further, for the test to kill it there.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadConfig, databaseUrlOf, temporalAddressOf } from '../../src/config';
import { createPool } from '../../src/db/pool';
import { createLogger } from '../../src/logger';
import { connectTemporal } from '../../src/platform/temporal';
import { startWorker } from '../../src/worker';
import { ACH_WINDOW_STEPS, listenToAchWindowSteps, type AchWindowStep } from '../../src/ach/steps';

function haltAchWindowAt(step: string | undefined): void {
  if (!step) return;
  if (!(ACH_WINDOW_STEPS as readonly string[]).includes(step)) throw new Error(`LEDGER_TEST_ACH_HALT_AT: no ACH window step "${step}"`);
  let halted = false;
  listenToAchWindowSteps((reached: AchWindowStep) => {
    if (reached !== step) return Promise.resolve();
    if (!halted) process.stdout.write(`halted at ${step}\n`);
    halted = true;
    return new Promise<void>(() => undefined);
  });
}

async function main(): Promise<void> {
  haltAchWindowAt(process.env.LEDGER_TEST_ACH_HALT_AT);
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
