import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../config';
import { withTransaction, type Pool, type PoolClient, type Queryable } from '../db/pool';
import { openBankAccounts, openOperatorBankAccounts, organizationAchOf, type AchAccountDetails } from '../bankAccounts/contract';
import { openFileText, sealFileText } from '../bankAccounts/contract';
import { buildNachaFile, type NachaBatchInput, type NachaEntryInput } from './build';
import { FILE_ID_MODIFIERS, fileIdModifierOf, isDebitCode, type SecCode, type TransactionCode } from './nacha';
import { fileTimingOf } from './timing';
import { achWindowStep } from './steps';
import { confirmFundsSignal } from '../ledger/contract';
import { enqueueTemporalCommand, enqueueTemporalSignals } from '../platform/temporalCommands';
import { networkSettledCommand } from '../settlement/contract';
import { rowOf } from '../assert';
import { RETRY_CODES, RETRY_DESCRIPTION } from './represent';

/**
 * An ACH window's file (SPEC §24, docs/ach.md "Windows"): every queued entry into one NACHA file, in one
 * database transaction: claim, trace numbers, the file's sealed bytes, entries moved in. The database keeps
 * what this relies on (migrations/0041): an entry joins one file, ever, and a built file never changes.
 */

/** Bounded like every batch: one file holds at most this many entries; the rest wait for the next window. */
export const ACH_FILE_LIMITS = { entriesPerFileMax: 10_000 };

/** Sandbox's simulated bank: the file header's facts when ACH_* are not configured (a routing number with a valid check digit). */
const SANDBOX_ODFI = {
  odfiRouting: '011000015',
  immediateOrigin: ' 123456789',
  immediateDestinationName: 'SANDBOX BANK',
  immediateOriginName: 'PAYMENTS LEDGER SANDBOX',
};

export type AchFileConfig = Pick<
  Config,
  | 'LEDGER_ENVIRONMENT'
  | 'BANK_DATA_KEY'
  | 'ACH_ODFI_ROUTING'
  | 'ACH_IMMEDIATE_ORIGIN'
  | 'ACH_ODFI_NAME'
  | 'ACH_ORIGIN_NAME'
  | 'ACH_WINDOWS'
  | 'SETTLEMENT_CALENDAR'
  | 'SANDBOX_CONFIRM_SECONDS'
  | 'SANDBOX_SETTLE_SECONDS'
>;

/** The file header's facts: the ODFI's as configured; sandbox's simulated bank when none is; null when production has none. */
export function odfiOf(config: AchFileConfig): typeof SANDBOX_ODFI | null {
  if (config.ACH_ODFI_ROUTING && config.ACH_IMMEDIATE_ORIGIN && config.ACH_ODFI_NAME && config.ACH_ORIGIN_NAME) {
    return {
      odfiRouting: config.ACH_ODFI_ROUTING,
      immediateOrigin: config.ACH_IMMEDIATE_ORIGIN,
      immediateDestinationName: config.ACH_ODFI_NAME,
      immediateOriginName: config.ACH_ORIGIN_NAME,
    };
  }
  return config.LEDGER_ENVIRONMENT === 'sandbox' ? SANDBOX_ODFI : null;
}

interface ClaimedEntry {
  id: string;
  organization_id: string;
  organization_name: string;
  account_id: string;
  transaction_id: string | null;
  transfer_id: string | null;
  bank_account_id: string | null;
  sec_code: SecCode;
  transaction_code: TransactionCode;
  amount_cents: string;
  individual_name: string;
  recorded_at: Date;
  /** A transfer presented again after an R01 or R09 return: its batch is described RETRY PYMT (src/ach/represent.ts). */
  retry: boolean;
}

