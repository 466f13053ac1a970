import { accountFingerprint, openAccountNumber, sealAccountNumber } from '../bankAccounts/sealing';
import { disableBankAccount, renderBankAccount, type BankAccountRow } from '../bankAccounts/repo';
import type { Queryable } from '../db/pool';
import { insertDispute, renderDispute, resolveDispute } from '../disputes/repo';
import { recordEvent } from '../events/outbox';
import { newId } from '../ids';
import { confirmFundsSignal } from '../ledger/contract';
import { recordTransaction } from '../ledger/service';
import { enqueueTemporalCommand } from '../platform/temporalCommands';
import type { AppDeps, Op } from '../services';
import { bankName } from '../tokens/checks';
import { lockUser, updateUserStatus } from '../users/repo';
import { odfiOf } from './files';
import type { ParsedChangeAddenda, ParsedEntry, ParsedReturnAddenda } from './parse';
import { ADMINISTRATIVE_CODES, CHANGE_CODES, correctionOf, returnTitle, UNAUTHORIZED_CODES } from './returnCodes';
import { rowOf } from '../assert';

/**
 * What one returned or corrected entry does (SPEC §25), inside the file's transaction (src/ach/inbound.ts):
 * every effect and its event are written together, and the (entry, addenda type) row makes it apply once.
 */

export interface ApplyContext {
  tx: Queryable;
  deps: AppDeps;
  fileId: string;
  now: Date;
  /** The money's counters and the drainers' poke, run once the file's transaction committed. */
  afterCommits: Array<() => void>;
  /** Organizations whose debits were returned: their return rates are looked at before the file commits. */
  returnedOrganizations: Set<string>;
}

export type EntryOutcome = 'returned' | 'changed' | 'exception' | 'duplicate';

type ExceptionKind = 'unparseable_file' | 'unknown_trace' | 'foreign_odfi' | 'transfer_returned' | 'not_applicable';

