import path from 'node:path';
import { Client } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Logger } from 'pino';
import { createActivities } from '../activities';
import type { Config } from './config';
import type { Pool } from './db/pool';
import { startLifecycleDrainer } from './ledger/lifecycleDrainer';
import { temporalConnectionOptions } from './platform/temporal';
import { settlementTaskQueue } from './settlement/workflowContract';
import { ATTEMPT_FAILED } from './webhooks/workflowContract';
import { startWebhookDispatcher } from './webhooks/dispatcher';

/**
 * Failures the worker's activities throw on purpose, to have Temporal retry them: a webhook endpoint that
 * answered 500 is the receiver's business, not a fault of ours. The Temporal runtime's logger writes them as
 * type and message, without a stack (installTemporalRuntime).
 */
export const EXPECTED_ACTIVITY_FAILURES: ReadonlySet<string> = new Set([ATTEMPT_FAILED]);

export const WORKFLOWS_PATH = path.resolve(__dirname, '..', 'workflows', 'index.ts');

/** What a sidecar gets: the worker's own dependencies and the task queue it serves. */
export interface SidecarDeps {
  config: Config;
  pool: Pool;
  log: Logger;
  temporal: Client;
  taskQueue: string;
}

/**
 * Loops that live as long as a worker does, beside its Temporal polling: the lifecycle drainer that starts
 * the workflows the writes queued and delivers their confirmations (SPEC §9, §20), and the webhook outbox
 * dispatcher. Each answers null when configuration turns it off; `stop` resolves once its current
 * pass is finished.
 */
export type WorkerSidecar = (deps: SidecarDeps) => { stop(): Promise<void> } | null;
const lifecycleDrainer: WorkerSidecar = (deps) =>
  deps.config.LIFECYCLE_DRAINER === 'off'
    ? null
    : // No TEMPORAL_ADDRESS: the embedded dev server, whose SQLite state a power loss can roll back by a few
      // seconds (ops/devServer.ts); the start-up sweep starts whatever workflows it lost.
      startLifecycleDrainer({
        pool: deps.pool,
        client: deps.temporal,
        taskQueue: deps.taskQueue,
        log: deps.log,
        sweep: deps.config.TEMPORAL_ADDRESS === undefined,
      });
export const workerSidecars: WorkerSidecar[] = [lifecycleDrainer, startWebhookDispatcher];

/**
 * Workflow task pollers of the lifecycle queue. Every lifecycle's first workflow task arrives on the queue
 * itself (later ones on this worker's sticky queue), and the SDK's default gives that queue 2 pollers
 * (10 × nonStickyToStickyPollRatio 0.2): with a loaded server answering a poll in 100+ ms, new lifecycles
 * waited their turn behind two open polls while POST /intent kept starting them. 20 pollers, half of them
 * on the queue itself. (Local activities run inside the workflow task: no activity pollers involved.)
 */
const LIFECYCLE_QUEUE_TUNING: Partial<WorkerOptions> = {
  workflowTaskPollerBehavior: { type: 'simple-maximum', maximum: 20 },
  nonStickyToStickyPollRatio: 0.5,
};

/** Every worker's settings beyond the SDK's defaults; the lifecycle queue's adds LIFECYCLE_QUEUE_TUNING. */
const WORKER_TUNING: Partial<WorkerOptions> = { shutdownGraceTime: '10s', maxConcurrentActivityTaskExecutions: 50 };

/** The lifecycle worker's settings, exported for the benches' baselines to run under the same ones. */
export const LIFECYCLE_WORKER_TUNING: Partial<WorkerOptions> = { ...WORKER_TUNING, ...LIFECYCLE_QUEUE_TUNING };

export interface LedgerWorker {
  /** Polls the lifecycle task queue (transactions, webhooks, and settlement runs started there before it had its own). */
  worker: Worker;
  /** Polls settlement's own task queue, so a window never waits behind a backlog of lifecycle tasks. */
  settlementWorker: Worker;
  /** Resolves when the worker has stopped (after `shutdown`, once in-flight tasks drained). */
  running: Promise<void>;
  shutdown(): Promise<void>;
}

/** The options of startWorker and prepareWorker. */
export interface WorkerStartOptions {
  config: Config;
  pool: Pool;
  log: Logger;
  temporal: Client;
  address: string;
  taskQueue?: string;
  workflowBundlePath?: string;
  tuning?: Partial<
    Pick<WorkerOptions, 'maxConcurrentActivityTaskExecutions' | 'maxConcurrentWorkflowTaskExecutions' | 'maxCachedWorkflows'>
  >;
  /** Sidecars to run beside the worker; `workerSidecars` unless given (`[]` runs none). */
  sidecars?: WorkerSidecar[];
}

