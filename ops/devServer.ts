import fs from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import { readyOrStopped, spawnService, type ServiceProcess } from './childProcess';
import type { Liveness } from './supervisor';
import { SEARCH_ATTRIBUTES, waitForTemporal } from '../src/platform/temporal';

/**
 * SQLite pragmas of a file-backed dev server (`npm start`, the benches). The server's default is a rollback
 * journal with a full fsync per commit: every workflow task rewrote and synced whole pages (31 GB written in
 * 14 minutes for a 57 MB database, a full core, thousands of `update-wf-execution … context deadline
 * exceeded`, 20 workflow starts a second). WAL appends each commit to one log instead, and synchronous=NORMAL
 * syncs that log at checkpoints rather than at every commit.
 * What that trades: a crash of the server process (or of ours) loses nothing — a commit is in the WAL, which
 * the OS holds, before the server answers. A power loss or kernel crash can roll the server's state back to
 * its last synced checkpoint (the commits since then, usually the last seconds; the database stays consistent,
 * as a whole earlier snapshot). Postgres is the ledger's source of truth and is untouched by this; what
 * Temporal can lose is an input from outside it (a workflow start, a signal) accepted in those seconds, and
 * the worker's start-up sweep (src/ledger/lifecycle.ts, sweepLifecycles) starts again every unsettled
 * transaction's workflow that the server no longer knows. Work inside a workflow that is lost is redone from
 * the earlier snapshot by idempotent activities.
 */
export const DEV_SERVER_SQLITE_PRAGMAS = ['journal_mode=wal', 'synchronous=normal'] as const;

/** The dynamic-config setting `temporal server start-dev` turns on by default, and we turn off. */
export const SEARCH_ATTRIBUTES_REFRESH_ON_READ = 'system.forceSearchAttributesCacheRefreshOnRead';

/**
 * Eager activity dispatch, off by default in Temporal's server: a worker completing a workflow task that
 * schedules activities on its own task queue gets them in the answer, when it has free activity slots (the
 * SDK asks for that by default), instead of each going through a transfer task, matching and a poll. The
 * same semantics (timeouts, retries, heartbeats; a retry goes through matching as before), less server work
 * per activity (measured with webhook deliveries: bench/results/2026-11-29-eager-activities.md). `npm run
 * cluster`'s server sets it too (TEMPORAL_DYNAMIC_CONFIG).
 */
export const EAGER_ACTIVITIES = 'system.enableActivityEagerExecution';

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

export interface DevServer extends ServiceProcess {
  address: string;
  uiUrl: string | null;
}

/** Starts `temporal server start-dev` as a child process and resolves once its frontend answers. */
export async function startTemporalDevServer(options: DevServerOptions): Promise<DevServer> {
  if (options.dbFile) fs.mkdirSync(path.dirname(options.dbFile), { recursive: true });
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--namespace',
    options.namespace,
    '--log-level',
    'warn',
  ];
  if (options.uiPort === null) args.push('--headless');
  else args.push('--ui-port', String(options.uiPort));
  if (options.dbFile) {
    args.push('--db-filename', options.dbFile);
    for (const pragma of DEV_SERVER_SQLITE_PRAGMAS) args.push('--sqlite-pragma', pragma);
  }
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
    void type; // All ours are keywords; the operator API registers them again idempotently after start.
    args.push('--search-attribute', `${name}=Keyword`);
  }
  // The CLI turns on a test setting that re-reads the search-attribute metadata from the database on every
  // read: every workflow start and every upsert queried SQLite once more, behind its one connection (7.6 % of
  // the server's CPU in the lifecycle bench's profile, 1.0 % without it). Every attribute we use is registered
  // by the flags above before the server answers, so each service's cache (refreshed each minute, Temporal's
  // default) holds them from its first read. `npm run cluster`'s server, on SQL visibility, needs neither the
  // setting nor the flags: what it caches is written before its services start (TEMPORAL_DYNAMIC_CONFIG).
  args.push('--dynamic-config-value', `${SEARCH_ATTRIBUTES_REFRESH_ON_READ}=false`);
  args.push('--dynamic-config-value', `${EAGER_ACTIVITIES}=true`);
  const child = await spawnService({
    command: options.cliPath,
    args,
    logFile: options.logFile,
    pidFile: options.pidFile,
    leftoverMarker: 'server start-dev',
  });
  const address = `127.0.0.1:${options.port}`;
  await readyOrStopped(child, 'temporal server start-dev', waitForTemporal(address, options.readyTimeoutMs ?? 60_000));
  return { ...child, address, uiUrl: options.uiPort === null ? null : `http://127.0.0.1:${options.uiPort}` };
}

/** The id of a workflow no one starts: the health check asks for it, and a server that can answers "not found". */
export const DEV_SERVER_HEALTH_WORKFLOW_ID = '__ledger-dev-server-health';

/**
 * The dev server's health for its supervisor (ops/supervisor.ts): a describe of a workflow that does not exist,
 * which the frontend hands to the history service and its SQLite, answered "not found" by a server that can
 * read its state. A frontend answering alone (GetSystemInfo, /readyz's check) is not enough: issue 38's runs
 * had the CLI's dev server (modernc.org/sqlite v1.34.1) keep its frontend up while its SQLite connection
 * answered `interrupted (9)` to every query and its one history shard stayed unowned ("shard status unknown")
 * for good, every start, signal and poll failing, until the process was restarted. Killed with SIGKILL: its
 * state is in SQLite's WAL (DEV_SERVER_SQLITE_PRAGMAS), which a crash of the process keeps.
 */
export function devServerLiveness(options: {
  address: string;
  namespace: string;
  unresponsiveMs: number;
  everyMs?: number;
  probeTimeoutMs?: number;
}): { liveness: Liveness<DevServer>; close(): Promise<void> } {
  const connection = Connection.lazy({ address: options.address, connectTimeout: 2_000 });
  const probeTimeoutMs = options.probeTimeoutMs ?? 10_000;
  return {
    liveness: {
      unresponsiveMs: options.unresponsiveMs,
      everyMs: options.everyMs ?? 5_000,
      kill: (server) => void server.process.kill('SIGKILL'),
      async probe() {
        try {
          await connection.withDeadline(Date.now() + probeTimeoutMs, () =>
            connection.workflowService.describeWorkflowExecution({
              namespace: options.namespace,
              execution: { workflowId: DEV_SERVER_HEALTH_WORKFLOW_ID },
            }),
          );
        } catch (error) {
          if (isGrpcServiceError(error) && error.code === status.NOT_FOUND) return;
          throw error;
        }
      },
    },
    close: () => connection.close(),
  };
}
