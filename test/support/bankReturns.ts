import type { Config } from '../../src/config';
import { buildWindowFile, markFileDelivered, settleFile } from '../../src/ach/files';
import { ingestInboundFile } from '../../src/ach/inbound';
import type { Pool } from '../../src/db/pool';
import { randomString } from '../../src/ids';
import { createLogger } from '../../src/logger';
import { startAccountSettlement } from '../../src/settlement/client';
import { settlementTaskQueue } from '../../src/settlement/contract';
import { writeWithAchcli } from './achcli';
import { eventually, type Stack, type TestOrg } from './harness';

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

/** One item of a bank file: an R code returns the entry of `trace` (`credit`: a credit of ours), a C code corrects it with `corrected`. */
export interface BankItem {
  trace: string;
  code: string;
  amount?: number;
  corrected?: string;
  credit?: boolean;
}

let fileCounter = 0;

/** A return / NOC file as the bank sends it to `odfi` (our routing number), written by achcli from moov-io/ach's JSON. */
export async function bankFile(odfi: string, items: BankItem[]): Promise<string> {
  fileCounter += 1;
  const entry = (item: BankItem, i: number) => {
    const traceNumber = `02100002${String((fileCounter * 100 + i + 1) % 10_000_000).padStart(7, '0')}`;
    const base = {
      RDFIIdentification: odfi.slice(0, 8),
      checkDigit: odfi[8],
      DFIAccountNumber: '123456789',
      identificationNumber: 'RETURN',
      individualName: 'TEST USER',
      addendaRecordIndicator: 1,
      traceNumber,
      // The return of a checking credit is 21, of a checking debit 26.
      transactionCode: item.credit ? 21 : 26,
    };
    const addenda = { originalTrace: item.trace, originalDFI: '11000000', traceNumber };
    return item.code.startsWith('C')
      ? {
          ...base,
          amount: 0,
          category: 'NOC',
          addenda98: { typeCode: '98', changeCode: item.code, correctedData: item.corrected, ...addenda },
        }
      : {
          ...base,
          amount: item.amount ?? 100,
          category: 'Return',
          addenda99: { typeCode: '99', returnCode: item.code, dateOfDeath: '', addendaInformation: '', ...addenda },
        };
  };
  // 225 debits only (returns of debits, notifications), 220 credits only, 200 mixed.
  const classOf = (batchItems: BankItem[]) => (batchItems.every((i) => !i.credit) ? 225 : batchItems.every((i) => i.credit) ? 220 : 200);
  const batch = (number: number, sec: string, batchItems: BankItem[]) => ({
    batchHeader: {
      serviceClassCode: classOf(batchItems),
      companyName: 'TEST COMPANY',
      companyIdentification: '1234567890',
      standardEntryClassCode: sec,
      companyEntryDescription: 'PAYMENT',
      effectiveEntryDate: sec === 'COR' ? '' : '261130',
      originatorStatusCode: 1,
      ODFIIdentification: '11000000',
      batchNumber: number,
    },
    entryDetails: batchItems.map(entry),
    batchControl: { serviceClassCode: classOf(batchItems) },
  });
  const returns = items.filter((i) => i.code.startsWith('R'));
  const changes = items.filter((i) => i.code.startsWith('C'));
  return writeWithAchcli({
    fileHeader: {
      immediateDestination: odfi,
      immediateOrigin: '021000021',
      fileCreationDate: '261130',
      fileCreationTime: String(1000 + fileCounter).slice(-4),
      fileIDModifier: 'A',
      immediateDestinationName: 'TEST ODFI',
      immediateOriginName: 'FEDERAL RESERVE BANK',
    },
    batches: [
      ...(returns.length ? [batch(1, 'PPD', returns)] : []),
      ...(changes.length ? [batch(returns.length ? 2 : 1, 'COR', changes)] : []),
    ],
    fileControl: {},
  });
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