/** Queued entries (PPD and transfers' CCD), oldest first, locked; entries a concurrent build holds are skipped, not waited for. */
async function claimQueued(tx: PoolClient, environment: string): Promise<ClaimedEntry[]> {
  const { rows } = await tx.query<ClaimedEntry>(
    `SELECT e.id, e.organization_id, o.name AS organization_name, e.account_id, e.transaction_id, e.transfer_id, e.bank_account_id,
            e.sec_code, e.transaction_code, e.amount_cents,
            coalesce(u.first_name || ' ' || u.last_name, CASE WHEN e.sec_code = 'CCD' THEN a.name END, '') AS individual_name,
            coalesce(t.created_at, CASE WHEN e.represents IS NULL THEN tr.created_at END, e.created_at) AS recorded_at,
            CASE WHEN e.represents IS NULL THEN false
                 ELSE EXISTS (SELECT 1 FROM ach_entry_returns r WHERE r.entry_id = e.represents AND r.addenda_type = '99' AND r.code = ANY($3::text[]))
            END AS retry
       FROM ach_entries e
       JOIN organizations o ON o.id = e.organization_id
       JOIN accounts a ON a.id = e.account_id
       LEFT JOIN bank_accounts b ON b.id = e.bank_account_id
       LEFT JOIN users u ON u.id = b.user_id
       LEFT JOIN transactions t ON t.id = e.transaction_id
       LEFT JOIN transfers tr ON tr.id = e.transfer_id
      WHERE e.status = 'queued' AND e.environment = $2
      ORDER BY e.created_at, e.id
      LIMIT $1
        FOR UPDATE OF e SKIP LOCKED`,
    [ACH_FILE_LIMITS.entriesPerFileMax, environment, RETRY_CODES],
  );
  return rows;
}

/** NACHA fields are printable ASCII: anything else (accents, emoji) becomes a space. */
const ascii = (text: string, width: number) => text.replace(/[^\x20-\x7e]/g, ' ').slice(0, width);

/** The originator each batch names: the organization's `org ach set` identity; sandbox makes one up from its name. */
function companyOf(
  entry: ClaimedEntry,
  identities: Map<string, { company_id: string; company_name: string }>,
  config: AchFileConfig,
): { companyName: string; companyIdentification: string } | null {
  const identity = identities.get(entry.organization_id);
  if (identity) return { companyName: identity.company_name, companyIdentification: identity.company_id };
  if (config.LEDGER_ENVIRONMENT !== 'sandbox') return null;
  return { companyName: ascii(entry.organization_name, 16) || 'SANDBOX', companyIdentification: entry.organization_id.slice(-10) };
}

interface PlannedEntry {
  entry: ClaimedEntry;
  traceSequence: number;
  account: AchAccountDetails;
}

function batchesOf(
  planned: readonly PlannedEntry[],
  identities: Map<string, { company_id: string; company_name: string }>,
  config: AchFileConfig,
  effectiveDate: string,
) {
  const batches = new Map<string, NachaBatchInput & { entries: NachaEntryInput[] }>();
  for (const { entry, traceSequence, account } of planned) {
    const key = `${entry.organization_id}:${entry.sec_code}:${entry.retry}`;
    let batch = batches.get(key);
    if (!batch) {
      const company = companyOf(entry, identities, config)!;
      batch = {
        serviceClassCode: 200,
        secCode: entry.sec_code,
        ...company,
        companyEntryDescription: entry.retry ? RETRY_DESCRIPTION : entry.sec_code === 'CCD' ? 'SETTLEMENT' : 'PAYMENT',
        effectiveEntryDate: effectiveDate,
        entries: [],
      };
      batches.set(key, batch);
    }
    batch.entries.push({
      transactionCode: entry.transaction_code,
      rdfiRouting: account.routing_number,
      accountNumber: account.account_number,
      amountCents: Number(entry.amount_cents),
      individualIdentification: (entry.transaction_id ?? entry.transfer_id ?? entry.id).slice(-15),
      individualName: ascii(entry.individual_name, 22),
      traceSequence,
    });
  }
  // A batch of debits only or credits only says so (225 / 220), as banks expect.
  for (const batch of batches.values()) {
    const debits = batch.entries.filter((e) => isDebitCode(e.transactionCode)).length;
    batch.serviceClassCode = debits === batch.entries.length ? 225 : debits === 0 ? 220 : 200;
  }
  return [...batches.values()];
}

export interface BuiltFile {
  fileId: string;
  fileName: string;
  entryCount: number;
  settleAt: Date;
}

/**
 * The File ID Modifier of `fileDate`'s next file, and its turn, under the build lock: production has the day's
 * 36 (A–Z, 0–9) and no more (null: the entries wait for the next day); the sandbox's simulated bank, which
 * builds a file every SANDBOX_ACH_WINDOW_SECONDS, takes them again in turns (migrations/0047, issue 38).
 */
async function nextModifier(tx: PoolClient, fileDate: string, environment: string): Promise<{ modifier: string; turn: number } | null> {
  const { rows } = await tx.query<{ used: number }>('SELECT count(*)::int AS used FROM ach_files WHERE file_date = $1', [fileDate]);
  const used = rowOf(rows, 'a count answers one row').used;
  const turn = Math.floor(used / FILE_ID_MODIFIERS.length);
  if (turn > 0 && environment !== 'sandbox') return null;
  return { modifier: fileIdModifierOf(used % FILE_ID_MODIFIERS.length), turn };
}

