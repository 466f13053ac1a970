import { accountFingerprint, openAccountNumber, sealAccountNumber } from '../bankAccounts/contract';
import { renderBankAccount, type BankAccountRow } from '../bankAccounts/contract';
import type { Queryable } from '../db/pool';
import { eventsParam, insertEventsSql, type EventType, type PendingEvent } from '../outbox';
import type { AppDeps, Op } from '../services';
import { bankName } from '../tokens/contract';
import { odfiOf } from './files';
import type { ParsedChangeAddenda, ParsedEntry } from './parse';
import { CHANGE_CODES, correctionOf } from './returnCodes';
import { rowOf } from '../assert';

/**
 * What a returned or corrected entry does (SPEC §25), inside the file's transaction (src/ach/inbound.ts): every
 * effect and its event are written together, and the (entry, addenda type) row makes it apply once. The file's
 * returns are applied set-based (returnsBatch.ts); here are the context, the buffered writes and the matching it
 * uses, and a notification of change, applied one at a time in file order.
 */

/** The steps of one entry, in the order its writes happened when each entry was applied alone. */
export const STEP = { money: 0, effects: 1, returned: 2 } as const;

/** Where a buffered write belongs: its entry's place in the file (slot), and the step within the entry. */
export interface Place {
  slot: number;
  step: number;
}

type ExceptionKind = 'unparseable_file' | 'unknown_trace' | 'foreign_odfi' | 'transfer_returned' | 'not_applicable';

interface ExceptionInput {
  kind: ExceptionKind;
  line: number;
  detail: string;
  traceNumber?: string;
  code?: string;
  entryId?: string;
  organizationId?: string;
}

interface AppliedRow {
  entryId: string;
  organizationId: string;
  typeCode: '99' | '98';
  code: string;
  trace: string;
  disputeId: string | null;
}

export interface ApplyContext {
  tx: Queryable;
  deps: AppDeps;
  fileId: string;
  now: Date;
  /** The money's counters and the drainers' poke, run once the file's transaction committed. */
  afterCommits: Array<() => void>;
  /** Organizations whose debits were returned: their return rates are looked at before the file commits. */
  returnedOrganizations: Set<string>;
  /**
   * The file's entries, locked, by original trace number, and the (entry, addenda type) rows already applied:
   * read once per file (prefetchEntries), not per entry. A file of 10,000 returns asked 2 × 10,000 questions.
   */
  entries: Map<string, MatchedEntry>;
  applied: Set<string>;
  /** Where the writes buffered now belong; set by whoever applies an entry's step. */
  at: Place;
  /**
   * Events, exceptions and applied rows, written in one statement each by flushWrites, in file order (by Place,
   * then as buffered): the order they had when the file's entries were applied one after the other.
   */
  events: Array<Place & PendingEvent>;
  exceptions: Array<Place & ExceptionInput>;
  appliedRows: Array<Place & AppliedRow>;
}

/** An ApplyContext for one file, its prefetched state empty (prefetchEntries fills it). */
export function applyContext(input: Pick<ApplyContext, 'tx' | 'deps' | 'fileId' | 'now' | 'afterCommits'>): ApplyContext {
  return {
    ...input,
    returnedOrganizations: new Set(),
    entries: new Map(),
    applied: new Set(),
    at: { slot: 0, step: STEP.money },
    events: [],
    exceptions: [],
    appliedRows: [],
  };
}

export type EntryOutcome = 'returned' | 'changed' | 'exception' | 'duplicate';

/** An exception of the file, at `place` (by default where the context is): written by flushWrites. */
export function recordException(ctx: ApplyContext, input: ExceptionInput, place: Place = ctx.at): void {
  ctx.exceptions.push({ ...place, ...input });
}

/** An event of an effect, at `place` (by default where the context is): written by flushWrites. */
export function recordEvent(ctx: ApplyContext, organizationId: string, type: EventType, data: unknown, place: Place = ctx.at): void {
  ctx.events.push({ ...place, organizationId, type, data });
}

export interface MatchedEntry {
  id: string;
  organization_id: string;
  status: string;
  sec_code: 'PPD' | 'CCD';
  transaction_id: string | null;
  transfer_id: string | null;
  bank_account_id: string | null;
  amount_cents: string;
  trace_number: string;
  direction: 'cash_in' | 'cash_out' | null;
  transaction_type: string | null;
  source_id: string | null;
  account_id: string;
}

/**
 * Every entry the file names by original trace number, locked (in trace order, so two files naming the same
 * entries cannot deadlock), and which of them already had a return or change applied: one query each per file.
 */
