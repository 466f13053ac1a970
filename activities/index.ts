import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../src/config';
import type { Pool } from '../src/db/pool';
import { createLedgerActivities } from './ledger';
import { createWebhookActivities } from './webhooks';
import { createSettlementActivities } from './settlement';

/** Everything an activity touches is handed in here, so a test can build activities over its own pool. */
export interface ActivityDeps {
  config: Config;
  pool: Pool;
  log: Logger;
  temporal: Client;
}

/** The worker's activities, one factory per feature merged into one object. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createLedgerActivities(deps),
    ...createWebhookActivities(deps),
    ...createSettlementActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