/**
 * `ACH-<YYYYMMDD>-<HHMM>-<modifier>.ach`; a sandbox file of a later turn ends `-<turn>`, since its date, time and
 * modifier may be an earlier turn's.
 */
function fileNameOf(timing: { fileDate: string; creationTime: string }, next: { modifier: string; turn: number }): string {
  const turnPart = next.turn > 0 ? `-${next.turn}` : '';
  return `ACH-${timing.fileDate.replaceAll('-', '')}-${timing.creationTime.replace(':', '')}-${next.modifier}${turnPart}.ach`;
}

/** The 7-digit part of a trace number: 1 to 9,999,999, then round again (migrations/0044). */
export const TRACE_SEQUENCE_SPACE = 9_999_999;

/**
 * `count` trace sequences for a file of ODFI `odfi8` with `effectiveDate`, from ach_trace_sequence, which
 * cycles after 9,999,999: a number whose trace number an entry of the last ach_trace_reuse_days() still
 * holds is skipped (that entry can still be returned, and a return names it by trace number alone). Called
 * under the build lock. When a whole turn of the sequence finds no free number, the build is refused.
 */
export async function takeTraceSequences(tx: PoolClient, odfi8: string, count: number, effectiveDate: string): Promise<number[]> {
  const taken: number[] = [];
  let drawn = 0;
  while (taken.length < count) {
    if (drawn >= TRACE_SEQUENCE_SPACE) {
      throw new Error(`ACH: every trace number of ODFI ${odfi8} is held by an entry that can still be returned; the file is not built`);
    }
    const want = Math.min(count - taken.length, TRACE_SEQUENCE_SPACE - drawn);
    const { rows } = await tx.query<{ n: string; held: boolean }>(
      `SELECT s.n, EXISTS (SELECT 1 FROM ach_entries e
                            WHERE e.trace_number = $2 || lpad(s.n::text, 7, '0')
                              AND e.effective_date > $3::date - ach_trace_reuse_days()) AS held
         FROM (SELECT nextval('ach_trace_sequence') AS n FROM generate_series(1, $1)) s`,
      [want, odfi8, effectiveDate],
    );
    drawn += rows.length;
    for (const row of rows) if (!row.held) taken.push(Number(row.n));
  }
  return taken;
}

/**
 * Sandbox settles each entry when its simulated bank would: a payment SANDBOX_CONFIRM_SECONDS after it was
 * recorded, a transfer SANDBOX_SETTLE_SECONDS after it was created (the timer it replaces).
 */
function sandboxSettleAt(entries: readonly ClaimedEntry[], config: AchFileConfig, now: Date): Date {
  const delayOf = (e: ClaimedEntry) => (e.transfer_id ? config.SANDBOX_SETTLE_SECONDS : config.SANDBOX_CONFIRM_SECONDS) * 1000;
  const latest = Math.max(now.getTime(), ...entries.map((e) => e.recorded_at.getTime() + delayOf(e)));
  return new Date(latest);
}

/**
 * Builds the window's file from every queued entry, or answers null when nothing is queued (no file) or the
 * deployment cannot originate (production without the ODFI's facts). Entries whose organization has no ACH
 * identity in production stay queued, named in the log.
 */
