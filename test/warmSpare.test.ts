import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { commandLine } from '../ops/childProcess';
import { launchWorkerProcess, startWorkerProcess } from '../ops/clusterProcesses';
import { SPARE_MESSAGES } from '../ops/run';
import { launchedChild, WARM_SPARES_PER_ROLE, WarmSpare, type Launched } from '../ops/warmSpare';
import { connectTemporal } from '../src/platform/temporal';
import { createTestDatabase, eventually, testInfra } from './support/harness';
import { freePort } from './support/ports';
import { REPO } from './support/processes';
import { startScratchTemporal } from './support/scratch';

/**
 * `npm run cluster`'s warm spares (ops/warmSpare.ts, ops/run.ts), on real processes through tsx: a spare
 * loads its entry and waits under its title; a take-over runs its main with the replaced process's
 * environment and command line; without a spare standing by, a process starts from nothing. The cluster test
 * (test/topology.cluster.test.ts) SIGKILLs a real api and worker and sees their spares take over.
 */

const ENTRY = path.join(REPO, 'test', 'fixtures', 'warmSpare', 'entry.ts');

interface Run {
  child: ChildProcess;
  output: () => string;
}

function harness(count?: number) {
  const runs: Run[] = [];
  const launch = (env: NodeJS.ProcessEnv, title?: string): Launched<Run> => {
    const child = spawn(process.execPath, [...(title ? [`--title=${title}`] : []), '--import', 'tsx', ENTRY], {
      cwd: REPO,
      env,
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    });
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const run = { child, output: () => text };
    runs.push(run);
    return launchedChild(child, run);
  };
  const log = { info: jest.fn(), warn: jest.fn() };
  const spare = new WarmSpare({
    role: 'test',
    enabled: true,
    launch,
    env: { ...process.env, SPARE_TEST_ROLE_ENV: 'shared' },
    log,
    ...(count ? { count } : {}),
  });
  return { spare, runs, log };
}

