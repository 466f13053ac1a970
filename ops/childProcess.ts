import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { retryWithBackoff } from '../src/concurrency';

/**
 * The one child-process toolkit: every process ops/ starts (the embedded Postgres and its initdb, the Temporal
 * dev server, the Temporal server and its Web UI, the Go tool builds, `npm run cluster`'s api and worker
 * processes) and the tests' and benches' own children go through these, so exits, stops, leftovers and
 * readiness polls are written once.
 */

export type Exit = { code: number | null; signal: NodeJS.Signals | null };

/** Whose rights a child runs with (the embedded Postgres's `postgres` user when we are root). */
export interface RunAs {
  uid: number;
  gid: number;
}

/** Resolves when `child` has exited, for whatever reason (attach it right after the spawn). */
export function exitOf(child: ChildProcess): Promise<Exit> {
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

export function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

export function describeExit({ code, signal }: Exit): string {
  return signal ? `was killed by ${signal}` : `exited with code ${code}`;
}

/** `signal` (SIGTERM unless told), then SIGKILL if `child` has not exited after `killAfterMs`; resolves once it has exited. */
export async function terminate(
  child: ChildProcess,
  exited: Promise<Exit>,
  killAfterMs: number,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (!isRunning(child)) return;
  child.kill(signal);
  const killTimer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  await exited;
  clearTimeout(killTimer);
}

/** The command line of a running process, its arguments joined by spaces; null once it is gone. */
export function commandLine(pid: number): string | null {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return null;
  }
}

export interface LeftoverOptions {
  /** Its first line is the pid: our own pid files and Postgres's postmaster.pid alike. */
  pidFile: string;
  /** What the process's command line contains, so a pid reused by another program is left alone. */
  marker: string;
  signal?: NodeJS.Signals;
  /** SIGKILL when it still runs after this long. */
  killAfterMs?: number;
  /** Postgres removes its postmaster.pid itself, and checks a stale one on start: leave it. */
  keepPidFile?: boolean;
}

/**
 * Stops the process a killed earlier run left behind (SIGKILL skips every exit handler), if the pid file names
 * one that still runs `marker`. Not our child, so no exit event: its /proc entry is polled.
 */
export async function stopLeftover(options: LeftoverOptions): Promise<void> {
  const { pidFile, marker } = options;
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]!.trim());
  if (Number.isInteger(pid) && pid > 0 && commandLine(pid)?.includes(marker)) {
    process.kill(pid, options.signal ?? 'SIGTERM');
    await retryWithBackoff(
      async () => {
        if (commandLine(pid) !== null) throw new Error(`process ${pid} still runs`);
      },
      { timeoutMs: options.killAfterMs ?? 10_000, initialMs: 100, maxMs: 100 },
    ).catch(() => process.kill(pid, 'SIGKILL'));
  }
  if (!options.keepPidFile) fs.rmSync(pidFile, { force: true });
}

/** The last lines of a log file, to quote in the error of a process that failed. */
export function logTail(logFile: string, lines = 8): string {
  try {
    return fs.readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

interface SpawnOptions {
  command: string;
  /** Named in errors; default the command's file name. */
  name?: string;
  args: string[];
  /** Where its output goes (appended); 'inherit' shares ours. */
  output: { logFile: string } | 'inherit';
  env?: NodeJS.ProcessEnv;
  runAs?: RunAs | null;
  detached?: boolean;
}

function spawnWithOutput(options: SpawnOptions): ChildProcess {
  const spawnOptions = { env: options.env ?? process.env, detached: options.detached ?? false, ...(options.runAs ?? {}) };
  if (options.output === 'inherit')
    return spawn(options.command, options.args, { ...spawnOptions, stdio: ['ignore', 'inherit', 'inherit'] });
  fs.mkdirSync(path.dirname(options.output.logFile), { recursive: true });
  const log = fs.openSync(options.output.logFile, 'a');
  try {
    return spawn(options.command, options.args, { ...spawnOptions, stdio: ['ignore', log, log] });
  } finally {
    fs.closeSync(log);
  }
}

/**
 * Runs a program to its end (initdb, `go install`): resolves when it exits 0; rejects naming the program, its
 * exit and (when it writes to a log) the log's last lines.
 */
export function runToEnd(options: SpawnOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawnWithOutput(options);
    const name = options.name ?? path.basename(options.command);
    child.once('error', (error) => reject(new Error(`could not run ${name}: ${error.message}`)));
    child.once('exit', (code, signal) => {
      if (code === 0) return resolve();
      const log = options.output === 'inherit' ? '' : `; from ${options.output.logFile}:\n${logTail(options.output.logFile)}`;
      reject(new Error(`${name} exited with ${signal ?? code}${log}`));
    });
  });
}