export async function buildWindowFile(
  pool: Pool,
  config: AchFileConfig,
  log: Logger,
  builtBy: string,
  now: Date,
): Promise<BuiltFile | null> {
  const odfi = odfiOf(config);
  if (!odfi) {
    log.warn('ACH: ACH_ODFI_ROUTING, ACH_IMMEDIATE_ORIGIN, ACH_ODFI_NAME and ACH_ORIGIN_NAME are not set; no file is built');
    return null;
  }
  return withTransaction(pool, async (tx) => {
    // One build at a time: the File ID Modifier is counted per day, and overlapping windows must not both take it.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('ach_files build'))`);
    const { rows: done } = await tx.query<{ id: string; file_name: string; entry_count: number; settle_at: Date }>(
      'SELECT id, file_name, entry_count, settle_at FROM ach_files WHERE built_by = $1',
      [builtBy],
    );
    if (done[0]) return { fileId: done[0].id, fileName: done[0].file_name, entryCount: done[0].entry_count, settleAt: done[0].settle_at };
    const claimed = await claimQueued(tx, config.LEDGER_ENVIRONMENT);
    const identities = await organizationAchOf(tx, [...new Set(claimed.map((e) => e.organization_id))]);
    const ready = claimed.filter((entry) => companyOf(entry, identities, config) !== null);
    if (ready.length < claimed.length) {
      const waiting = [...new Set(claimed.filter((e) => !ready.includes(e)).map((e) => e.organization_id))];
      log.warn({ organization_ids: waiting }, 'ACH: entries of organizations without an ACH identity (org ach set) wait');
    }
    if (ready.length === 0) return null;
    const timing = fileTimingOf(now, config);
    const next = await nextModifier(tx, timing.fileDate, config.LEDGER_ENVIRONMENT);
    if (!next) {
      log.warn({ file_date: timing.fileDate }, 'ACH: the 36 File ID Modifiers of the day are used; entries wait for tomorrow');
      return null;
    }
    const accounts = await openBankAccounts(
      tx,
      config,
      ready.filter((e) => e.bank_account_id).map((e) => e.bank_account_id!),
    );
    const operatorAccounts = await openOperatorBankAccounts(
      tx,
      config,
      ready.filter((e) => e.sec_code === 'CCD').map((e) => e.account_id),
    );
    const sequences = await takeTraceSequences(tx, odfi.odfiRouting.slice(0, 8), ready.length, timing.effectiveDate);
    const planned = ready.map((entry, i) => ({
      entry,
      traceSequence: sequences[i]!,
      account: (entry.sec_code === 'CCD' ? operatorAccounts.get(entry.account_id) : accounts.get(entry.bank_account_id!))!,
    }));
    const file = buildNachaFile({
      ...odfi,
      creationDate: timing.fileDate,
      creationTime: timing.creationTime,
      fileIdModifier: next.modifier,
      batches: batchesOf(planned, identities, config, timing.effectiveDate),
    });
    const settleAt = config.LEDGER_ENVIRONMENT === 'sandbox' ? sandboxSettleAt(ready, config, now) : timing.settleAt;
    const fileName = fileNameOf(timing, next);
    const fileId = await insertFile(tx, config, {
      builtBy,
      fileName,
      timing,
      next,
      text: file.bytes.toString('latin1'),
      summary: file.summary,
      entryCount: ready.length,
      settleAt,
      now,
    });
    await tx.query(
      `UPDATE ach_entries e SET file_id = $1, status = 'in_file', effective_date = $2::date, updated_at = $3,
              trace_number = $4 || lpad(p.seq::text, 7, '0')
         FROM unnest($5::text[], $6::bigint[]) AS p (id, seq)
        WHERE e.id = p.id`,
      [
        fileId,
        timing.effectiveDate,
        now,
        odfi.odfiRouting.slice(0, 8),
        planned.map((p) => p.entry.id),
        planned.map((p) => p.traceSequence),
      ],
    );
    await achWindowStep('build');
    return { fileId, fileName, entryCount: ready.length, settleAt };
  });
}

async function insertFile(
  tx: PoolClient,
  config: AchFileConfig,
  input: {
    builtBy: string;
    fileName: string;
    timing: ReturnType<typeof fileTimingOf>;
    next: { modifier: string; turn: number };
    text: string;
    summary: { totalDebitCents: number; totalCreditCents: number };
    entryCount: number;
    settleAt: Date;
    now: Date;
  },
): Promise<string> {
  const { rows } = await tx.query<{ id: string }>(`SELECT 'achf_' || replace(gen_random_uuid()::text, '-', '') AS id`);
  const fileId = rowOf(rows, 'a select without FROM answers one row').id;
  await tx.query(
    `INSERT INTO ach_files (id, built_by, file_name, window_time, file_date, file_id_modifier, bytes_sealed, sha256, entry_count,
                            total_debit_cents, total_credit_cents, settle_at, created_at, environment, modifier_turn)
     VALUES ($1, $13, $2, $3, $4::date, $5, $6, $7, $8, $9, $10, $11, $12, $14, $15)`,
    [
      fileId,
      input.fileName,
      config.LEDGER_ENVIRONMENT === 'sandbox' ? null : input.timing.windowTime,
      input.timing.fileDate,
      input.next.modifier,
      sealFileText(config, input.text, fileId),
      createHash('sha256').update(input.text).digest('hex'),
      input.entryCount,
      input.summary.totalDebitCents,
      input.summary.totalCreditCents,
      input.settleAt,
      input.now,
      input.builtBy,
      config.LEDGER_ENVIRONMENT,
      input.next.turn,
    ],
  );
  return fileId;
}

