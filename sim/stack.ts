import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * The service under simulation, started the way an operator starts it (`npm run cluster`, or `npm start` for
 * the single topology) in a data directory of its own on free ports, and what an operator can see of it from
 * outside: its output, its processes in /proc, the pid files its supervisors write, and the CLI.
 */
export const REPO_ROOT = path.resolve(__dirname, '..');

export type Topology = 'cluster' | 'single';

export interface LogLine {
  at: number;
  text: string;
}

export interface Stack {
  topology: Topology;
  url: string;
  env: Record<string, string>;
  dataDir: string;
  primary: ChildProcess;
  lines: LogLine[];
  apiPids(): number[];
  workerPids(): number[];
  temporalPid(): number | null;
  postgresPids(): number[];
  admin: (args: string[]) => Promise<{ code: number; json: Record<string, unknown>; text: string }>;
  stop: () => Promise<void>;
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** `count` consecutive free ports below 32768 (the Temporal server stores its membership ports as smallint). */
async function freePorts(count: number): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const base = 20_000 + Math.floor(Math.random() * 12_000);
    let free = true;
    for (let port = base; port < base + count && free; port += 1) free = await portFree(port);
    if (free) return base;
  }
  throw new Error(`no ${count} consecutive free ports`);
}

function childPidsOf(parent: number, marker: string): number[] {
  const pids: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent && (marker === '' || fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker))) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function pidInFile(file: string): number | null {
  try {
    const pid = Number(fs.readFileSync(file, 'utf8').split('\n')[0]!.trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function signal(pid: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}

async function serviceEnv(topology: Topology, extra: Record<string, string>) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-sim-'));
  // Root runs the embedded Postgres as `postgres`, which must pass through the directory.
  fs.chmodSync(dataDir, 0o755);
  const base = await freePorts(12);
  const inherited = Object.fromEntries(Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined));
  delete inherited.DATABASE_URL;
  delete inherited.TEMPORAL_ADDRESS;
  const env: Record<string, string> = {
    ...inherited,
    DATA_DIR: dataDir,
    PORT: String(base),
    TEMPORAL_UI_PORT: String(base + 1),
    EMBEDDED_PG_PORT: String(base + 2),
    TEMPORAL_PORT: String(base + 3),
    TEMPORAL_METRICS_ADDRESS: 'off',
    WORKER_METRICS_PORT: '0',
    // info: the supervisors' "… restarted" lines time each recovery.
    LOG_LEVEL: 'info',
    LEDGER_ENVIRONMENT: 'sandbox',
    SANDBOX_CONFIRM_SECONDS: '4',
    SANDBOX_SETTLE_SECONDS: '4',
    SANDBOX_ACH_WINDOW_SECONDS: '2',
    SANDBOX_RETURN_SECONDS: '5',
    WEBHOOK_RETRY_INITIAL_MS: '1000',
    WEBHOOK_RETRY_MAX_MS: '4000',
    ...extra,
  };
  return { env, dataDir, url: `http://127.0.0.1:${base}` };
}

/** Starts the service and resolves once it says it is ready. */
export async function startStack(topology: Topology, extra: Record<string, string>, say: (line: string) => void): Promise<Stack> {
  const { env, dataDir, url } = await serviceEnv(topology, extra);
  const primary = spawn(process.execPath, ['ops/bin/start.js', ...(topology === 'cluster' ? ['cluster'] : [])], {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  const logFile = fs.createWriteStream(path.join(dataDir, 'service.log'));
  for (const stream of [primary.stdout, primary.stderr]) {
    let partial = '';
    stream.on('data', (chunk: Buffer) => {
      logFile.write(chunk);
      const parts = (partial + chunk.toString('utf8')).split('\n');
      partial = parts.pop()!;
      const at = Date.now();
      // Request lines are many and say nothing the simulation reads.
      for (const text of parts) if (!text.includes('"req":')) lines.push({ at, text });
    });
  }
  const primaryPid = primary.pid!;
  const temporalPidFile = path.join(dataDir, topology === 'cluster' ? 'temporal-server' : 'temporal', 'server.pid');
  const postmasterPidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
  const stack: Stack = {
    topology,
    url,
    env,
    dataDir,
    primary,
    lines,
    apiPids: () => childPidsOf(primaryPid, 'ops/bin/api.ts'),
    workerPids: () => childPidsOf(primaryPid, 'ops/bin/worker.ts'),
    temporalPid: () => pidInFile(temporalPidFile),
    postgresPids: () => {
      const postmaster = pidInFile(postmasterPidFile);
      return postmaster ? [postmaster, ...childPidsOf(postmaster, '')] : [];
    },
    admin: (args) => runAdmin(args, env),
    stop: () =>
      stopStack(primary, dataDir, [temporalPidFile, path.join(path.dirname(temporalPidFile), 'ui', 'ui.pid')], postmasterPidFile, logFile),
  };
  const started = Date.now();
  await waitReady(lines, primary, started).catch(async (error: unknown) => {
    // What a failed start left running (the detached Temporal server, Postgres) goes with it.
    process.env.SIM_KEEP_DATA = '1';
    await stack.stop();
    throw error;
  });
  say(`service ready in ${((Date.now() - started) / 1000).toFixed(1)} s at ${url} (data ${dataDir})`);
  return stack;
}

function waitReady(lines: LogLine[], primary: ChildProcess, started: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (lines.some((line) => line.text.includes('Ctrl-C stops everything'))) {
        clearInterval(timer);
        resolve();
      } else if (primary.exitCode !== null || Date.now() - started > 420_000) {
        clearInterval(timer);
        reject(
          new Error(
            `the service did not start:\n${lines
              .slice(-40)
              .map((line) => line.text)
              .join('\n')}`,
          ),
        );
      }
    }, 200);
  });
}

async function runAdmin(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, ['scripts/admin.js', ...args, '--json'], { cwd: REPO_ROOT, env: { ...env, LOG_LEVEL: 'warn' } });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  child.stderr.resume();
  const code = await new Promise<number>((resolve) => child.on('exit', (exitCode) => resolve(exitCode ?? 1)));
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON: the caller reads `text`
  }
  return { code, json, text };
}

async function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

async function stopStack(primary: ChildProcess, dataDir: string, pidFiles: string[], postmasterPidFile: string, log: fs.WriteStream) {
  signal(primary.pid!, 'SIGTERM');
  if (!(await waitExit(primary, 120_000))) {
    signal(primary.pid!, 'SIGKILL');
    await waitExit(primary, 10_000);
  }
  // What a stop that failed half-way left behind: the detached Temporal server, its UI, Postgres.
  for (const file of pidFiles) {
    const pid = pidInFile(file);
    if (pid && alive(pid)) signal(pid, 'SIGKILL');
  }
  const postmaster = pidInFile(postmasterPidFile);
  if (postmaster && alive(postmaster)) {
    signal(postmaster, 'SIGCONT');
    signal(postmaster, 'SIGQUIT');
  }
  log.end();
  if (!process.env.SIM_KEEP_DATA) fs.rmSync(dataDir, { recursive: true, force: true });
}
