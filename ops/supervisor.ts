import { backoffDelayMs, interruptiblePause } from '../src/concurrency';
import { describeExit, type Exit } from './childProcess';

/**
 * Keeps a child service of `npm start` (the embedded Postgres, the Temporal dev server) or `npm run cluster`
 * (also the Temporal server, its UI, the api and worker processes) running: when it dies (SIGKILL, SIGQUIT, a
 * crash), it is started again after a backoff; while it is down, `check` fails so /readyz answers 503 (in
 * `npm start`, whose api shares the process); after `restartsMax` failures in a row the supervisor gives up
 * and says so through `onGiveUp`, and the command exits non-zero naming the component. A child given a
 * `liveness` probe that has not passed for its `unresponsiveMs` while the process runs (hung, or alive but
 * unable to do its work: the dev server of issue 38) is killed, and so restarted the same way.
 */
export const SUPERVISOR_LIMITS = {
  /** Deaths and failed restarts in a row before giving up. */
  restartsMax: 5,
  backoffInitialMs: 500,
  backoffMaxMs: 8_000,
  /** A child that stays up this long has recovered: its failure count starts again from zero. */
  stableMs: 30_000,
};

export interface SupervisedChild {
  exited: Promise<Exit>;
  stop(): Promise<void>;
}

export interface Supervisor {
  /** Resolves while the child runs; rejects (naming the component) while it is down or restarting. */
  check(): Promise<void>;
  /** Stops supervising, then the child. */
  stop(): Promise<void>;
}

/** A running child's own health, beyond being alive; see supervise. */
export interface Liveness<T> {
  /** Resolves when the child does its work; each call bounds its own wait. */
  probe(child: T): Promise<void>;
  /** Ends a child that stopped doing its work (its exit then restarts it). */
  kill(child: T): void;
  /** How long without a passing probe before the child is killed. */
  unresponsiveMs: number;
  /** Between the end of one probe and the next. */
  everyMs: number;
}

export interface SupervisorOptions<T extends SupervisedChild> {
  /** Named in every message, e.g. "embedded Postgres". */
  component: string;
  first: T;
  start(): Promise<T>;
  log: { warn(message: string): void; info(message: string): void };
  onGiveUp(error: Error): void;
  /** True once the whole service is stopping: a child that exits then (Ctrl-C reaches it too) is not restarted. */
  shuttingDown?: () => boolean;
  limits?: Partial<typeof SUPERVISOR_LIMITS>;
  liveness?: Liveness<T>;
}

/**
 * Probes `child` while it is the current one (`isCurrent`), and kills it once no probe has passed for
 * liveness.unresponsiveMs; says why first. Probes never overlap.
 */
function watchLiveness<T extends SupervisedChild>(
  child: T,
  liveness: Liveness<T>,
  options: { component: string; isCurrent: () => boolean; log: SupervisorOptions<T>['log'] },
): void {
  let passedAt = Date.now();
  let exited = false;
  void child.exited.then(() => {
    exited = true;
  });
  const live = () => !exited && options.isCurrent();
  /** One probe; answers whether to go on probing (false once the child is gone or has been killed). */
  const probeOnce = async (): Promise<boolean> => {
    if (!live()) return false;
    try {
      await liveness.probe(child);
      passedAt = Date.now();
      return true;
    } catch (error) {
      const silentMs = Date.now() - passedAt;
      if (!live() || silentMs < liveness.unresponsiveMs) return live();
      options.log.warn(
        `${options.component} runs but passed no health check for ${Math.round(silentMs / 1000)} s (last: ${(error as Error).message}); killing it so that it restarts`,
      );
      liveness.kill(child);
      return false;
    }
  };
  const next = () => {
    const timer = setTimeout(() => {
      void probeOnce().then((goOn) => {
        if (goOn) next();
      });
    }, liveness.everyMs);
    timer.unref();
  };
  next();
}

export function supervise<T extends SupervisedChild>(options: SupervisorOptions<T>): Supervisor {
  const limits = { ...SUPERVISOR_LIMITS, ...options.limits };
  let current: T | null = options.first;
  let stopped = false;
  let failures = 0;
  let upSince = Date.now();
  const { pause, wake } = interruptiblePause();

  const watch = (child: T): void => {
    if (options.liveness)
      watchLiveness(child, options.liveness, {
        component: options.component,
        isCurrent: () => !stopped && current === child,
        log: options.log,
      });
    void child.exited.then(async (exit) => {
      if (stopped || options.shuttingDown?.() || current !== child) return;
      current = null;
      if (Date.now() - upSince >= limits.stableMs) failures = 0;
      let reason = `${options.component} ${describeExit(exit)}`;
      while (!stopped) {
        failures += 1;
        if (failures > limits.restartsMax) {
          options.onGiveUp(
            new Error(`${options.component} failed ${limits.restartsMax} times in a row; giving up. Last failure: ${reason}`),
          );
          return;
        }
        const delayMs = backoffDelayMs(failures, limits.backoffInitialMs, limits.backoffMaxMs);
        options.log.warn(`${reason}; restarting it in ${delayMs} ms (attempt ${failures} of ${limits.restartsMax})`);
        await pause(delayMs);
        if (stopped) return;
        try {
          const restarted = await options.start();
          if (stopped) {
            await restarted.stop();
            return;
          }
          current = restarted;
          upSince = Date.now();
          options.log.info(`${options.component} restarted`);
          watch(restarted);
          return;
        } catch (error) {
          reason = `${options.component} did not restart: ${(error as Error).message}`;
        }
      }
    });
  };
  watch(options.first);

  return {
    async check() {
      if (!current) throw new Error(`${options.component} is down; restarting`);
    },
    async stop() {
      stopped = true;
      wake();
      await current?.stop();
    },
  };
}