/** The TCP ports process `pid` listens on (its socket descriptors matched with /proc/net/tcp's LISTEN rows). */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of fs.readFileSync(table, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[3] === '0A' && inodes.has(fields[9]!)) ports.push(parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

async function mainRan(launched: Launched<Run>) {
  expect(await launched.exited).toEqual({ code: 0, signal: null });
  return JSON.parse(launched.handle.output()) as { role_env: string | null; standby: string | null; stoodBy: boolean; commandLine: string };
}

describe('warm spares (ops/warmSpare.ts)', () => {
  test('an armed spare waits under its title; taken over, its main runs with the given environment and the command line of the entry', async () => {
    const { spare, runs } = harness();
    spare.arm();
    expect(runs).toHaveLength(1);
    const [waiting] = runs;
    // It stands by: its own title, its main not run.
    await eventually(
      async () => (commandLine(waiting!.child.pid!)?.trim() === 'ledger warm spare: test' ? true : undefined),
      30_000,
      'the spare titled',
    );
    const taken = await spare.take({ ...process.env, SPARE_TEST_ROLE_ENV: 'process 2' });
    expect(taken.handle).toBe(waiting);
    const ran = await mainRan(taken);
    expect(ran.role_env).toBe('process 2');
    expect(ran.standby).toBeNull();
    expect(ran.stoodBy).toBe(true);
    expect(ran.commandLine).toBe(`${process.execPath} --import tsx ${ENTRY}`);
    // No new spare until the caller says the replacement is ready.
    expect(runs).toHaveLength(1);
    spare.fill();
    expect(runs).toHaveLength(2);
    await spare.stop();
    expect(runs[1]!.child.exitCode !== null || runs[1]!.child.signalCode !== null).toBe(true);
  }, 60_000);

  test(`${WARM_SPARES_PER_ROLE} spares (WARM_SPARES_PER_ROLE): started one after the other, and as many take-overs in a row each find one standing by`, async () => {
    const count = WARM_SPARES_PER_ROLE;
    expect(count).toBeGreaterThanOrEqual(3);
    const { spare, runs } = harness(count);
    spare.arm();
    // One at a time: each starts once the one before stands by.
    expect(runs).toHaveLength(1);
    await eventually(async () => (runs.length === count ? true : undefined), 30_000, `spare ${count} started`);
    const last = runs[count - 1]!;
    await eventually(
      async () => (commandLine(last.child.pid!)?.trim() === 'ledger warm spare: test' ? true : undefined),
      30_000,
      `spare ${count} titled`,
    );
    expect(spare.sparePids()).toEqual(runs.map((run) => run.child.pid));
    // As many kills in a row as there are spares (seed 31 killed three workers in 14 s): each replacement is a
    // spare; with one spare fewer the last would be a process started from nothing.
    const taken: Launched<Run>[] = [];
    for (let kill = 1; kill <= count; kill += 1)
      taken.push(await spare.take({ ...process.env, SPARE_TEST_ROLE_ENV: `replacement ${kill}` }));
    expect(taken.map((each) => each.handle)).toEqual(runs.slice(0, count));
    for (const [at, each] of taken.entries()) {
      const ran = await mainRan(each);
      expect([ran.role_env, ran.stoodBy]).toEqual([`replacement ${at + 1}`, true]);
    }
    expect(runs).toHaveLength(count);
    spare.fill();
    expect(runs).toHaveLength(count + 1);
    await spare.stop();
  }, 60_000);

  test('not armed, or its spare gone: a process starts from nothing, and says nothing about standing by', async () => {
    const { spare, runs, log } = harness();
    // Not armed (the cluster arms once every process serves): fill starts nothing, take starts a process.
    spare.fill();
    expect(runs).toHaveLength(0);
    const fresh = await spare.take({ ...process.env, SPARE_TEST_ROLE_ENV: 'fresh' });
    const freshRan = await mainRan(fresh);
    expect(freshRan.role_env).toBe('fresh');
    expect(freshRan.stoodBy).toBe(false);
    spare.arm();
    const [, dying] = runs;
    dying!.child.kill('SIGKILL');
    await eventually(async () => (log.warn.mock.calls.length > 0 ? true : undefined), 30_000, 'the dead spare noticed');
    expect(log.warn.mock.calls[0]![0]).toMatch(/the test warm spare was killed by SIGKILL/);
    const after = await spare.take({ ...process.env, SPARE_TEST_ROLE_ENV: 'after' });
    expect(after.handle).not.toBe(dying);
    expect((await mainRan(after)).role_env).toBe('after');
    await spare.stop();
  }, 60_000);

  test('off (CLUSTER_WARM_SPARES=off): arming starts no spare', async () => {
    const runs: number[] = [];
    const spare = new WarmSpare({
      role: 'test',
      enabled: false,
      launch: () => {
        runs.push(1);
        throw new Error('no process should start');
      },
      env: {},
      log: { info: () => undefined, warn: () => undefined },
    });
    spare.arm();
    spare.fill();
    expect(runs).toHaveLength(0);
    await spare.stop();
  });

  test("a worker's spare makes its worker while it stands by, polls nothing, and taken over polls and serves the replaced process's metrics addresses", async () => {
    const infra = testInfra();
    const cleanup: Array<() => Promise<unknown>> = [];
    try {
      // Its own database and Temporal server: a worker process runs the webhook dispatcher and the drainer over
      // every row it finds, and creates the schedules of its namespace.
      const scratch = await createTestDatabase(`ledger_test_${Date.now()}_spare_worker`);
      cleanup.push(() => scratch.drop());
      const server = await startScratchTemporal(infra.cliPath, path.join(infra.workDir, 'temporal-spare-worker.log'));
      cleanup.push(() => server.stop());
      const { connection, client } = await connectTemporal(server.server.address, 'default');
      cleanup.push(() => connection.close());
      // The replaced worker holds its metrics addresses until it dies: the spare must not need them before.
      const [temporalMetricsPort, workerMetricsPort] = [await freePort(), await freePort()];
      const replaced = http.createServer((_req, res) => res.end('the replaced process'));
      await new Promise<void>((resolve) => replaced.listen(temporalMetricsPort, '127.0.0.1', resolve));
      const replacedClosed = new Promise<void>((resolve) => replaced.once('close', resolve));
      cleanup.push(() => (replaced.listening ? new Promise((resolve) => replaced.close(resolve)) : replacedClosed));
      const taskQueue = 'spare-worker';
      const roleEnv = {
        ...process.env,
        DATABASE_URL: scratch.databaseUrl,
        TEMPORAL_ADDRESS: server.server.address,
        TEMPORAL_TASK_QUEUE: taskQueue,
        LEDGER_ENVIRONMENT: 'sandbox',
        LEDGER_WORKFLOW_BUNDLE: infra.workflowBundlePath,
        LOG_LEVEL: 'warn',
        TEMPORAL_METRICS_ADDRESS: `127.0.0.1:${temporalMetricsPort}`,
        WORKER_METRICS_PORT: String(workerMetricsPort),
      };
      const standing: Promise<void>[] = [];
      const spare = new WarmSpare({
        role: 'worker',
        enabled: true,
        launch: (env, title) => {
          const launched = launchWorkerProcess(env, title);
          standing.push(new Promise((resolve) => launched.onMessage((message) => message?.type === SPARE_MESSAGES.standby && resolve())));
          return launched;
        },
        env: roleEnv,
        log: { info: () => undefined, warn: () => undefined },
      });
      cleanup.push(() => spare.stop());
      spare.arm();
      await standing[0];
      const pollers = async () =>
        (
          await client.workflowService.describeTaskQueue({
            namespace: 'default',
            taskQueue: { name: taskQueue },
            taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
          })
        ).pollers.map((poller) => poller.identity);
      // Standing by, its worker is made (runtime, connection, bundle) but takes no task; its runtime already
      // exports the SDK's metrics, on a port of its own.
      expect(await pollers()).toEqual([]);
      const [sparePid] = spare.sparePids();
      const own = listeningPorts(sparePid!);
      expect(own).toHaveLength(1);
      expect(own[0]).not.toBe(temporalMetricsPort);
      expect((await fetch(`http://127.0.0.1:${own[0]}/metrics`)).status).toBe(200);

      await new Promise((resolve) => replaced.close(resolve));
      const worker = await startWorkerProcess({ env: roleEnv, client, taskQueue, spare });
      cleanup.push(() => worker.stop());
      expect(worker.pid).toBe(sparePid);
      expect(await pollers()).toContain(`${worker.pid}@${os.hostname()}`);
      // The addresses the operator scrapes answer as the replaced process's did: the SDK's metrics (forwarded to
      // the port the spare's runtime took) and the ledger's worker metrics.
      const sdk = await fetch(`http://127.0.0.1:${temporalMetricsPort}/metrics`);
      expect(sdk.status).toBe(200);
      expect(await sdk.text()).toMatch(/\btemporal_\w+/);
      const ours = await fetch(`http://127.0.0.1:${workerMetricsPort}/metrics`);
      expect(ours.status).toBe(200);
      expect(await ours.text()).toMatch(/\bledger_\w+/);
      // The next spare stands by once the replacement polls.
      await standing[1];
    } finally {
      for (const step of cleanup.reverse()) await step();
    }
  }, 180_000);
});
