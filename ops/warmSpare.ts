import type { ChildProcess } from 'node:child_process';
import { describeExit, exitOf, terminate, type Exit } from './childProcess';
import { SPARE_MESSAGES } from './run';

/** A started api or worker process of `npm run cluster`, not yet ready: its handle and its IPC channel. */
export interface Launched<H> {
  handle: H;
  child: ChildProcess;
  exited: Promise<Exit>;
  send(message: unknown): void;
  onMessage(listener: (message: { type?: string } | null) => void): void;
}

/** A spawned child (with an IPC channel) as a Launched, `handle` being what its caller keeps of it. */
export function launchedChild<H>(child: ChildProcess, handle: H): Launched<H> {
  return {
    handle,
    child,
    exited: exitOf(child),
    send: (message) => child.send(message as object),
    onMessage: (listener) => child.on('message', listener),
  };
}

/** How long a spare that is stopped (the cluster stopping) may take before it is killed. */
const SPARE_STOP_MS = 5_000;

/**
 * Spares per role: three. With one, a second kill soon after a first (seed 6 of the simulation,
 * docs/reliability.md) waited for the next spare to load; with two, a third kill within a spare's loading time
 * (22–39 s on the simulation's loaded box) did: seed 25's fifth api kill 15.2 s, seed 31's third worker kill
 * 10.0 s. Three kills of one role in that time find one standing by each.
 */
export const WARM_SPARES_PER_ROLE = 3;

interface SpareEntry<H> {
  launched: Launched<H>;
  standingBy: Promise<boolean>;
  ready: boolean;
}

/**
 * The warm spares of one role of `npm run cluster` (the api processes', the workers'): processes started ahead
 * with LEDGER_STANDBY=1, which load their modules, connect, and wait (ops/run.ts, standbyIfSpare). A supervisor
 * replacing a dead process of the role takes a spare over, so the replacement only starts listening or
 * polling; on a loaded box, loading the modules through tsx and connecting were most of a restart
 * (docs/reliability.md, "Recovery"). Up to `count` of them (WARM_SPARES_PER_ROLE), started one at a time (the
 * next once the one before stands by), and after a take-over once the replacement is ready, not meanwhile: they
 * would compete with it for the cores. A take-over takes a spare standing by first. Off
 * (CLUSTER_WARM_SPARES=off), or while no spare is there, a replacement starts from nothing as before.
 */
export class WarmSpare<H> {
  private readonly spares: SpareEntry<H>[] = [];
  private armed = false;
  private stopped = false;

  constructor(
    private readonly options: {
      /** Named in log lines: "api", "worker". */
      role: string;
      enabled: boolean;
      /** Starts a process of the role with `env`; a spare's with node's `--title` of `title`. */
      launch: (env: NodeJS.ProcessEnv, title?: string) => Launched<H>;
      /** What every process of the role shares; a take-over adds its own (ports) to it. */
      env: NodeJS.ProcessEnv;
      log: { info(message: string): void; warn(message: string): void };
      /** At most this many spares at once; 1 unless given. */
      count?: number;
    },
  ) {}

  /** From now on spares stand by (the cluster calls it once all its processes are ready). */
  arm(): void {
    this.armed = true;
    this.fill();
  }

  /**
   * Starts a spare when armed, fewer than `count` are there and none is still loading (after a take-over, once
   * the replacement is ready); the next once this one stands by.
   */
  fill(): void {
    const count = this.options.count ?? 1;
    if (!this.options.enabled || !this.armed || this.stopped) return;
    if (this.spares.length >= count || this.spares.some((spare) => !spare.ready)) return;
    const launched = this.options.launch({ ...this.options.env, LEDGER_STANDBY: '1' }, `ledger warm spare: ${this.options.role}`);
    const entry: SpareEntry<H> = { launched, standingBy: Promise.resolve(false), ready: false };
    entry.standingBy = new Promise<boolean>((resolve) => {
      launched.onMessage((message) => {
        if (message?.type !== SPARE_MESSAGES.standby) return;
        entry.ready = true;
        resolve(true);
        // The next spare, unless this one was taken over while it loaded (then the replacement's readiness fills).
        if (this.spares.includes(entry)) this.fill();
      });
      void launched.exited.then(() => resolve(false));
    });
    this.spares.push(entry);
    void launched.exited.then((exit) => {
      const at = this.spares.indexOf(entry);
      if (at < 0) return;
      this.spares.splice(at, 1);
      if (!this.stopped)
        this.options.log.warn(`the ${this.options.role} warm spare ${describeExit(exit)}; the next restart starts a process from nothing`);
    });
  }

  /**
   * A process of the role running with `env`: a spare standing by, taken over; else one still loading, waited
   * for (it is further along than a new process); else a new process.
   */
  async take(env: NodeJS.ProcessEnv): Promise<Launched<H>> {
    const entry = this.spares.find((spare) => spare.ready) ?? this.spares[0];
    if (entry) this.spares.splice(this.spares.indexOf(entry), 1);
    if (entry && (await entry.standingBy)) {
      this.options.log.info(`the ${this.options.role} warm spare (pid ${entry.launched.child.pid}) takes over`);
      entry.launched.send({ type: SPARE_MESSAGES.takeOver, env });
      return entry.launched;
    }
    return this.options.launch(env);
  }

  /** The pids of the spares, standing by or still loading, oldest first. */
  sparePids(): number[] {
    return this.spares.map((spare) => spare.launched.child.pid!);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const entries = this.spares.splice(0);
    await Promise.all(entries.map((entry) => terminate(entry.launched.child, entry.launched.exited, SPARE_STOP_MS)));
  }
}
