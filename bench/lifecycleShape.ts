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
 * under the ledger worker's settings) on a task queue of its own, and how many shapes have run their `submit`
 * and `available` steps as it reports them.
 */
export interface ShapeWorker {
  taskQueue: string;
  /** The worker process's pid (for its CPU). */
  pid: number;
  /** Shapes past their first (submit) step. */
  submitted(): number;
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
  let submitted = 0;
  let available = 0;
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const line of lines) {
      const counts = /^submitted (\d+) available (\d+)$/.exec(line);
      if (counts) [submitted, available] = [Number(counts[1]), Number(counts[2])];
    }
  });
  return { taskQueue, pid: child.pid!, submitted: () => submitted, available: () => available, stop: () => stopProcess(child) };
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
