import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../src/config';
import type { Pool } from '../src/db/pool';

/** Everything an activity touches is handed in here, so a test can build activities over its own pool. */
export interface ActivityDeps {
  config: Config;
  pool: Pool;
  log: Logger;
  temporal: Client;
}
