import { ConfigError } from '../config';

/**
 * Runs a process's main function: a configuration error prints its message (naming the variable) and exits 2;
 * any other start-up failure exits 1.
 */
export function runMain(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`fatal: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  });
}

/** Calls `stop` once on SIGINT or SIGTERM; a second signal exits at once. */
export function onShutdownSignal(stop: (signal: string) => Promise<void>): void {
  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) {
        process.stderr.write(`${signal} again: exiting without waiting.\n`);
        process.exit(1);
      }
      stopping = true;
      stop(signal).then(
        () => process.exit(0),
        (error: unknown) => {
          process.stderr.write(`shutdown failed: ${(error as Error)?.stack ?? String(error)}\n`);
          process.exit(1);
        },
      );
    });
  }
}