export interface AchFileRow {
  id: string;
  file_name: string;
  window_time: string | null;
  file_date: string;
  file_id_modifier: string;
  sha256: string;
  entry_count: number;
  total_debit_cents: number;
  total_credit_cents: number;
  settle_at: Date;
  status: 'built' | 'delivered' | 'settled';
  created_at: Date;
  delivered_at: Date | null;
  settled_at: Date | null;
}

const FILE_COLUMNS = `id, file_name, window_time, to_char(file_date, 'YYYY-MM-DD') AS file_date, file_id_modifier, sha256, entry_count,
  total_debit_cents::float8 AS total_debit_cents, total_credit_cents::float8 AS total_credit_cents, settle_at, status, created_at,
  delivered_at, settled_at`;

export async function getAchFile(db: Queryable, fileId: string): Promise<AchFileRow | null> {
  const { rows } = await db.query<AchFileRow>(`SELECT ${FILE_COLUMNS} FROM ach_files WHERE id = $1`, [fileId]);
  return rows[0] ?? null;
}

/** The exact bytes built (and sent), opened from their seal. */
export async function achFileBytes(db: Queryable, config: AchFileConfig, fileId: string): Promise<Buffer | null> {
  const { rows } = await db.query<{ bytes_sealed: string }>('SELECT bytes_sealed FROM ach_files WHERE id = $1', [fileId]);
  return rows[0] ? Buffer.from(openFileText(config, rows[0].bytes_sealed, fileId), 'latin1') : null;
}

/** built → delivered, with its entries; a repeat (the file is already past built) changes nothing. */
export async function markFileDelivered(pool: Pool, fileId: string, now: Date): Promise<void> {
  await withTransaction(pool, async (tx) => {
    const { rowCount } = await tx.query(`UPDATE ach_files SET status = 'delivered', delivered_at = $2 WHERE id = $1 AND status = 'built'`, [
      fileId,
      now,
    ]);
    if (rowCount)
      await tx.query(`UPDATE ach_entries SET status = 'delivered', updated_at = $2 WHERE file_id = $1 AND status = 'in_file'`, [
        fileId,
        now,
      ]);
  });
}

/**
 * The file's entries settle (SPEC §24, "Settlement"): in one database transaction they become `settled` and
 * each payment's lifecycle gets its rail signal, queued on the one road to Temporal (docs/temporal-road.md):
 * a cash_in's confirmFunds (→ `available`), a transfer's networkSettled (its settlement workflow waits for it,
 * the sandbox rail answering 'signal' for a transfer with an entry). Answers whether this call settled it; a repeat changes nothing,
 * and a file not yet delivered is not settled.
 */
export async function settleFile(
  pool: Pool,
  drainQueue: string,
  fileId: string,
  now: Date,
): Promise<{ settled: boolean; signalled: number }> {
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx.query<{ status: string }>('SELECT status FROM ach_files WHERE id = $1 FOR UPDATE', [fileId]);
    if (rows[0]?.status !== 'delivered') return { settled: false, signalled: 0 };
    await tx.query(`UPDATE ach_files SET status = 'settled', settled_at = $2 WHERE id = $1`, [fileId, now]);
    const { rows: entries } = await tx.query<{
      transaction_id: string | null;
      direction: string | null;
      transfer_account_id: string | null;
      window_date: string | null;
    }>(
      `UPDATE ach_entries e SET status = 'settled', settled_at = $2, updated_at = $2
         FROM ach_entries e0 LEFT JOIN transactions t ON t.id = e0.transaction_id LEFT JOIN transfers tr ON tr.id = e0.transfer_id
        WHERE e.id = e0.id AND e.file_id = $1 AND e.status = 'delivered'
       RETURNING e.transaction_id, t.direction, tr.account_id AS transfer_account_id, to_char(tr.window_date, 'YYYY-MM-DD') AS window_date`,
      [fileId, now],
    );
    const confirmations = entries.filter((e) => e.transaction_id !== null && e.direction === 'cash_in').map((e) => e.transaction_id!);
    await enqueueTemporalSignals(tx, { drainQueue, now }, confirmFundsSignal.name, confirmations);
    const transfers = entries.filter((e) => e.transfer_account_id !== null);
    for (const e of transfers) {
      await enqueueTemporalCommand(tx, { drainQueue, now }, networkSettledCommand(e.transfer_account_id!, e.window_date!));
    }
    return { settled: true, signalled: confirmations.length + transfers.length };
  });
}
