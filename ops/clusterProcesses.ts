import { spawn, type ChildProcess } from 'node:child_process';
import cluster from 'node:cluster';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { REPO_ROOT } from '../src/config';
import type { Logger } from '../src/logger';
import { bundleWorkflows } from '../src/worker';
import { exitOf, pollWhileRunning, terminate } from './childProcess';
import type { SupervisedChild } from './supervisor';
import { launchedChild, type Launched, type WarmSpare } from './warmSpare';

/**
 * The api and worker processes of `npm run cluster`, started from the primary and kept by its supervisors.
 * Both run the same entry points as `npm run api` and `npm run worker`, through tsx like the primary.
 */
const TSX = ['--import', 'tsx'];
const API_ENTRY = path.join(REPO_ROOT, 'ops', 'bin', 'api.ts');
const WORKER_ENTRY = path.join(REPO_ROOT, 'ops', 'bin', 'worker.ts');
const SPARE_ENTRY = path.join(REPO_ROOT, 'ops', 'bin', 'spare.ts');
/** How long a process may take to be ready (an api listening, a worker polling) before its start fails. */
const READY_TIMEOUT_MS = 120_000;
/** How long a stopping process may take (a worker drains its running tasks) before it is killed. */
const STOP_TIMEOUT_MS = 30_000;

/**
 * Bundles the workflow code once into `dir` for every worker process (bundling takes seconds of CPU, which a
 * worker restarted by its supervisor would otherwise spend again).
 */
export async function bundleWorkflowsOnce(dir: string, log: Logger): Promise<string> {
  const code = await bundleWorkflows(log);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'workflow-bundle.js');
  fs.writeFileSync(file, code);
  return file;
}

export interface ApiProcess extends SupervisedChild {
  pid: number;
  url: string;
}

type ClusterWorker = ReturnType<typeof cluster.fork>;

/**
 * node's arguments and the script's: the role's entry through tsx; a warm spare's through ops/bin/spare.ts
 * (its command line never names the entry) under its title (what ps shows of it).
 */
function commandOf(entry: string, role: 'api' | 'worker', title: string | undefined) {
  return title ? { execArgv: [`--title=${title}`, ...TSX], script: SPARE_ENTRY, args: [role] } : { execArgv: TSX, script: entry, args: [] };
}

/** Forks one api process (a node:cluster worker) with `env`; not yet listening. */
export function launchApiProcess(env: NodeJS.ProcessEnv, title?: string): Launched<ClusterWorker> {
  const command = commandOf(API_ENTRY, 'api', title);
  cluster.setupPrimary({ exec: command.script, execArgv: command.execArgv, args: command.args });
  const worker = cluster.fork(env);
  return {
    handle: worker,
    child: worker.process,
    exited: exitOf(worker.process),
    send: (message) => worker.send(message as object),
    onMessage: (listener) => worker.on('message', listener),
  };
}

/**
 * One api process: a node:cluster worker, so every api process listens on the same PORT and the primary hands
 * each new connection to the next one in turn. Ready once it listens. The role's warm spare, taken over when
 * one stands by; a new spare once this one listens.
 */
export async function startApiProcess(options: { env: NodeJS.ProcessEnv; spare: WarmSpare<ClusterWorker> }): Promise<ApiProcess> {
  const { handle: worker, exited } = await options.spare.take(options.env);
  const stop = () => terminate(worker.process, exited, STOP_TIMEOUT_MS);
  const address = await Promise.race([
    new Promise<{ address: string; port: number }>((resolve) => worker.once('listening', resolve)),
    exited.then(({ code, signal }) => {
      throw new Error(`an api process exited with ${signal ?? code} before it listened`);
    }),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('an api process did not listen within 120 s')), READY_TIMEOUT_MS).unref(),
    ),
  ])
    .catch(async (error: unknown) => {
      await stop();
      throw error;
    })
    .finally(() => options.spare.fill());
  const hostPart = !address.address || address.address.includes(':') ? '127.0.0.1' : address.address;
  return { pid: worker.process.pid!, url: `http://${hostPart}:${address.port}`, exited, stop };
}

export interface WorkerProcess extends SupervisedChild {
  pid: number;
}

/** Spawns one worker process (`npm run worker`'s entry) with `env`; not yet polling. */
export function launchWorkerProcess(env: NodeJS.ProcessEnv, title?: string): Launched<ChildProcess> {
  const command = commandOf(WORKER_ENTRY, 'worker', title);
  const child = spawn(process.execPath, [...command.execArgv, command.script, ...command.args], {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return launchedChild(child, child);
}

/**
 * One worker process; ready once Temporal lists it among the task queue's pollers. The role's warm spare,
 * taken over when one stands by; a new spare once this one polls.
 */
export async function startWorkerProcess(options: {
  env: NodeJS.ProcessEnv;
  client: Client;
  taskQueue: string;
  spare: WarmSpare<ChildProcess>;
}): Promise<WorkerProcess> {
  const { child, exited } = await options.spare.take(options.env);
  const stop = () => terminate(child, exited, STOP_TIMEOUT_MS);
  const identity = `${child.pid}@${os.hostname()}`;
  // Once the process is gone, polling for it is over (the exit below says why).
  const polling = pollWhileRunning(
    child,
    async () => {
      const { pollers } = await options.client.workflowService.describeTaskQueue({
        namespace: options.client.options.namespace,
        taskQueue: { name: options.taskQueue },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      });
      if (!pollers.some((poller) => poller.identity === identity))
        throw new Error(`a worker process did not poll ${options.taskQueue} within 120 s`);
    },
    { timeoutMs: READY_TIMEOUT_MS, intervalMs: 250 },
  );
  const died = exited.then(({ code, signal }) => {
    throw new Error(`a worker process exited with ${signal ?? code} before it polled`);
  });
  try {
    await Promise.race([polling, died]);
  } catch (error) {
    await stop();
    throw error;
  } finally {
    options.spare.fill();
  }
  return { pid: child.pid!, exited, stop };
}
