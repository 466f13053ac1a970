import type { Config } from '../../src/config';
import { buildWindowFile, markFileDelivered, settleFile } from '../../src/ach/files';
import { ingestInboundFile } from '../../src/ach/inbound';
import type { OperatorBankAccountRow } from '../../src/bankAccounts/repo';
import { storeOperatorBankAccount } from '../../src/bankAccounts/service';
import type { Pool } from '../../src/db/pool';
import { randomString } from '../../src/ids';
import { createLogger } from '../../src/logger';
import { startAccountSettlement } from '../../src/settlement/client';
import { settlementTaskQueue } from '../../src/settlement/contract';
import { eventually, type Stack, type TestOrg } from './harness';
import { SANDBOX_ROUTING } from './payments';

export { bankFile, type BankItem } from './bankFiles';

/**
 * SPEC §25 for suites that need returns to look at: our queued entries filed, delivered and settled as the ACH
 * window and the bank would (src/ach/files.ts), and the bank's return and NOC files written by moov-io/ach's
 * achcli (never by the code under test) and ingested the way `ach inbound import` does.
 */

/** Files every queued entry of the environment (as a window does), delivers and settles that file; its id, or null when nothing was queued. */
export async function fileAndSettle(pool: Pool, config: Config): Promise<string | null> {
  const now = new Date();
  const built = await buildWindowFile(pool, config, createLogger('silent'), `returns-${randomString(8)}`, now);
  if (!built) return null;
  await markFileDelivered(pool, built.fileId, now);
  await settleFile(pool, config.TEMPORAL_TASK_QUEUE, built.fileId, now);
  return built.fileId;
}

/** Ingests a file as `ach inbound import` does (SPEC §25): once by content. */
export async function importInbound(pool: Pool, config: Config, fileName: string, bytes: string | Buffer) {
  const deps = { config, pool, log: createLogger('silent'), services: { taskQueue: config.TEMPORAL_TASK_QUEUE } };
  return ingestInboundFile(deps, { fileName, bytes: Buffer.from(bytes), source: 'cli', now: new Date() });
}

/** Runs the settlement of `who`'s account for window `windowDate` now, and answers its transfer once it exists. */
export async function closeWindow(stack: Stack, who: TestOrg, windowDate: string) {
  await startAccountSettlement(stack.temporal, settlementTaskQueue(stack.config.TEMPORAL_TASK_QUEUE), {
    accountId: who.accountId,
    organizationId: who.organizationId,
    windowDate,
  });
  return eventually(
    async () => {
      const { rows } = await stack.pool.query(
        `SELECT id, direction, amount_cents::text, transaction_count, status FROM transfers WHERE account_id = $1 AND window_date = $2`,
        [who.accountId, windowDate],
      );
      return rows[0] as { id: string; direction: string; amount_cents: string; transaction_count: number; status: string } | undefined;
    },
    30_000,
    `the transfer of window ${windowDate}`,
  );
}

/** Gives `accountId` a checking operator bank account of `number` (stored as the CLI stores it): its transfers are CCD entries. */
export function giveOperatorBankAccount(stack: Stack, accountId: string, number: string): Promise<OperatorBankAccountRow | null> {
  return storeOperatorBankAccount(stack.pool, stack.config, {
    accountId,
    routingNumber: SANDBOX_ROUTING,
    number,
    accountType: 'checking',
    now: new Date(),
  });
}