export async function recordException(
  ctx: ApplyContext,
  input: {
    kind: ExceptionKind;
    line: number;
    detail: string;
    traceNumber?: string;
    code?: string;
    entryId?: string;
    organizationId?: string;
  },
): Promise<void> {
  await ctx.tx.query(
    `INSERT INTO ach_exceptions (inbound_file_id, kind, line, trace_number, code, entry_id, organization_id, detail, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      ctx.fileId,
      input.kind,
      input.line,
      input.traceNumber ?? null,
      input.code ?? null,
      input.entryId ?? null,
      input.organizationId ?? null,
      input.detail.slice(0, 500),
      ctx.now,
    ],
  );
}

interface MatchedEntry {
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

/** Our entry the addenda names by its original trace number, locked; an exception (and null) when it is not ours or unknown. */
async function matchEntry(ctx: ApplyContext, entry: ParsedEntry, traceNumber: string, code: string): Promise<MatchedEntry | null> {
  const odfi = odfiOf(ctx.deps.config);
  if (!odfi || traceNumber.slice(0, 8) !== odfi.odfiRouting.slice(0, 8)) {
    const detail = `original trace number ${traceNumber} is not of our ODFI (${odfi ? odfi.odfiRouting.slice(0, 8) : 'none configured'})`;
    await recordException(ctx, { kind: 'foreign_odfi', line: entry.line, traceNumber, code, detail });
    return null;
  }
  const { rows } = await ctx.tx.query<MatchedEntry>(
    `SELECT e.id, e.organization_id, e.status, e.sec_code, e.transaction_id, e.transfer_id, e.bank_account_id, e.amount_cents::text,
            e.trace_number, t.direction, t.type AS transaction_type, t.source_id, e.account_id
       FROM ach_entries e LEFT JOIN transactions t ON t.id = e.transaction_id
      WHERE e.trace_number = $1
      -- A trace number comes round again only after its earlier entry can no longer be returned (0044): the newest is it.
      ORDER BY e.effective_date DESC
      LIMIT 1
        FOR UPDATE OF e`,
    [traceNumber],
  );
  if (!rows[0]) {
    await recordException(ctx, {
      kind: 'unknown_trace',
      line: entry.line,
      traceNumber,
      code,
      detail: `no entry has trace number ${traceNumber}`,
    });
    return null;
  }
  return rows[0];
}

async function alreadyApplied(ctx: ApplyContext, entryId: string, addendaType: '99' | '98'): Promise<boolean> {
  const { rows } = await ctx.tx.query('SELECT 1 FROM ach_entry_returns WHERE entry_id = $1 AND addenda_type = $2', [entryId, addendaType]);
  return rows.length > 0;
}

async function recordApplied(
  ctx: ApplyContext,
  matched: MatchedEntry,
  addenda: { typeCode: '99' | '98'; code: string; trace: string; disputeId: string | null },
) {
  await ctx.tx.query(
    `INSERT INTO ach_entry_returns (entry_id, organization_id, inbound_file_id, addenda_type, code, dispute_id, return_trace, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [matched.id, matched.organization_id, ctx.fileId, addenda.typeCode, addenda.code, addenda.disputeId, addenda.trace, ctx.now],
  );
}

/** A return before its entry settled settles it first (forward only, SPEC §9): a cash_in's lifecycle gets its confirmFunds. */
async function settleFirst(ctx: ApplyContext, matched: MatchedEntry): Promise<void> {
  if (matched.status !== 'in_file' && matched.status !== 'delivered') return;
  await ctx.tx.query(`UPDATE ach_entries SET status = 'settled', settled_at = $2, updated_at = $2 WHERE id = $1`, [matched.id, ctx.now]);
  if (matched.transaction_id && matched.direction === 'cash_in') {
    const context = { drainQueue: ctx.deps.services.taskQueue, now: ctx.now };
    await enqueueTemporalCommand(ctx.tx, context, { kind: 'signal', workflowId: matched.transaction_id, signal: confirmFundsSignal.name });
  }
}

export async function applyReturn(ctx: ApplyContext, entry: ParsedEntry, addenda: ParsedReturnAddenda): Promise<EntryOutcome> {
  const code = addenda.returnReasonCode;
  const matched = await matchEntry(ctx, entry, addenda.originalTraceNumber, code);
  if (!matched) return 'exception';
  if (await alreadyApplied(ctx, matched.id, '99')) return 'duplicate';
  const where = { line: entry.line, traceNumber: matched.trace_number, code, entryId: matched.id, organizationId: matched.organization_id };
  if (matched.status === 'queued') {
    await recordException(ctx, {
      ...where,
      kind: 'not_applicable',
      detail: `entry ${matched.id} was never sent; a return of it is not ours`,
    });
    return 'exception';
  }
  await settleFirst(ctx, matched);
  await ctx.tx.query(`UPDATE ach_entries SET status = 'returned', updated_at = $2 WHERE id = $1`, [matched.id, ctx.now]);
  let disputeId: string | null = null;
  if (matched.transfer_id) {
    await recordException(ctx, {
      ...where,
      kind: 'transfer_returned',
      detail: `transfer ${matched.transfer_id} returned ${code} (${returnTitle(code)}); an operator acts`,
    });
    await event(ctx, matched.organization_id, 'ach.transfer_returned', {
      id: matched.transfer_id,
      entry_id: matched.id,
      trace_number: matched.trace_number,
      code,
      reason: returnTitle(code),
    });
  } else if (matched.direction === 'cash_in') {
    disputeId = await disputeReturnedDebit(ctx, matched, code, where);
  } else {
    // No credit to a user is originated on the rail yet (SPEC §24: cash_in debits only), so its return has no money road.
    await recordException(ctx, {
      ...where,
      kind: 'not_applicable',
      detail: `returned credit of ${matched.transaction_id}: no dispute recorded, an operator acts`,
    });
  }
  await applyCodeEffects(ctx, matched, code);
  await recordApplied(ctx, matched, { typeCode: '99', code, trace: addenda.traceNumber, disputeId });
  ctx.returnedOrganizations.add(matched.organization_id);
  await event(ctx, matched.organization_id, 'ach_entry.returned', {
    id: matched.id,
    trace_number: matched.trace_number,
    code,
    reason: returnTitle(code),
    transaction_id: matched.transaction_id,
    transfer_id: matched.transfer_id,
    dispute_id: disputeId,
  });
  return 'returned';
}

async function event(
  ctx: ApplyContext,
  organizationId: string,
  type: Parameters<typeof recordEvent>[1]['type'],
  data: unknown,
): Promise<void> {
  await recordEvent(ctx.tx, { organizationId, type, data, createdAt: ctx.now });
}

function opOf(ctx: ApplyContext, organizationId: string): Op {
  return { db: ctx.tx, organizationId, now: ctx.now, deps: ctx.deps, lifecyclePoke: { poke: () => undefined } };
}

/**
 * A returned debit (SPEC §25): a dispute of its intent, `lost`, with its cash_out `dispute` transaction, which nets
 * into the next window. What refunds already took is not taken twice: the dispute is what is left of the intent.
 */
async function disputeReturnedDebit(
  ctx: ApplyContext,
  matched: MatchedEntry,
  code: string,
  where: { line: number; entryId: string; organizationId: string },
): Promise<string | null> {
  const { rows } = await ctx.tx.query<{ left: string; disputed: boolean }>(
    `SELECT (i.amount_cents - intent_returned_cents(i.id))::text AS left, EXISTS (SELECT 1 FROM disputes d WHERE d.intent_id = i.id) AS disputed
       FROM intents i WHERE i.id = $1 FOR UPDATE`,
    [matched.source_id],
  );
  const left = Math.min(Number(rows[0]?.left ?? 0), Number(matched.amount_cents));
  if (!rows[0] || rows[0].disputed || left <= 0) {
    await recordException(ctx, {
      ...where,
      kind: 'not_applicable',
      code,
      detail: `intent ${matched.source_id} is already disputed or fully refunded: no dispute recorded`,
    });
    return null;
  }
  const op = opOf(ctx, matched.organization_id);
  const opened = await insertDispute(ctx.tx, {
    id: newId('dispute'),
    organization_id: matched.organization_id,
    intent_id: matched.source_id!,
    account_id: matched.account_id,
    amount_cents: left,
    code,
    created_at: ctx.now,
  });
  const { row, afterCommit } = await recordTransaction(op, {
    accountId: matched.account_id,
    direction: 'cash_out',
    type: 'dispute',
    sourceId: opened.id,
    amountCents: left,
  });
  ctx.afterCommits.push(afterCommit);
  const lost = await resolveDispute(ctx.tx, opened.id, 'lost', ctx.now);
  const body = { ...renderDispute(lost, [row.json]), reason: returnTitle(code) };
  await event(ctx, matched.organization_id, 'dispute.created', body);
  await event(ctx, matched.organization_id, 'dispute.resolved', body);
  return opened.id;
}

/** R02/R03/R04 disable the bank account; the unauthorized codes suspend its user (SPEC §6); the rest change nothing more. */
async function applyCodeEffects(ctx: ApplyContext, matched: MatchedEntry, code: string): Promise<void> {
  if (!matched.bank_account_id) return;
  if (ADMINISTRATIVE_CODES.has(code)) {
    const disabled = await disableBankAccount(ctx.tx, {
      bankAccountId: matched.bank_account_id,
      reason: `ACH return ${code}: ${returnTitle(code)}`,
      now: ctx.now,
    });
    if (disabled) await event(ctx, matched.organization_id, 'bank_account.disabled', renderBankAccount(disabled));
  } else if (UNAUTHORIZED_CODES.has(code)) {
    const { rows } = await ctx.tx.query<{ user_id: string }>('SELECT user_id FROM bank_accounts WHERE id = $1', [matched.bank_account_id]);
    const user = await lockUser(ctx.tx, rowOf(rows, 'an entry matched by trace number names a bank account that exists').user_id);
    // Only an enabled user can be suspended (§6); a created, suspended or disabled one stays as it is.
    if (user?.status !== 'enabled') return;
    const { organization_id: organizationId, ...before } = user;
    const updated = await updateUserStatus(ctx.tx, user.id, 'suspended', ctx.now);
    if (updated) await event(ctx, organizationId, 'user.status_changed', { ...updated, previous_status: before.status });
  }
}

export async function applyChange(ctx: ApplyContext, entry: ParsedEntry, addenda: ParsedChangeAddenda): Promise<EntryOutcome> {
  const code = addenda.changeCode;
  const matched = await matchEntry(ctx, entry, addenda.originalTraceNumber, code);
  if (!matched) return 'exception';
  if (await alreadyApplied(ctx, matched.id, '98')) return 'duplicate';
  const where = { line: entry.line, traceNumber: matched.trace_number, code, entryId: matched.id, organizationId: matched.organization_id };
  const correction = CHANGE_CODES.has(code) ? correctionOf(code, addenda.correctedData) : null;
  if (!matched.bank_account_id || !correction) {
    const why = !matched.bank_account_id
      ? "the operator's own account (CCD): `account bank-account set` corrects it"
      : `${code} is not applied or its corrected data does not read`;
    await recordException(ctx, { ...where, kind: 'not_applicable', detail: `notification of change ${code}: ${why}` });
    return 'exception';
  }
  const updated = await correctBankAccount(ctx, matched.bank_account_id, correction);
  if (!updated) {
    await recordException(ctx, {
      ...where,
      kind: 'not_applicable',
      detail: `notification of change ${code}: the corrected account is another bank account of the user`,
    });
    return 'exception';
  }
  await recordApplied(ctx, matched, { typeCode: '98', code, trace: addenda.traceNumber, disputeId: null });
  await event(ctx, matched.organization_id, 'bank_account.updated', { ...renderBankAccount(updated), change_code: code });
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
