import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { commandLine } from '../ops/childProcess';
import { launchedChild, WarmSpare, type Launched } from '../ops/warmSpare';
import { eventually } from './support/harness';
import { REPO } from './support/processes';

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

function harness() {
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
  const spare = new WarmSpare({ role: 'test', enabled: true, launch, env: { ...process.env, SPARE_TEST_ROLE_ENV: 'shared' }, log });
  return { spare, runs, log };
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
});
