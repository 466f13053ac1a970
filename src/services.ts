import type { Client } from '@temporalio/client';

/** What route handlers reach beyond the database. Each feature adds the members it needs. */
export interface Services {
  /** Temporal client: starts and signals workflows. */
  temporal: Client;
  /** The task queue every workflow of this deployment runs on. */
  taskQueue: string;
}
