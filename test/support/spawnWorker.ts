import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { exitOf, isRunning } from '../../ops/childProcess';

export interface WorkerProcess {
  child: ChildProcess;
  /** SIGKILL: no shutdown, no drain, in-flight activities simply vanish. */
  kill(): Promise<void>;
}

/**
 * Starts test/support/workerProcess.ts with `env` over this process's environment; resolves once it polls. The
 * bound is generous: tsx compiling the worker and its first connection take seconds on a quiet box, but over 30 s
 * on the 2-core box under load (a fresh-clone CI run's webhooks suite, 2026-11-27).
 */
export async function spawnWorkerProcess(env: Record<string, string>, timeoutMs = 120_000): Promise<WorkerProcess> {
  const script = path.join(__dirname, 'workerProcess.ts');
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: path.resolve(__dirname, '..', '..'),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = exitOf(child);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker process not ready in ${timeoutMs} ms: ${stderr}`)), timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`worker process exited with ${code}: ${stderr}`));
    });
  });
  return {
    child,
    async kill() {
      if (isRunning(child)) child.kill('SIGKILL');
      await exited;
    },
  };
}