/**
 * A server program we run as a child (the embedded Postgres, the Temporal dev server, the Temporal server, its
 * Web UI): detached from our process group, so Ctrl-C reaches us first and our workers drain before the server
 * stops; its output in a log file; optionally its pid in a file, so a run that was killed outright leaves
 * nothing the next start cannot find and stop; stopped with us if we exit without stopping it.
 */
export interface ServiceProcess {
  process: ChildProcess;
  logFile: string;
  /** Resolves when the process has exited, for whatever reason. */
  exited: Promise<Exit>;
  /** The stop signal, then SIGKILL after `killAfterMs`; resolves once it has exited. */
  stop(): Promise<void>;
}

export interface ServiceOptions {
  command: string;
  args: string[];
  logFile: string;
  /** A pid file of ours: a leftover it names is stopped first, and it is written while the process runs. */
  pidFile?: string;
  /** What the leftover's command line contains; default the whole command line. */
  leftoverMarker?: string;
  /** SIGTERM unless told (Postgres: SIGINT, its fast shutdown). */
  stopSignal?: NodeJS.Signals;
  killAfterMs?: number;
  env?: NodeJS.ProcessEnv;
  runAs?: RunAs | null;
}

export async function spawnService(options: ServiceOptions): Promise<ServiceProcess> {
  const { pidFile, stopSignal = 'SIGTERM' } = options;
  if (pidFile) await stopLeftover({ pidFile, marker: options.leftoverMarker ?? [options.command, ...options.args].join(' ') });
  const child = spawnWithOutput({ ...options, output: { logFile: options.logFile }, detached: true });
  const exited = exitOf(child);
  // A main process that exits without stopping it (an uncaught error) still takes it down.
  const onExit = () => child.kill(stopSignal);
  process.once('exit', onExit);
  if (pidFile && child.pid) fs.writeFileSync(pidFile, String(child.pid));
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      process.removeListener('exit', onExit);
      await terminate(child, exited, options.killAfterMs ?? 10_000, stopSignal);
      if (pidFile) fs.rmSync(pidFile, { force: true });
    })();
    return stopping;
  };
  return { process: child, logFile: options.logFile, exited, stop };
}

/**
 * Waits for `ready` (a readiness check) unless the service exits first; either failure stops the service and is
 * thrown, an exit as `onExit` words it (default: `name`, its exit and its log).
 */
export async function readyOrStopped<T>(
  service: ServiceProcess,
  name: string,
  ready: Promise<T>,
  onExit: (exit: Exit) => Error = ({ code, signal }) => new Error(`${name} exited with ${signal ?? code}; see ${service.logFile}`),
): Promise<T> {
  const died = service.exited.then((exit) => {
    throw onExit(exit);
  });
  try {
    return await Promise.race([ready, died]);
  } catch (error) {
    await service.stop();
    throw error;
  } finally {
    died.catch(() => undefined);
    ready.catch(() => undefined);
  }
}

/** Calls `check` every `intervalMs` until it passes, for up to `timeoutMs`, while `child` runs. */
export function pollWhileRunning(
  child: ChildProcess,
  check: () => Promise<unknown>,
  options: { timeoutMs: number; intervalMs: number },
): Promise<void> {
  return retryWithBackoff(async () => void (await check()), {
    timeoutMs: options.timeoutMs,
    initialMs: options.intervalMs,
    maxMs: options.intervalMs,
    retryable: () => isRunning(child),
  });
}