export async function prefetchEntries(ctx: ApplyContext, traceNumbers: readonly string[]): Promise<void> {
  const { rows } = await ctx.tx.query<MatchedEntry>(
    `SELECT e.id, e.organization_id, e.status, e.sec_code, e.transaction_id, e.transfer_id, e.bank_account_id, e.amount_cents::text,
            e.trace_number, t.direction, t.type AS transaction_type, t.source_id, e.account_id
       FROM ach_entries e LEFT JOIN transactions t ON t.id = e.transaction_id
      WHERE e.trace_number = ANY($1::text[])
      -- A trace number comes round again only after its earlier entry can no longer be returned (0044): the
      -- newest holder is the one returned, and it is read last, so it is the one kept below.
      ORDER BY e.trace_number, e.effective_date, e.id
        FOR UPDATE OF e`,
    [[...new Set(traceNumbers)]],
  );
  for (const row of rows) ctx.entries.set(row.trace_number, row);
  const { rows: applied } = await ctx.tx.query<{ entry_id: string; addenda_type: string }>(
    'SELECT entry_id, addenda_type FROM ach_entry_returns WHERE entry_id = ANY($1::text[])',
    [rows.map((row) => row.id)],
  );
  for (const row of applied) ctx.applied.add(`${row.entry_id}/${row.addenda_type}`);
}

/** Rows in file order: by slot, then step; rows of one place as they were buffered (the sort is stable). */
const inFileOrder = <T extends Place>(rows: readonly T[]): T[] => [...rows].sort((a, b) => a.slot - b.slot || a.step - b.step);

/**
 * The buffered applied rows, exceptions and events, each kind in one statement and in file order; the file's
 * transaction holds them with their effects. The applied rows' trigger counts the returns (0042).
 */
export async function flushWrites(ctx: ApplyContext): Promise<void> {
  const applied = inFileOrder(ctx.appliedRows);
  if (applied.length > 0) {
    await ctx.tx.query(
      `INSERT INTO ach_entry_returns (entry_id, organization_id, inbound_file_id, addenda_type, code, dispute_id, return_trace, created_at)
       SELECT entry_id, organization_id, $7, addenda_type, code, dispute_id, return_trace, $8
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) WITH ORDINALITY
              AS r (entry_id, organization_id, addenda_type, code, dispute_id, return_trace, ord)
        ORDER BY ord`,
      [
        applied.map((r) => r.entryId),
        applied.map((r) => r.organizationId),
        applied.map((r) => r.typeCode),
        applied.map((r) => r.code),
        applied.map((r) => r.disputeId),
        applied.map((r) => r.trace),
        ctx.fileId,
        ctx.now,
      ],
    );
  }
  await flushExceptions(ctx);
  const events = inFileOrder(ctx.events);
  if (events.length > 0) {
    await ctx.tx.query(insertEventsSql('$1', '$2'), [eventsParam(events), ctx.now]);
  }
  ctx.appliedRows.length = 0;
  ctx.events.length = 0;
}

async function flushExceptions(ctx: ApplyContext): Promise<void> {
  const exceptions = inFileOrder(ctx.exceptions);
  ctx.exceptions.length = 0;
  if (exceptions.length === 0) return;
  await ctx.tx.query(
    `INSERT INTO ach_exceptions (inbound_file_id, kind, line, trace_number, code, entry_id, organization_id, detail, created_at)
     SELECT $1, kind, line, trace_number, code, entry_id, organization_id, detail, $2
       FROM unnest($3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[]) WITH ORDINALITY
            AS x (kind, line, trace_number, code, entry_id, organization_id, detail, ord)
      ORDER BY ord`,
    [
      ctx.fileId,
      ctx.now,
      exceptions.map((x) => x.kind),
      exceptions.map((x) => x.line),
      exceptions.map((x) => x.traceNumber ?? null),
      exceptions.map((x) => x.code ?? null),
      exceptions.map((x) => x.entryId ?? null),
      exceptions.map((x) => x.organizationId ?? null),
      exceptions.map((x) => x.detail.slice(0, 500)),
    ],
  );
}

/** Our entry the addenda names by its original trace number (prefetched, locked); an exception (and null) when it is not ours or unknown. */
export function matchEntry(ctx: ApplyContext, entry: ParsedEntry, traceNumber: string, code: string): MatchedEntry | null {
  const odfi = odfiOf(ctx.deps.config);
  if (!odfi || traceNumber.slice(0, 8) !== odfi.odfiRouting.slice(0, 8)) {
    const detail = `original trace number ${traceNumber} is not of our ODFI (${odfi ? odfi.odfiRouting.slice(0, 8) : 'none configured'})`;
    recordException(ctx, { kind: 'foreign_odfi', line: entry.line, traceNumber, code, detail });
    return null;
  }
  const found = ctx.entries.get(traceNumber);
  if (!found) {
    recordException(ctx, {
      kind: 'unknown_trace',
      line: entry.line,
      traceNumber,
      code,
      detail: `no entry has trace number ${traceNumber}`,
    });
    return null;
  }
  return found;
}

