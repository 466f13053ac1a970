import { ConfigError, databaseUrlOf, temporalAddressOf, type Config } from '../src/config';
import { waitForDatabase } from '../src/db/pool';
import { StartupError } from '../src/platform/startupError';
import { temporalConnectionOptions, waitForTemporal } from '../src/platform/temporal';

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
