import path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { LIFECYCLE_WORKER_TUNING } from '../src/worker';

/**
 * The worker of the lifecycle-shape baselines (bench/lifecycleShape.ts), a process of its own as the ledger's
 * worker is, under the ledger worker's settings: TEMPORAL_ADDRESS, SHAPE_TASK_QUEUE. Prints `shape worker
 * running`, then `submitted N available M` whenever the counts of shapes past their `submit` and `available`
 * steps changed (every 100 ms).
 */
async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  let submitted = 0;
  let available = 0;
  let reported = '';
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const worker = await Worker.create({
    connection,
    namespace: 'default',
    taskQueue: process.env.SHAPE_TASK_QUEUE!,
    workflowsPath: path.join(__dirname, 'lifecycleShapeWorkflow.ts'),
    activities: {
      shapeStep: async (step: 'submit' | 'available') => {
        if (step === 'submit') submitted += 1;
        if (step === 'available') available += 1;
      },
    },
    ...LIFECYCLE_WORKER_TUNING,
  });
  const report = setInterval(() => {
    const counts = `submitted ${submitted} available ${available}`;
    if (counts === reported) return;
    reported = counts;
    process.stdout.write(`${counts}\n`);
  }, 100);
  process.once('SIGTERM', () => worker.shutdown());
  process.stdout.write('shape worker running\n');
  try {
    await worker.run();
  } finally {
    clearInterval(report);
    await connection.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
