import { ConfigError, databaseUrlOf, temporalAddressOf, type Config } from '../src/config';
import { waitForDatabase } from '../src/db/pool';
import { StartupError } from '../src/platform/startupError';
import { temporalConnectionOptions, waitForTemporal } from '../src/platform/temporal';

/** The messages between `npm run cluster`'s primary and a warm spare (ops/warmSpare.ts). */
export const SPARE_MESSAGES = {
  /** spare → primary: its modules are loaded, it waits. */
  standby: 'ledger:standby',
  /** primary → spare: run now, with `env` (the process it replaces had its own metrics ports). */
  takeOver: 'ledger:take-over',
} as const;

/**
 * The settings each worker process of `npm run cluster` has of its own (its metrics ports, ops/bin/cluster.ts
 * workerMetricsEnv): the only ones a warm spare's take-over may find different (ops/bin/worker.ts).
 */
export const WORKER_PER_PROCESS_KEYS = ['TEMPORAL_METRICS_ADDRESS', 'WORKER_METRICS_PORT'] as const;

/** Whether this process is a warm spare that has not been taken over (LEDGER_STANDBY=1, ops/warmSpare.ts). */
export function isWarmSpare(): boolean {
  return process.env.LEDGER_STANDBY === '1';
}

/**
 * Where a warm spare waits (LEDGER_STANDBY=1: `npm run cluster` keeps one per role, ops/warmSpare.ts): api.ts and
 * worker.ts call it once everything that is the same for every process of their role is done (modules loaded,
 * Postgres and Temporal reached, migrations checked, connected), which on a loaded box is most of a start, and
 * before anything that is the process's own (a listening socket, a poller, metrics ports). A spare tells the
 * primary it stands by and waits for the take-over, whose environment (the replaced process's) it adopts, and
 * answers true: the caller reads its configuration again. It takes the replaced process's command line too
 * (ops/bin/spare.ts put the entry's path in process.argv; until then ps shows "ledger warm spare: api" or
 * ": worker"). It exits with its primary. Any other process answers false at once.
 */
export async function standbyIfSpare(): Promise<boolean> {
  if (!isWarmSpare()) return false;
  const send = process.send?.bind(process);
  if (!send) throw new Error('LEDGER_STANDBY=1 needs an IPC channel to the process that takes the spare over');
  const leave = () => process.exit(0);
  process.once('disconnect', leave);
  await new Promise<void>((resolve) => {
    const onMessage = (message: { type?: string; env?: Record<string, string> }) => {
      if (message?.type !== SPARE_MESSAGES.takeOver) return;
      process.off('message', onMessage);
      process.off('disconnect', leave);
      Object.assign(process.env, message.env ?? {});
      delete process.env.LEDGER_STANDBY;
      const execArgv = process.execArgv.filter((arg) => !arg.startsWith('--title'));
      process.title = [process.execPath, ...execArgv, ...process.argv.slice(1)].join(' ');
      resolve();
    };
    process.on('message', onMessage);
    send({ type: SPARE_MESSAGES.standby });
  });
  return true;
}

/**
 * Runs a process's main function: a configuration error prints its message (naming the variable) and exits 2;
 * a known start-up failure (StartupError) prints its message and exits 1; anything else exits 1 with its stack.
 */
export function runMain(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    if (error instanceof StartupError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    process.stderr.write(`fatal: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  });
}

/**
 * Calls `stop` once on SIGINT or SIGTERM; another signal a second or more later exits at once. (Ctrl-C
 * reaches every process of the terminal's group, and npm/tsx relay it too: copies within a second are one.)
 */
export function onShutdownSignal(stop: (signal: string) => Promise<void>): void {
  let firstSignalAt = 0;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      const stopping = firstSignalAt !== 0;
      if (stopping && Date.now() - firstSignalAt < 1_000) return;
      if (stopping) {
        process.stderr.write(`${signal} again: exiting without waiting.\n`);
        process.exit(1);
      }
      firstSignalAt = Date.now();
      stop(signal).then(
        () => process.exit(0),
        (error: unknown) => {
          process.stderr.write(`shutdown failed: ${(error as Error)?.stack ?? String(error)}\n`);
          process.exit(1);
        },
      );
    });
  }
  // A process started by `npm run cluster` holds an IPC channel to it: when that primary is gone (even
  // SIGKILLed), the channel closes and this process stops as if told to, instead of running on orphaned.
  if (process.send) process.once('disconnect', () => process.emit('SIGTERM', 'SIGTERM'));
}

/**
 * `npm run api` and `npm run worker` may start before their database and Temporal (docker compose, a rollout):
 * they wait for Postgres, then for Temporal and the namespace, with backoff and a warning per failed attempt,
 * up to DATABASE_CONNECT_TIMEOUT_SECONDS and TEMPORAL_CONNECT_TIMEOUT_SECONDS; then exit 1 naming what is missing.
 */
export async function waitForDependencies(config: Config, log: { warn(message: string): void }): Promise<void> {
  const progress = (message: string) => log.warn(message);
  await waitForDatabase(databaseUrlOf(config), config.DATABASE_CONNECT_TIMEOUT_SECONDS * 1_000, progress);
  await waitForTemporal(temporalAddressOf(config), config.TEMPORAL_CONNECT_TIMEOUT_SECONDS * 1_000, {
    namespace: config.TEMPORAL_NAMESPACE,
    backoffMaxMs: 5_000,
    progress,
    connection: temporalConnectionOptions(config),
  });
}
