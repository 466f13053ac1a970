import { spawn, type ChildProcess } from 'node:child_process';
import { REPO_ROOT } from '../src/config';
import { exitOf, terminate } from '../ops/childProcess';
import { freePort } from '../test/support/ports';

/** How long a bench child may take to stop after SIGTERM before it is killed. */
const STOP_LIMIT_MS = 20_000;

/**
 * Stops a process started by startProcess and resolves once it has exited: SIGTERM, then SIGKILL after
 * STOP_LIMIT_MS. Awaited by every bench's teardown, so no run leaves a process behind to load the next one, and
 * the child's output is read until it exits (a child whose reader went away blocks on its last log lines).
 */
export async function stopProcess(child: ChildProcess): Promise<void> {
  await terminate(child, exitOf(child), STOP_LIMIT_MS);
}

/** Spawns `script`; resolves once its output matches `readyLine` (null: at once). */
export function startProcess(name: string, script: string, env: Record<string, string>, readyLine: RegExp | null): Promise<ChildProcess> {
  // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the api and worker processes.
  const extra = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...extra, '--import', 'tsx', script], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (readyLine === null) {
    // Its last output is kept, and said if it ends on its own: a bench whose api died saw only ECONNREFUSED.
    let tail = '';
    const keep = (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-4000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.stderr.pipe(process.stderr);
    void exitOf(child).then(({ code, signal }) => {
      if (code !== 0 && signal !== 'SIGTERM' && signal !== 'SIGKILL')
        process.stderr.write(`${name} exited (code ${code}, signal ${signal}):\n${tail}\n`);
    });
    return Promise.resolve(child);
  }
  return new Promise((resolve, reject) => {
    let buffer = '';
    // BENCH_READY_SECONDS: a loaded box (load average 30+ on 2 cores) bundles a worker's workflows in minutes.
    const readySeconds = Number(process.env.BENCH_READY_SECONDS ?? 300);
    const timer = setTimeout(
      () => reject(new Error(`${name} not ready in ${readySeconds} s:\n${buffer.slice(-2000)}`)),
      readySeconds * 1000,
    );
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString();
      if (readyLine.test(buffer)) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        child.stderr.off('data', onData);
        child.stdout.resume();
        child.stderr.resume();
        resolve(child);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exitOf(child).then(({ code }) => reject(new Error(`${name} exited with ${code}:\n${buffer.slice(-2000)}`)));
  });
}

/**
 * An api process on a free port (ops/bin/api.ts), its stop pushed onto `cleanup`; resolves with its address once
 * it answers /healthz (at most 60 s).
 */
export async function startApiProcess(
  env: Record<string, string>,
  cleanup: Array<() => unknown>,
): Promise<{ api: ChildProcess; apiUrl: string }> {
  const apiPort = await freePort();
  const api = await startProcess('api', 'ops/bin/api.ts', { ...env, PORT: String(apiPort) }, null);
  cleanup.push(() => stopProcess(api));
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const healthy = () =>
    fetch(`${apiUrl}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
  for (let attempt = 0; !(await healthy()); attempt += 1) {
    if (attempt > 600) throw new Error('api did not answer /healthz in 60 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { api, apiUrl };
}
