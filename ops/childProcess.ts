import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { retryWithBackoff } from '../src/concurrency';

/**
 * A server program we run as a child (the Temporal dev server, the Temporal server, its Web UI): detached from
 * our process group, so Ctrl-C reaches us first and our workers drain before the server stops; its output in a
 * log file; its pid in a file, so a run that was killed outright (SIGKILL skips every exit handler) leaves
 * nothing the next start cannot find and stop.
 */
export interface ServiceProcess {
  process: ChildProcess;
  /** Resolves when the process has exited, for whatever reason. */
  exited: Promise<Exit>;
  /** SIGTERM, then SIGKILL after `killAfterMs`; resolves once it has exited. */
  stop(): Promise<void>;
  /** Rejects (naming the log) as soon as the process exits: race it against a readiness check. */
  failOnExit(name: string): Promise<never>;
}

export type Exit = { code: number | null; signal: NodeJS.Signals | null };

/** Resolves when `child` has exited, for whatever reason (attach it right after the spawn). */
export function exitOf(child: ChildProcess): Promise<Exit> {
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** SIGTERM, then SIGKILL if `child` has not exited after `killAfterMs`; resolves once it has exited. */
export async function terminate(child: ChildProcess, exited: Promise<Exit>, killAfterMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const killTimer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  await exited;
  clearTimeout(killTimer);
}

function processCommand(pid: number): string | null {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return null;
  }
}

/** Stops the process a killed earlier run left behind, if the pid file names one that still runs `marker`. */
export async function stopLeftover(pidFile: string, marker: string): Promise<void> {
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  const command = Number.isInteger(pid) && pid > 0 ? processCommand(pid) : null;
  if (command?.includes(marker)) {
    process.kill(pid, 'SIGTERM');
    // Not our child, so no exit event: poll its /proc entry for 10 s, then SIGKILL.
    await retryWithBackoff(
      async () => {
        if (processCommand(pid) !== null) throw new Error(`process ${pid} still runs`);
      },
      { timeoutMs: 10_000, initialMs: 100, maxMs: 100 },
    ).catch(() => process.kill(pid, 'SIGKILL'));
  }
  fs.rmSync(pidFile, { force: true });
}

export async function spawnService(options: {
  command: string;
  args: string[];
  logFile: string;
  pidFile?: string;
  /** What the leftover's command line contains; default the whole command line. */
  leftoverMarker?: string;
  killAfterMs?: number;
}): Promise<ServiceProcess> {
  fs.mkdirSync(path.dirname(options.logFile), { recursive: true });
  if (options.pidFile) await stopLeftover(options.pidFile, options.leftoverMarker ?? [options.command, ...options.args].join(' '));
  const log = fs.openSync(options.logFile, 'a');
  const child = spawn(options.command, options.args, { stdio: ['ignore', log, log], detached: true });
  fs.closeSync(log);
  process.once('exit', () => child.kill('SIGTERM'));
  if (options.pidFile && child.pid) fs.writeFileSync(options.pidFile, String(child.pid));
  const exited = exitOf(child);
  return {
    process: child,
    exited,
    async stop() {
      await terminate(child, exited, options.killAfterMs ?? 10_000);
      if (options.pidFile) fs.rmSync(options.pidFile, { force: true });
    },
    failOnExit: (name) =>
      exited.then(({ code, signal }) => {
        throw new Error(`${name} exited with ${signal ?? code}; see ${options.logFile}`);
      }),
  };
}
