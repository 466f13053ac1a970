import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { exitOf, terminate, type Exit } from '../../ops/childProcess';

export const REPO = path.resolve(__dirname, '..', '..');
export const TSX = path.join(REPO, 'node_modules', '.bin', 'tsx');

export interface Spawned {
  child: ChildProcess;
  /** Everything printed so far on stdout and stderr. */
  output(): string;
  /** Resolves with the output once `pattern` appears in it; rejects if the process exits first or time runs out. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  exited: Promise<Exit>;
}

/**
 * Runs a command of the project (in `cwd`, the repository unless told), capturing its output; the environment
 * adds to (never replaces) ours.
 */
export function spawnProject(
  command: string,
  args: string[],
  env: Record<string, string | undefined> = {},
  cwd = REPO,
  // A process group of its own, as a terminal runs a command: Ctrl-C (SIGINT to the group) reaches npm and the
  // service it runs alike (`process.kill(-child.pid, 'SIGINT')`).
  options: { group?: boolean } = {},
): Spawned {
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.group === true,
  });
  let output = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const listener of listeners) listener();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = exitOf(child);
  void exited.then(() => {
    for (const listener of listeners) listener();
  });
  return {
    child,
    output: () => output,
    exited,
    waitFor(pattern, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`timed out waiting for ${pattern}; output:\n${output}`)), timeoutMs);
        const check = () => {
          const match = pattern.exec(output);
          if (match) finish(undefined, match);
          else if (child.exitCode !== null || child.signalCode !== null)
            finish(new Error(`process exited (${child.exitCode ?? child.signalCode}) before ${pattern}; output:\n${output}`));
        };
        const finish = (error?: Error, match?: RegExpExecArray) => {
          clearTimeout(timer);
          listeners.delete(check);
          if (error) reject(error);
          else resolve(match!);
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/**
 * Stops a spawned service the way an operator would (SIGTERM, then waits for it to exit) and only kills it
 * outright if it has not exited in `graceMs`; resolves with how it ended.
 */
export async function stopGracefully(spawned: Spawned, graceMs = 30_000): Promise<Exit> {
  await terminate(spawned.child, spawned.exited, graceMs);
  return spawned.exited;
}

/** Runs the operator CLI as `npm run admin` does: `admin(['org', 'create', '--name', 'X', '--json'], env)`. */
export async function runAdmin(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; json: any }> {
  const child = spawn(process.execPath, [path.join(REPO, 'scripts', 'admin.js'), ...args], {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const { code } = await exitOf(child);
  let json: unknown = undefined;
  if (args.includes('--json')) {
    try {
      json = JSON.parse(stdout);
    } catch {
      throw new Error(`admin ${args.join(' ')} printed no JSON object (exit ${code}):\n${stdout}\n${stderr}`);
    }
  }
  return { code, stdout: stdout + stderr, json };
}

/** True when something accepts TCP connections on 127.0.0.1:port. */
export async function portOpen(port: number): Promise<boolean> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