/**
 * A worker made but not yet polling: its connection open and its workflow bundle loaded (most of a start on a
 * loaded box), nothing polled, no sidecar started, no database connection taken. `run` starts polling and the
 * sidecars. `npm run cluster`'s warm spare makes one while it stands by (ops/bin/worker.ts); a spare that is
 * never taken over exits with it (the SDK closes no connection its workers still hold).
 */
export interface PreparedWorker {
  run(): LedgerWorker;
}

/**
 * Starts a Temporal worker running the ledger's workflows and activities. `workflowBundlePath` reuses a
 * prebuilt bundle (tests build one once); otherwise the workflows are bundled from source.
 */
export async function startWorker(options: WorkerStartOptions): Promise<LedgerWorker> {
  return (await prepareWorker(options)).run();
}

/** What startWorker does before its worker polls: the connection, the client, the activities, both workers. */
export async function prepareWorker(options: WorkerStartOptions): Promise<PreparedWorker> {
  const taskQueue = options.taskQueue ?? options.config.TEMPORAL_TASK_QUEUE;
  const connection = await NativeConnection.connect({ address: options.address, ...temporalConnectionOptions(options.config) });
  // Bundled once for both workers (bundling takes seconds); tests hand in a prebuilt bundle.
  const workflowBundle = options.workflowBundlePath
    ? { codePath: options.workflowBundlePath }
    : { code: await bundleWorkflows(options.log) };
  // The activities (settlement's member notifications: a signal per member) and the sidecars (the drainer's
  // starts and signals) reach Temporal through the worker's own connection (the SDK's core, in Rust), not
  // `temporal`'s grpc-js channel, whose calls cost more of this process's CPU (docs/benchmarks.md, intake
  // and issue 37): the process that sends a window's signals is the one that runs the members' workflow tasks.
  const coreClient = new Client({ connection, namespace: options.config.TEMPORAL_NAMESPACE });
  const activities = createActivities({ config: options.config, pool: options.pool, log: options.log, temporal: coreClient });
  const create = (queue: string, queueTuning: Partial<WorkerOptions> = {}) =>
    Worker.create({
      connection,
      namespace: options.config.TEMPORAL_NAMESPACE,
      taskQueue: queue,
      workflowBundle,
      activities,
      ...WORKER_TUNING,
      ...queueTuning,
      ...options.tuning,
    });
  let worker: Worker;
  let settlementWorker: Worker;
  try {
    const cached = options.config.WORKER_MAX_CACHED_WORKFLOWS;
    worker = await create(taskQueue, { ...LIFECYCLE_QUEUE_TUNING, ...(cached > 0 ? { maxCachedWorkflows: cached } : {}) });
    settlementWorker = await create(settlementTaskQueue(taskQueue));
  } catch (error) {
    // A namespace the credentials may not describe fails here; the connection must not outlive the start.
    await connection.close().catch(() => undefined);
    throw error;
  }
  return {
    run() {
      const running = Promise.all([worker.run(), settlementWorker.run()])
        .then(() => undefined)
        .finally(() => connection.close());
      const sidecarDeps: SidecarDeps = { config: options.config, pool: options.pool, log: options.log, temporal: coreClient, taskQueue };
      const sidecars = (options.sidecars ?? workerSidecars).map((start) => start(sidecarDeps)).filter((sidecar) => sidecar !== null);
      const stopSidecars = () => Promise.all(sidecars.map((sidecar) => sidecar.stop()));
      // A worker that stops on its own (a fatal error) takes its sidecars with it.
      running.catch(() => undefined).finally(() => void stopSidecars());
      let stopping: Promise<void> | undefined;
      return {
        worker,
        settlementWorker,
        running,
        shutdown() {
          stopping ??= (async () => {
            await stopSidecars();
            for (const each of [worker, settlementWorker]) if (each.getState() === 'RUNNING') each.shutdown();
            await running;
          })();
          return stopping;
        },
      };
    },
  };
}

/** Bundles the ledger's workflow code (seconds of CPU); the bundler's messages go to `log`. */
export async function bundleWorkflows(log: Logger): Promise<string> {
  return (await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: bundlerLogger(log) })).code;
}

/** The workflow bundler's messages through the worker's logger, at debug: they are webpack's progress lines. */
function bundlerLogger(log: Logger) {
  const at = (level: 'debug' | 'warn' | 'error') => (message: string, meta?: Record<string, unknown>) => log[level](meta ?? {}, message);
  return {
    trace: at('debug'),
    debug: at('debug'),
    info: at('debug'),
    warn: at('warn'),
    error: at('error'),
    log: (_level: string, message: string) => log.debug(message),
  };
}