export function alreadyApplied(ctx: ApplyContext, entryId: string, addendaType: '99' | '98'): boolean {
  return ctx.applied.has(`${entryId}/${addendaType}`);
}

/** The (entry, addenda type) row that makes the return or change apply once: applied now, written by flushWrites. */
export function recordApplied(
  ctx: ApplyContext,
  matched: MatchedEntry,
  addenda: { typeCode: '99' | '98'; code: string; trace: string; disputeId: string | null },
  place: Place = ctx.at,
): void {
  ctx.appliedRows.push({ ...place, entryId: matched.id, organizationId: matched.organization_id, ...addenda });
  ctx.applied.add(`${matched.id}/${addenda.typeCode}`);
}

export function opOf(ctx: ApplyContext, organizationId: string): Op {
  return { db: ctx.tx, organizationId, now: ctx.now, deps: ctx.deps, lifecyclePoke: { poke: () => undefined } };
}

export async function applyChange(ctx: ApplyContext, entry: ParsedEntry, addenda: ParsedChangeAddenda): Promise<EntryOutcome> {
  const code = addenda.changeCode;
  const matched = matchEntry(ctx, entry, addenda.originalTraceNumber, code);
  if (!matched) return 'exception';
  if (alreadyApplied(ctx, matched.id, '98')) return 'duplicate';
  const where = { line: entry.line, traceNumber: matched.trace_number, code, entryId: matched.id, organizationId: matched.organization_id };
  const correction = CHANGE_CODES.has(code) ? correctionOf(code, addenda.correctedData) : null;
  if (!matched.bank_account_id || !correction) {
    const why = !matched.bank_account_id
      ? "the operator's own account (CCD): `account bank-account set` corrects it"
      : `${code} is not applied or its corrected data does not read`;
    recordException(ctx, { ...where, kind: 'not_applicable', detail: `notification of change ${code}: ${why}` });
    return 'exception';
  }
  const updated = await correctBankAccount(ctx, matched.bank_account_id, correction);
  if (!updated) {
    recordException(ctx, {
      ...where,
      kind: 'not_applicable',
      detail: `notification of change ${code}: the corrected account is another bank account of the user`,
    });
    return 'exception';
  }
  recordApplied(ctx, matched, { typeCode: '98', code, trace: addenda.traceNumber, disputeId: null });
  recordEvent(ctx, matched.organization_id, 'bank_account.updated', { ...renderBankAccount(updated), change_code: code });
  return 'changed';
}

/** The sealed bank account corrected in place (number resealed to its row, fingerprint recomputed); null when that collides with another. */
async function correctBankAccount(
  ctx: ApplyContext,
  bankAccountId: string,
  correction: ReturnType<typeof correctionOf> & object,
): Promise<BankAccountRow | null> {
  const { rows } = await ctx.tx.query<{ routing_number: string; account_type: string; account_number_sealed: string; user_id: string }>(
    'SELECT routing_number, account_type, account_number_sealed, user_id FROM bank_accounts WHERE id = $1 FOR UPDATE',
    [bankAccountId],
  );
  const binding = { table: 'bank_accounts' as const, id: bankAccountId };
  const current = rowOf(rows, 'a bank account an entry names exists (bank accounts are never deleted)');
  const routing = correction.routingNumber ?? current.routing_number;
  const number = correction.accountNumber ?? openAccountNumber(ctx.deps.config, current.account_number_sealed, binding);
  const fingerprint = accountFingerprint(ctx.deps.config, routing, number);
  const { rows: clash } = await ctx.tx.query('SELECT 1 FROM bank_accounts WHERE user_id = $1 AND account_fingerprint = $2 AND id <> $3', [
    current.user_id,
    fingerprint,
    bankAccountId,
  ]);
  if (clash.length > 0) return null;
  const { rows: updated } = await ctx.tx.query<BankAccountRow>(
    `UPDATE bank_accounts SET routing_number = $2, bank_name = $3, last4 = $4, account_type = $5, account_number_sealed = $6, account_fingerprint = $7, updated_at = $8
      WHERE id = $1 RETURNING id, organization_id, user_id, routing_number, bank_name, last4, account_type, status, disabled_reason, created_at`,
    [
      bankAccountId,
      routing,
      bankName(routing),
      number.slice(-4),
      correction.accountType ?? current.account_type,
      sealAccountNumber(ctx.deps.config, number, binding),
      fingerprint,
      ctx.now,
    ],
  );
  return updated[0]!;
}
