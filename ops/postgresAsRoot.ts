import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { StartupError } from '../src/platform/startupError';
import type { RunAs } from './childProcess';

/**
 * The embedded Postgres's start as root, a step of its own: Postgres refuses to run as root, so it runs as the
 * `postgres` user (created if missing), from binaries and on a cluster that user can reach. A start that is not
 * root never comes here (embeddedPostgres.ts, placeOf).
 */

const USER = 'postgres';
const COMPONENT = 'embedded Postgres';

/** Where the server's binaries and cluster are, and whose rights it runs with. */
export interface PostgresPlace {
  /** The directory holding initdb and postgres. */
  binDir: string;
  cluster: string;
  runAs: RunAs | null;
  /** Gives a file we created to the user the server runs as. */
  handOver(file: string): void;
}

export interface RootPlaceOptions {
  /** The packaged binaries' directory (its bin/ holds initdb and postgres) and their version. */
  packaged: { native: string; version: string };
  dataDir: string;
  /** EMBEDDED_PG_SHARED_DIR: where the copies go when the `postgres` user cannot reach the clone or DATA_DIR. */
  sharedDir: string;
}

export function rootPlace(options: RootPlaceOptions): PostgresPlace {
  const runAs = postgresUser();
  return {
    binDir: path.join(binariesFor(runAs, options), 'bin'),
    cluster: clusterDir(runAs, options),
    runAs,
    handOver: (file) => fs.chownSync(file, runAs.uid, runAs.gid),
  };
}

function userIds(name: string): RunAs | null {
  const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return null;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

function postgresUser(): RunAs {
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
 * The packaged binaries, or, when the `postgres` user cannot reach the clone (a home directory or `mktemp -d`
 * is 0700), a copy under the shared directory, made once per version.
 */
function binariesFor(runAs: RunAs, { packaged, sharedDir }: RootPlaceOptions): string {
  const { native, version } = packaged;
  if (reachable(runAs, path.join(native, 'bin', 'postgres'), '-x')) return native;
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
 * `<dataDir>/postgres` when the `postgres` user can reach DATA_DIR; otherwise a cluster in the shared directory
 * behind a symbolic link at `<dataDir>/postgres`: the link is what ties the cluster to this DATA_DIR, so
 * deleting DATA_DIR deletes the cluster as far as we are concerned (a cluster found there without its link is
 * stale and started afresh).
 */
function clusterDir(runAs: RunAs, { dataDir, sharedDir }: RootPlaceOptions): string {
  const link = path.join(dataDir, 'postgres');
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
