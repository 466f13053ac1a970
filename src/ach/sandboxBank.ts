import { openBankAccounts } from '../bankAccounts/contract';
import { withTransaction } from '../db/pool';
import { errors } from '../errors';
import type { AppDeps, Op, Outcome } from '../services';
import { z } from '../zod';
import { ingestWithin } from './inbound';
import type { ParsedNachaFile } from './parse';
import { returnTitle } from './returnCodes';

/**
 * The sandbox's simulated bank returns an entry (SPEC §25, POST /simulate/ach/return): the return goes through
 * the very code a bank's file does (match by trace number, apply once, effects and events together), in the
 * request's transaction. Its "file" is the request itself, kept like any inbound file, so asking again changes
 * nothing.
 */

export const simulateAchReturnBody = z
  .object({
    transaction_id: z.string().min(1).max(100).openapi({ description: 'A transaction of yours whose ACH entry settled.' }),
    code: z
      .string()
      .regex(/^R[0-9]{2}$/, 'must be R and two digits')
      .openapi({ description: 'The NACHA return reason code, e.g. `R01`, `R03`, `R10`.', example: 'R01' }),
  })
  .strict()
  .openapi('SimulateAchReturn', { example: { transaction_id: 'txn_7fJ2kQ9xLmN3pR5tV8wY1zA4', code: 'R01' } });
export type SimulateAchReturnBody = z.infer<typeof simulateAchReturnBody>;

export const achReturnSchema = z
  .object({
    entry_id: z.string().openapi({ description: 'The ACH entry returned.' }),
    transaction_id: z.string(),
    trace_number: z.string().openapi({ example: '011000010000042' }),
    code: z.string().openapi({ example: 'R01' }),
    reason: z.string().openapi({ description: "The code's NACHA title.", example: 'Insufficient Funds' }),
    dispute_id: z.string().nullable().openapi({
      description:
        'The dispute the return became: `lost` for a returned debit (null when nothing was left of its intent), `won` for a returned credit.',
    }),
  })
  .openapi('AchReturn');
export type AchReturn = z.infer<typeof achReturnSchema>;

interface EntryRow {
  id: string;
  status: string;
  trace_number: string | null;
  transaction_code: number;
  amount_cents: string;
}

function oneReturn(entry: EntryRow & { trace_number: string }, code: string): ParsedNachaFile {
  const header = {
    immediateDestination: '',
    immediateOrigin: '',
    fileCreationDate: '',
    fileCreationTime: '',
    fileIdModifier: 'A',
    immediateDestinationName: 'SANDBOX BANK',
    immediateOriginName: '',
    referenceCode: '',
  };
  const control = { entryAddendaCount: 2, entryHash: 0, totalDebitCents: 0, totalCreditCents: Number(entry.amount_cents) };
  const parsedEntry = {
    line: 3,
    transactionCode: entry.transaction_code - 1,
    rdfiRouting: '',
    accountNumber: '',
    amountCents: Number(entry.amount_cents),
    individualIdentification: '',
    individualName: '',
    discretionaryData: '',
    traceNumber: entry.trace_number,
    addenda: [
      {
        typeCode: '99' as const,
        returnReasonCode: code,
        originalTraceNumber: entry.trace_number,
        dateOfDeath: '',
        originalRdfi: '',
        addendaInformation: 'SANDBOX',
        traceNumber: entry.trace_number,
      },
    ],
  };
  const batchHeader = {
    serviceClassCode: 200,
    companyName: '',
    companyDiscretionaryData: '',
    companyIdentification: '',
    secCode: 'PPD',
    companyEntryDescription: 'RETURN',
    companyDescriptiveDate: '',
    effectiveEntryDate: '',
    settlementDate: '',
    originatorStatusCode: '1',
    odfiIdentification: '',
    batchNumber: 1,
  };
  return {
    header,
    batches: [{ header: batchHeader, entries: [parsedEntry], control }],
    control: { ...control, batchCount: 1, blockCount: 1 },
  };
}

