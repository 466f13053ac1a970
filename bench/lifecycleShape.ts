import path from 'node:path';
import type { WorkflowStartOptions } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { randomString } from '../src/ids';
import {
  AccountIdKey,
  OrganizationIdKey,
  SettlementDateKey,
  TransactionDirectionKey,
  TransactionStatusKey,
} from '../src/platform/searchAttributes';

/**
 * The bench's side of bench/lifecycleShapeWorkflow.ts: a worker of its own in the bench process, on a task queue
 * of its own, counting how many shapes have run their `available` step.
 */
export interface ShapeWorker {
  taskQueue: string;
  available(): number;
  stop(): Promise<void>;
}

export async function startShapeWorker(address: string): Promise<ShapeWorker> {
  const taskQueue = `bench-shape-${randomString(8)}`;
  let available = 0;
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection,
    namespace: 'default',
    taskQueue,
    workflowsPath: path.join(__dirname, 'lifecycleShapeWorkflow.ts'),
    activities: {
      shapeStep: async (step: 'submit' | 'available') => {
        if (step === 'available') available += 1;
      },
    },
  });
  const running = worker.run();
  return {
    taskQueue,
    available: () => available,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/** The start options of one shape: the lifecycle's search attributes, and its confirmation timer (0: none). */
export function shapeStart(taskQueue: string, workflowId: string, confirmSeconds: number, date: string): WorkflowStartOptions {
  return {
    taskQueue,
    workflowId,
    args: [confirmSeconds],
    typedSearchAttributes: [
      { key: OrganizationIdKey, value: 'org_bench' },
      { key: AccountIdKey, value: 'account_bench' },
      { key: TransactionStatusKey, value: 'pending' },
      { key: TransactionDirectionKey, value: 'cash_in' },
      { key: SettlementDateKey, value: date },
    ],
  };
}
