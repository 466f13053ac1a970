import type { WorkflowStartOptions } from '@temporalio/client';
import { randomString } from '../src/ids';
import {
  AccountIdKey,
  OrganizationIdKey,
  SettlementDateKey,
  TransactionDirectionKey,
  TransactionStatusKey,
} from '../src/platform/searchAttributes';
import { startProcess, stopProcess } from './processes';

/**
 * The bench's side of bench/lifecycleShapeWorkflow.ts: its worker as a process of its own (bench/shapeWorker.ts,
 * under the ledger worker's settings) on a task queue of its own, and how many shapes have run their
 * `available` step as it reports them.
 */
export interface ShapeWorker {
  taskQueue: string;
  available(): number;
  stop(): Promise<void>;
}

export async function startShapeWorker(address: string): Promise<ShapeWorker> {
  const taskQueue = `bench-shape-${randomString(8)}`;
  const child = await startProcess(
    'shape worker',
    'bench/shapeWorker.ts',
    { TEMPORAL_ADDRESS: address, SHAPE_TASK_QUEUE: taskQueue },
    /shape worker running/,
  );
  let available = 0;
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const line of lines) {
      const count = /^available (\d+)$/.exec(line);
      if (count) available = Number(count[1]);
    }
  });
  return { taskQueue, available: () => available, stop: () => stopProcess(child) };
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