export async function simulateAchReturn(op: Op, body: SimulateAchReturnBody): Promise<Outcome<AchReturn>> {
  const { rows } = await op.db.query<EntryRow>(
    `SELECT e.id, e.status, e.trace_number, e.transaction_code, e.amount_cents::text FROM ach_entries e
      WHERE e.transaction_id = $1 AND e.organization_id = $2 FOR UPDATE`,
    [body.transaction_id, op.organizationId],
  );
  const entry = rows[0];
  if (!entry) throw errors.notFound('transaction', body.transaction_id);
  if (entry.status !== 'settled' || !entry.trace_number) {
    throw errors.invalidState(`The ACH entry of ${body.transaction_id} is ${entry.status}; only a settled entry can be returned.`);
  }
  const afterCommits: Array<() => void> = [];
  const bytes = Buffer.from(JSON.stringify({ simulated_return: { entry_id: entry.id, code: body.code } }));
  const result = await ingestWithin(op.db, op.deps, afterCommits, {
    fileName: `SANDBOX-RETURN-${entry.id}-${body.code}`,
    bytes,
    source: 'sandbox',
    now: op.now,
    parsed: oneReturn({ ...entry, trace_number: entry.trace_number }, body.code),
  });
  if (result.file.returns_count !== 1)
    throw errors.invalidState(`The ACH entry of ${body.transaction_id} was not returned (${result.outcome}).`);
  const { rows: applied } = await op.db.query<{ dispute_id: string | null }>(
    `SELECT dispute_id FROM ach_entry_returns WHERE entry_id = $1 AND addenda_type = '99'`,
    [entry.id],
  );
  return {
    body: {
      entry_id: entry.id,
      transaction_id: body.transaction_id,
      trace_number: entry.trace_number,
      code: body.code,
      reason: returnTitle(body.code),
      dispute_id: applied[0]!.dispute_id,
    },
    afterCommit: () => afterCommits.forEach((run) => run()),
  };
}

/** Entries the simulated bank looks at per sweep; the rest wait for the next. */
export const SANDBOX_BANK_LIMITS = { entriesPerSweepMax: 500 } as const;

function oneChange(entry: EntryRow & { trace_number: string }, code: string, correctedData: string): ParsedNachaFile {
  const file = oneReturn(entry, code);
  const parsedEntry = file.batches[0]!.entries[0]!;
  parsedEntry.addenda = [
    {
      typeCode: '98',
      changeCode: code,
      originalTraceNumber: entry.trace_number,
      originalRdfi: '',
      correctedData: correctedData.padEnd(29),
      traceNumber: entry.trace_number,
    },
  ];
  return file;
}

/**
 * The simulated bank's answers to what it was sent (SPEC §25): each sandbox entry settled at least
 * SANDBOX_RETURN_SECONDS ago is looked at once; an account number `R` + two digits is returned with that code,
 * `C` + two digits gets that notification of change (the corrected account number: the rest of the number).
 */
export async function sweepSandboxBank(deps: AppDeps, now: Date): Promise<{ returned: number; changed: number }> {
  const afterCommits: Array<() => void> = [];
  const outcome = await withTransaction(deps.pool, async (tx) => {
    const { rows } = await tx.query<EntryRow & { bank_account_id: string; trace_number: string }>(
      `SELECT e.id, e.status, e.trace_number, e.transaction_code, e.amount_cents::text, e.bank_account_id FROM ach_entries e
        WHERE e.environment = 'sandbox' AND e.status = 'settled' AND e.sec_code = 'PPD' AND e.settled_at <= $1
          AND NOT EXISTS (SELECT 1 FROM ach_sandbox_bank_seen s WHERE s.entry_id = e.id)
        ORDER BY e.settled_at LIMIT $2 FOR UPDATE OF e SKIP LOCKED`,
      [new Date(now.getTime() - deps.config.SANDBOX_RETURN_SECONDS * 1000), SANDBOX_BANK_LIMITS.entriesPerSweepMax],
    );
    if (rows.length === 0) return { returned: 0, changed: 0 };
    await tx.query('INSERT INTO ach_sandbox_bank_seen (entry_id, seen_at) SELECT unnest($1::text[]), $2', [rows.map((r) => r.id), now]);
    const accounts = await openBankAccounts(
      tx,
      deps.config,
      rows.map((r) => r.bank_account_id),
    );
    let returned = 0;
    let changed = 0;
    for (const entry of rows) {
      const number = accounts.get(entry.bank_account_id)?.account_number ?? '';
      const code = /^[RC][0-9]{2}/.exec(number)?.[0];
      if (!code) continue;
      const parsed = code.startsWith('R') ? oneReturn(entry, code) : oneChange(entry, code, number.slice(3));
      const bytes = Buffer.from(JSON.stringify({ simulated: { entry_id: entry.id, code } }));
      const result = await ingestWithin(tx, deps, afterCommits, {
        fileName: `SANDBOX-${code}-${entry.id}`,
        bytes,
        source: 'sandbox',
        now,
        parsed,
      });
      returned += result.file.returns_count;
      changed += result.file.changes_count;
    }
    return { returned, changed };
  });
  for (const run of afterCommits) run();
  return outcome;
}
