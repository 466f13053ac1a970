import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { SEARCH_ATTRIBUTES, waitForTemporal } from './temporal';

export interface DevServerOptions {
  cliPath: string;
  port: number;
  /** Web UI port; null runs headless. */
  uiPort: number | null;
  /** SQLite file that keeps workflows across restarts; null keeps them in memory. */
  dbFile: string | null;
  namespace: string;
  logFile: string;
  /**
   * Where the server's pid is kept while it runs. A server left behind by a run that was killed outright
   * (SIGKILL skips every exit handler) is found through it and stopped before a new one starts.
   */
  pidFile?: string;
  readyTimeoutMs?: number;
}

function processCommand(pid: number): string | null {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return null;
  }
}

/** Stops the dev server a killed earlier run left behind, if the pid file names one that still runs. */
async function stopLeftover(pidFile: string): Promise<void> {
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  const command = Number.isInteger(pid) && pid > 0 ? processCommand(pid) : null;
  if (command?.includes('server start-dev')) {
    process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + 10_000;
    while (processCommand(pid) !== null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    if (processCommand(pid) !== null) process.kill(pid, 'SIGKILL');
  }
  fs.rmSync(pidFile, { force: true });
}

export interface DevServer {
  address: string;
  uiUrl: string | null;
  process: ChildProcess;
  /** Resolves when the server process has exited, for whatever reason. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(): Promise<void>;
}

/** Starts `temporal server start-dev` as a child process and resolves once its frontend answers. */
export async function startTemporalDevServer(options: DevServerOptions): Promise<DevServer> {
  if (options.dbFile) fs.mkdirSync(path.dirname(options.dbFile), { recursive: true });
  fs.mkdirSync(path.dirname(options.logFile), { recursive: true });
  if (options.pidFile) await stopLeftover(options.pidFile);
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(options.port), '--namespace', options.namespace, '--log-level', 'warn'];
  if (options.uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(options.uiPort));
  if (options.dbFile) args.push('--db-filename', options.dbFile);
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
    void type; // All ours are keywords; the operator API registers them again idempotently after start.
    args.push('--search-attribute', `${name}=Keyword`);
  }
  const log = fs.openSync(options.logFile, 'a');
  // Detached: Ctrl-C reaches our process group, not the server, so the worker can drain before it stops.
  const child = spawn(options.cliPath, args, { stdio: ['ignore', log, log], detached: true });
  fs.closeSync(log);
  process.once('exit', () => child.kill('SIGTERM'));
  if (options.pidFile && child.pid) fs.writeFileSync(options.pidFile, String(child.pid));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const address = `127.0.0.1:${options.port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const killTimer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killTimer);
    if (options.pidFile) fs.rmSync(options.pidFile, { force: true });
  };
  try {
    await Promise.race([
      waitForTemporal(address, options.readyTimeoutMs ?? 60_000),
      exited.then(() => {
        throw new Error(`temporal server start-dev exited with ${child.exitCode}; see ${options.logFile}`);
      }),
    ]);
  } catch (error) {
    await stop();
    throw error;
  }
  return { address, uiUrl: options.uiPort === null ? null : `http://127.0.0.1:${options.uiPort}`, process: child, exited, stop };
}
