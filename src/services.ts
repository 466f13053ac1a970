import type { Logger } from 'pino';
import type { Config } from './config';
import type { Pool, Queryable } from './db/pool';
import type { PendingEvent } from './outbox';
import type { LifecyclePoke } from './platform/lifecyclePoke';

/**
 * What domain operations reach beyond the database. No Temporal client: an operation queues its workflow
 * starts and signals in its own transaction (enqueueTemporalCommand, docs/temporal-road.md).
 */
export interface Services {
  /** The task queue every workflow of this deployment runs on, and whose drainers deliver its queued commands. */
  taskQueue: string;
}

/** A process's long-lived dependencies, built once (src/api.ts, the CLI) and handed to every operation. */
export interface AppDeps {
  config: Config;
  pool: Pool;
  log: Logger;
  services: Services;
}

/**
 * One domain operation's scope: the database transaction it writes in (the pool for a read), the
 * organization it acts for, and its one instant. Routes, the CLI and tests build it; domain services never
 * see Express.
 */
export interface Op {
  db: Queryable;
  organizationId: string;
  now: Date;
  deps: AppDeps;
  /** Wakes the drainers after a commit that queued lifecycle work (the app's own, its Edge); never waits. */
  lifecyclePoke: Pick<LifecyclePoke, 'poke'>;
}

/** What a write operation hands back: its answer, and what to tell this process once its transaction commits. */
export interface Outcome<T> {
  body: T;
  /**
   * Runs after the operation's transaction commits: counters and the drainers' poke only. Synchronous on
   * purpose: nothing is awaited after a commit, so an answer never claims an effect that a later call could
   * fail to make (issue 32). Effects are rows written in the transaction (docs/temporal-road.md).
   */
  afterCommit?: () => void;
  /**
   * Events the operation's last step would record: the edge records them in the statement that stores the
   * answer (one round trip fewer while the operation's locks are held), after every other write of the
   * operation, in the order given. Only for events that are the operation's last write.
   */
  events?: readonly PendingEvent[];
}
