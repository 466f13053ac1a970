import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from './config';
import type { Pool, Queryable } from './db/pool';
import type { LifecyclePoke } from './ledger/lifecycleDrainer';

/** What domain operations reach beyond the database. */
export interface Services {
  /** Temporal client: starts and signals workflows. */
  temporal: Client;
  /** The task queue every workflow of this deployment runs on. */
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

/** What a write operation hands back: its answer, and work that must wait for its transaction to commit. */
export interface Outcome<T> {
  body: T;
  /** Runs after the operation's transaction commits (e.g. starting a settlement workflow); never inside it. */
  afterCommit?: () => Promise<void>;
}
