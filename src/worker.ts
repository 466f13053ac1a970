import path from 'node:path';
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createActivities } from '../activities';
import type { Config } from './config';
import type { Pool } from './db/pool';
import { startReconciler } from './ledger/lifecycle';

export const WORKFLOWS_PATH = path.resolve(__dirname, '..', 'workflows', 'index.ts');

export interface LedgerWorker {
  worker: Worker;
  /** Resolves when the worker has stopped (after `shutdown`, once in-flight tasks drained). */
  running: Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * Starts a Temporal worker running the ledger's workflows and activities. `workflowBundlePath` reuses a
 * prebuilt bundle (tests build one once); otherwise the workflows are bundled from source.
 */
export async function startWorker(options: {
  config: Config;
  pool: Pool;
  log: Logger;
  temporal: Client;
  address: string;
  taskQueue?: string;
  workflowBundlePath?: string;
  tuning?: Partial<Pick<WorkerOptions, 'maxConcurrentActivityTaskExecutions' | 'maxConcurrentWorkflowTaskExecutions' | 'maxCachedWorkflows'>>;
}): Promise<LedgerWorker> {
  const connection = await NativeConnection.connect({ address: options.address });
  const worker = await Worker.create({
    connection,
    namespace: options.config.TEMPORAL_NAMESPACE,
    taskQueue: options.taskQueue ?? options.config.TEMPORAL_TASK_QUEUE,
    ...(options.workflowBundlePath ? { workflowBundle: { codePath: options.workflowBundlePath } } : { workflowsPath: WORKFLOWS_PATH }),
    activities: createActivities({ config: options.config, pool: options.pool, log: options.log, temporal: options.temporal }),
    shutdownGraceTime: '10s',
    maxConcurrentActivityTaskExecutions: 50,
    ...options.tuning,
  });
  const taskQueue = options.taskQueue ?? options.config.TEMPORAL_TASK_QUEUE;
  // Starts the workflows of transactions whose api died between commit and workflow start (SPEC §9).
  const reconciler = startReconciler({ pool: options.pool, client: options.temporal, taskQueue, log: options.log });
  const running = worker.run().finally(() => connection.close());
  let stopping: Promise<void> | undefined;
  return {
    worker,
    running,
    shutdown() {
      stopping ??= (async () => {
        await reconciler.stop();
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running;
      })();
      return stopping;
    },
  };
}
