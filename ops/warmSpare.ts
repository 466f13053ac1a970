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
 * The warm spare of one role of `npm run cluster` (the api processes', the workers'): one process started ahead
 * with LEDGER_STANDBY=1, which loads its modules, connects, and waits (ops/run.ts, standbyIfSpare). A supervisor
 * replacing a dead process of the role takes the spare over, so the replacement only starts listening or
 * polling; on a loaded box, loading the modules through tsx and connecting were most of a restart
 * (docs/reliability.md, "Recovery"). The next spare is started once the replacement is ready, not meanwhile:
 * it would compete with it for the cores. Off (CLUSTER_WARM_SPARES=off), or while no spare stands by, a
 * replacement starts from nothing as before.
 */
export class WarmSpare<H> {
  private spare: { launched: Launched<H>; standingBy: Promise<boolean> } | null = null;
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
    },
  ) {}

  /** From now on a spare stands by (the cluster calls it once all its processes are ready). */
  arm(): void {
    this.armed = true;
    this.fill();
  }

  /** Starts a spare when armed and none stands by (after a take-over, once the replacement is ready). */
  fill(): void {
    if (!this.options.enabled || !this.armed || this.stopped || this.spare) return;
    const launched = this.options.launch({ ...this.options.env, LEDGER_STANDBY: '1' }, `ledger warm spare: ${this.options.role}`);
    const standingBy = new Promise<boolean>((resolve) => {
      launched.onMessage((message) => {
        if (message?.type === SPARE_MESSAGES.standby) resolve(true);
      });
      void launched.exited.then(() => resolve(false));
    });
    const entry = { launched, standingBy };
    this.spare = entry;
    void launched.exited.then((exit) => {
      if (this.spare !== entry) return;
      this.spare = null;
      if (!this.stopped)
        this.options.log.warn(`the ${this.options.role} warm spare ${describeExit(exit)}; the next restart starts a process from nothing`);
    });
  }

  /**
   * A process of the role running with `env`: the spare, taken over, when one stands by (a spare still loading
   * is waited for: it is further along than a new process), else a new process.
   */
  async take(env: NodeJS.ProcessEnv): Promise<Launched<H>> {
    const entry = this.spare;
    this.spare = null;
    if (entry && (await entry.standingBy)) {
      this.options.log.info(`the ${this.options.role} warm spare (pid ${entry.launched.child.pid}) takes over`);
      entry.launched.send({ type: SPARE_MESSAGES.takeOver, env });
      return entry.launched;
    }
    return this.options.launch(env);
  }

  /** The pid of the spare, standing by or still loading; undefined while there is none. */
  sparePid(): number | undefined {
    return this.spare?.launched.child.pid;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const entry = this.spare;
    this.spare = null;
    if (entry) await terminate(entry.launched.child, entry.launched.exited, SPARE_STOP_MS);
  }
}
