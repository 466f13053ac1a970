import { disableBankAccounts, renderBankAccount } from '../bankAccounts/contract';
import { insertDisputes, renderDispute, type NewDispute } from '../disputes/contract';
import { newId } from '../ids';
import { confirmFundsSignal, recordTransactions, type TransactionRow } from '../ledger/contract';
import { adjustLimitUses } from '../limits/contract';
import { enqueueTemporalSignals } from '../platform/temporalCommands';
import { injectedBug } from '../simBugs';
import { lockUsers, updateUsersStatus } from '../users/contract';
import { assert } from '../assert';
import type { ParsedChangeAddenda, ParsedEntry, ParsedReturnAddenda } from './parse';
import { ADMINISTRATIVE_CODES, returnTitle, UNAUTHORIZED_CODES } from './returnCodes';
import {
  alreadyApplied,
  applyChange,
  matchEntry,
  opOf,
  recordApplied,
  recordEvent,
  recordException,
  STEP,
  type ApplyContext,
  type EntryOutcome,
  type MatchedEntry,
} from './returnsApply';

/**
 * A file's entries applied set-based (SPEC §25, docs/ach-returns.md "Applying a file"): a fixed number of
 * statements per file, not ten round trips per return. In order:
 *   1. each entry classified in memory, in file order: no addenda, another ODFI's or an unknown trace, a return
 *      already applied (in an earlier file or earlier in this one), an entry never sent: exceptions or duplicates;
 *   2. every returned entry `returned` (settled first when it was not: forward only, §9) in one UPDATE, and the
 *      confirmFunds of each unsettled deposit queued in one INSERT;
 *   3. the intents of the returned payments locked in one statement (ORDER BY id FOR UPDATE), what is left of the
 *      returned debits' intents read after the lock;
 *   4. the money: the limit uses given back (one UPDATE), every dispute (one INSERT, its guards are row
 *      triggers), every dispute transaction (one recordTransactions per organization);
 *   5. the code effects: R02–R04's bank accounts disabled (one UPDATE), the unauthorized codes' users suspended
 *      (one lock, one UPDATE);
 *   6. what must go one at a time, in file order: the notifications of change (returnsApply.ts applyChange), a
 *      disable of a bank account one of them corrects, and the money of the returns whose intent, or whose user's
 *      limit use in the other sign, another return of the file touches (their order decides the amounts) — the
 *      last two by the same functions as steps 4 and 5, on one item at a time;
 *   7. the applied rows, the exceptions and the events, one INSERT each (flushWrites), in file order.
 * What one entry changes, and the events it emits, are those it changed and emitted when the entries were applied
 * one after the other: effects of different entries commute except where step 6 keeps their order.
 */

interface LockedIntent {
  id: string;
  user_id: string;
  created_at: Date;
  direction: 'cash_in' | 'cash_out';
  /** A returned debit's intent: what refunds and disputes left of it, and whether it has a dispute of its own. */
  left?: number;
  disputed?: boolean;
}

interface ReturnItem {
  slot: number;
  line: number;
  code: string;
  /** The bank's trace number of the return entry itself. */
  trace: string;
  matched: MatchedEntry;
  /** A CCD entry of a transfer, a PPD debit of a deposit, or a PPD credit of a withdrawal or refund. */
  kind: 'transfer' | 'debit' | 'credit';
  intent: LockedIntent | null;
  /** Its money applied alone, in file order (step 6). */
  oneByOne: boolean;
  /** Its bank account's disable applied alone, in file order (step 6). */
  effectsInOrder: boolean;
  disputeId: string | null;
}

interface ChangeItem {
  slot: number;
  entry: ParsedEntry;
  addenda: ParsedChangeAddenda;
}

interface Plan {
  outcomes: EntryOutcome[];
  returns: ReturnItem[];
  changes: ChangeItem[];
}

/** Every entry of the file, in file order, applied or kept as an exception: each one's outcome. */
export async function applyEntries(ctx: ApplyContext, entries: readonly ParsedEntry[]): Promise<EntryOutcome[]> {
  const plan = classify(ctx, entries);
  await markReturned(ctx, plan.returns);
  await lockIntents(ctx, plan.returns);
  await readDebitIntents(
    ctx,
    plan.returns.filter((item) => item.kind === 'debit' && !item.oneByOne),
  );
  await applyMoney(
    ctx,
    plan.returns.filter((item) => !item.oneByOne),
  );
  await applyEffects(ctx, plan);
  await applyInOrder(ctx, plan);
  for (const item of plan.returns) {
    const place = { slot: item.slot, step: STEP.returned };
    recordApplied(ctx, item.matched, { typeCode: '99', code: item.code, trace: item.trace, disputeId: item.disputeId }, place);
    recordEvent(
      ctx,
      item.matched.organization_id,
      'ach_entry.returned',
      {
        id: item.matched.id,
        trace_number: item.matched.trace_number,
        code: item.code,
        reason: returnTitle(item.code),
        transaction_id: item.matched.transaction_id,
        transfer_id: item.matched.transfer_id,
        dispute_id: item.disputeId,
      },
      place,
    );
  }
  return plan.outcomes;
}

/** Step 1: what each entry is, from the prefetched entries and applied rows alone. */
function classify(ctx: ApplyContext, entries: readonly ParsedEntry[]): Plan {
  const plan: Plan = { outcomes: [], returns: [], changes: [] };
  entries.forEach((entry, slot) => {
    ctx.at = { slot, step: STEP.money };
    const addenda = entry.addenda.find((a) => a.typeCode === '99' || a.typeCode === '98');
    if (!addenda || (addenda.typeCode !== '99' && addenda.typeCode !== '98')) {
      recordException(ctx, { kind: 'not_applicable', line: entry.line, detail: 'the entry carries no return (99) or change (98) addenda' });
      plan.outcomes.push('exception');
    } else if (addenda.typeCode === '98') {
      // Applied in step 6, where its outcome is set.
      plan.changes.push({ slot, entry, addenda });
      plan.outcomes.push('changed');
    } else {
      const item = classifyReturn(ctx, entry, addenda, slot);
      if (typeof item === 'string') plan.outcomes.push(item);
      else {
        plan.returns.push(item);
        plan.outcomes.push('returned');
      }
    }
  });
  return plan;
}

function classifyReturn(ctx: ApplyContext, entry: ParsedEntry, addenda: ParsedReturnAddenda, slot: number): ReturnItem | EntryOutcome {
  const code = addenda.returnReasonCode;
  const matched = matchEntry(ctx, entry, addenda.originalTraceNumber, code);
  if (!matched) return 'exception';
  if (alreadyApplied(ctx, matched.id, '99')) return 'duplicate';
  if (matched.status === 'queued') {
    recordException(ctx, {
      ...whereOf(matched, entry.line, code),
      kind: 'not_applicable',
      detail: `entry ${matched.id} was never sent; a return of it is not ours`,
    });
    return 'exception';
  }
  // Applied from here on: a second return of the entry later in the file is a duplicate.
  ctx.applied.add(`${matched.id}/99`);
  ctx.returnedOrganizations.add(matched.organization_id);
  const kind = matched.transfer_id ? 'transfer' : matched.direction === 'cash_in' ? 'debit' : 'credit';
  return {
    slot,
    line: entry.line,
    code,
    trace: addenda.traceNumber,
    matched,
    kind,
    intent: null,
    oneByOne: false,
    effectsInOrder: false,
    disputeId: null,
  };
}

const whereOf = (matched: MatchedEntry, line: number, code: string) => ({
  line,
  traceNumber: matched.trace_number,
  code,
  entryId: matched.id,
  organizationId: matched.organization_id,
});

/**
 * Step 2: every returned entry `returned`; one not yet settled is settled in the same update (forward only, SPEC
 * §9), and a deposit's lifecycle gets its confirmFunds (queued in file order).
 */
async function markReturned(ctx: ApplyContext, returns: readonly ReturnItem[]): Promise<void> {
  if (returns.length === 0) return;
  await ctx.tx.query(
    `UPDATE ach_entries SET status = 'returned', settled_at = coalesce(settled_at, $2), updated_at = $2 WHERE id = ANY($1::text[])`,
    [returns.map((item) => item.matched.id), ctx.now],
  );
  const unsettledDeposits = returns
    .map((item) => item.matched)
    .filter((m) => (m.status === 'in_file' || m.status === 'delivered') && m.transaction_id && m.direction === 'cash_in');
  await enqueueTemporalSignals(
    ctx.tx,
    { drainQueue: ctx.deps.services.taskQueue, now: ctx.now },
    confirmFundsSignal.name,
    unsettledDeposits.map((m) => m.transaction_id!),
  );
}

/**
 * Step 3: the intents of the returned payments (a debit's own; the cash_out or refunded intent a credit paid),
 * locked in id order, so two writers of overlapping intents cannot deadlock. Then the returns that must go one
 * at a time: two of one intent (what a credit gives back changes what a later debit return takes), or a user's
 * limit use both given back and taken again (a counter stops at zero, so the order decides what it ends at).
 */
async function lockIntents(ctx: ApplyContext, returns: readonly ReturnItem[]): Promise<void> {
  const payments = returns.filter((item) => item.kind !== 'transfer');
  if (payments.length === 0) return;
  const { rows } = await ctx.tx.query<LockedIntent & { entry_id: string }>(
    `SELECT e.id AS entry_id, i.id, i.user_id, i.created_at, i.direction
       FROM ach_entries e JOIN transactions t ON t.id = e.transaction_id
       LEFT JOIN refunds r ON t.type = 'refund' AND r.id = t.source_id
       JOIN intents i ON i.id = CASE t.type WHEN 'intent' THEN t.source_id ELSE r.intent_id END
      WHERE e.id = ANY($1::text[])
      ORDER BY i.id FOR UPDATE OF i`,
    [payments.map((item) => item.matched.id)],
  );
  const byEntry = new Map(rows.map(({ entry_id: entryId, ...intent }) => [entryId, intent]));
  for (const item of payments) {
    item.intent = byEntry.get(item.matched.id) ?? null;
    if (item.kind === 'credit') assert(item.intent, 'a PPD credit pays a cash_out intent or a refund of an intent');
  }
  const located = payments.filter((item) => item.intent);
  const perIntent = countBy(located, (item) => item.intent!.id);
  const signs = new Map<string, Set<number>>();
  for (const item of located) {
    const use = limitUseOf(item);
    signs.set(use.key, (signs.get(use.key) ?? new Set()).add(use.sign));
  }
  for (const item of payments) {
    if (!item.intent) continue;
    item.oneByOne = perIntent.get(item.intent.id)! > 1 || signs.get(limitUseOf(item).key)!.size > 1;
  }
}

function countBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(keyOf(item), (counts.get(keyOf(item)) ?? 0) + 1);
  return counts;
}

/**
 * The limit use a return moves (SPEC §26): a returned debit gives back its deposit's use; a returned credit gives
 * back a withdrawal's, or takes back the deposit use its refund gave back.
 */
function limitUseOf(item: ReturnItem): { key: string; sign: number; direction: 'cash_in' | 'cash_out' } {
  const intent = item.intent!;
  const direction = item.kind === 'debit' ? 'cash_in' : intent.direction;
  const sign = item.kind === 'debit' || intent.direction === 'cash_out' ? -1 : 1;
  return { key: `${intent.user_id}/${direction}`, sign, direction };
}

/** What is left of each returned debit's (locked) intent, read after the lock, and whether it has a dispute of its own. */
async function readDebitIntents(ctx: ApplyContext, debits: readonly ReturnItem[]): Promise<void> {
  const located = debits.filter((item) => item.intent);
  if (located.length === 0) return;
  const { rows } = await ctx.tx.query<{ id: string; left: string; disputed: boolean }>(
    `SELECT i.id, (i.amount_cents - intent_returned_cents(i.id))::text AS left,
            EXISTS (SELECT 1 FROM disputes d WHERE d.intent_id = i.id AND NOT d.returns_credit) AS disputed
       FROM intents i WHERE i.id = ANY($1::text[])`,
    [located.map((item) => item.intent!.id)],
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  for (const item of located) {
    const read = byId.get(item.intent!.id)!;
    item.intent = { ...item.intent!, left: Number(read.left), disputed: read.disputed };
  }
}

interface PlannedDispute {
  item: ReturnItem;
  row: NewDispute;
  direction: 'cash_in' | 'cash_out';
}

/**
 * Step 4. A returned debit: a dispute of its intent, `lost`, with its cash_out `dispute` transaction (netted into
 * the next window); what refunds already took is not taken twice. A returned credit: a dispute `won` at birth with
 * one cash_in `dispute` transaction (0045). A returned transfer: an exception and an event; an operator acts.
 * The limit uses go back first, as they did one entry at a time.
 */
async function applyMoney(ctx: ApplyContext, returns: readonly ReturnItem[]): Promise<void> {
  const planned: PlannedDispute[] = [];
  const uses: Parameters<typeof adjustLimitUses>[1][number][] = [];
  for (const item of returns) {
    ctx.at = { slot: item.slot, step: STEP.money };
    if (item.kind === 'transfer') {
      returnedTransfer(ctx, item);
      continue;
    }
    const dispute = plannedDispute(ctx, item);
    if (!dispute) continue;
    const intent = item.intent!;
    const deltaCents = limitUseOf(item).sign * dispute.row.amount_cents;
    uses.push({ userId: intent.user_id, direction: limitUseOf(item).direction, deltaCents, approvedAt: intent.created_at });
    planned.push(dispute);
  }
  await adjustLimitUses(ctx.tx, uses);
  const disputes = await insertDisputes(
    ctx.tx,
    planned.map((p) => p.row),
  );
  const transactions = await recordDisputeTransactions(ctx, planned);
  planned.forEach(({ item }, i) => {
    const dispute = disputes[i]!;
    item.disputeId = dispute.id;
    const body = renderDispute(dispute, [transactions.get(dispute.id)!.json]);
    const place = { slot: item.slot, step: STEP.money };
    recordEvent(ctx, item.matched.organization_id, 'dispute.created', body, place);
    recordEvent(ctx, item.matched.organization_id, 'dispute.resolved', body, place);
  });
}

function returnedTransfer(ctx: ApplyContext, item: ReturnItem): void {
  const { matched, code } = item;
  recordException(ctx, {
    ...whereOf(matched, item.line, code),
    kind: 'transfer_returned',
    detail: `transfer ${matched.transfer_id} returned ${code} (${returnTitle(code)}); an operator acts`,
  });
  recordEvent(ctx, matched.organization_id, 'ach.transfer_returned', {
    id: matched.transfer_id,
    entry_id: matched.id,
    trace_number: matched.trace_number,
    code,
    reason: returnTitle(code),
  });
}

/** The dispute a return makes, decided at birth; null (and an exception) for a debit whose intent has nothing left to return. */
function plannedDispute(ctx: ApplyContext, item: ReturnItem): PlannedDispute | null {
  const { matched, code } = item;
  const intent = item.intent;
  const base = {
    id: newId('dispute'),
    organization_id: matched.organization_id,
    account_id: matched.account_id,
    code,
    created_at: ctx.now,
  };
  if (item.kind === 'credit') {
    const row = {
      ...base,
      intent_id: intent!.id,
      amount_cents: Number(matched.amount_cents),
      ach_entry_id: matched.id,
      returns_credit: true,
    };
    return { item, row: { ...row, resolved: { status: 'won', at: ctx.now } }, direction: 'cash_in' };
  }
  const left = Math.min(intent?.left ?? 0, Number(matched.amount_cents));
  if (!intent || intent.disputed || left <= 0) {
    recordException(ctx, {
      ...whereOf(matched, item.line, code),
      kind: 'not_applicable',
      detail: `intent ${matched.source_id} is already disputed or fully refunded: no dispute recorded`,
    });
    return null;
  }
  const row = { ...base, intent_id: matched.source_id!, amount_cents: left, ach_entry_id: matched.id };
  return { item, row: { ...row, resolved: { status: 'lost', at: ctx.now } }, direction: 'cash_out' };
}

/** Every dispute's transaction, one recordTransactions per organization (in file order); the first of each dispute by its id. */
async function recordDisputeTransactions(ctx: ApplyContext, planned: readonly PlannedDispute[]): Promise<Map<string, TransactionRow>> {
  const byOrganization = new Map<string, PlannedDispute[]>();
  for (const p of planned) {
    const ofOrganization = byOrganization.get(p.row.organization_id);
    if (ofOrganization) ofOrganization.push(p);
    else byOrganization.set(p.row.organization_id, [p]);
  }
  const first = new Map<string, TransactionRow>();
  for (const [organizationId, ofOrganization] of byOrganization) {
    const inputs = ofOrganization.flatMap((p) => {
      const input = {
        accountId: p.row.account_id,
        direction: p.direction,
        type: 'dispute' as const,
        sourceId: p.row.id,
        amountCents: p.row.amount_cents,
      };
      // Negative control (src/simBugs.ts): a returned debit's money applied twice.
      return p.direction === 'cash_out' && injectedBug('double_return') ? [input, input] : [input];
    });
    const { rows, afterCommit } = await recordTransactions(opOf(ctx, organizationId), inputs);
    ctx.afterCommits.push(afterCommit);
    for (const row of rows) if (!first.has(row.source_id!)) first.set(row.source_id!, row);
  }
  return first;
}

/**
 * Step 5: R02/R03/R04 disable the bank account, the unauthorized codes suspend its user (SPEC §6); each event at
 * the first return of the file that changed it (a later one finds it changed already, as it did one at a time).
 * A disable of a bank account a notification of change of the file corrects waits for step 6, in file order: the
 * events render the account as it was at that point.
 */
async function applyEffects(ctx: ApplyContext, plan: Plan): Promise<void> {
  const corrected = new Set(
    plan.changes.map((change) => ctx.entries.get(change.addenda.originalTraceNumber)?.bank_account_id).filter((id) => id),
  );
  const withAccount = plan.returns.filter((item) => item.matched.bank_account_id);
  const disables = withAccount.filter((item) => ADMINISTRATIVE_CODES.has(item.code));
  for (const item of disables) item.effectsInOrder = corrected.has(item.matched.bank_account_id);
  await disableAccounts(
    ctx,
    disables.filter((item) => !item.effectsInOrder),
  );
  await suspendUsers(
    ctx,
    withAccount.filter((item) => UNAUTHORIZED_CODES.has(item.code)),
  );
}

async function disableAccounts(ctx: ApplyContext, items: readonly ReturnItem[]): Promise<void> {
  const inputs = items.map((item) => ({
    bankAccountId: item.matched.bank_account_id!,
    reason: `ACH return ${item.code}: ${returnTitle(item.code)}`,
  }));
  const disabled = new Map((await disableBankAccounts(ctx.tx, inputs, ctx.now)).map((row) => [row.id, row]));
  for (const item of items) {
    const row = disabled.get(item.matched.bank_account_id!);
    if (!row) continue;
    disabled.delete(row.id);
    recordEvent(ctx, item.matched.organization_id, 'bank_account.disabled', renderBankAccount(row), {
      slot: item.slot,
      step: STEP.effects,
    });
  }
}

async function suspendUsers(ctx: ApplyContext, items: readonly ReturnItem[]): Promise<void> {
  if (items.length === 0) return;
  const { rows } = await ctx.tx.query<{ id: string; user_id: string }>('SELECT id, user_id FROM bank_accounts WHERE id = ANY($1::text[])', [
    [...new Set(items.map((item) => item.matched.bank_account_id!))],
  ]);
  const userOf = new Map(rows.map((row) => [row.id, row.user_id]));
  const userIds = items.map((item) => {
    const userId = userOf.get(item.matched.bank_account_id!);
    assert(userId, 'an entry matched by trace number names a bank account that exists');
    return userId;
  });
  const locked = await lockUsers(ctx.tx, userIds);
  // Only an enabled user can be suspended (§6); a created, suspended or disabled one stays as it is.
  const enabled = locked.filter((user) => user.status === 'enabled');
  const organizationOf = new Map(locked.map((user) => [user.id, user.organization_id]));
  const suspended = new Map(
    (
      await updateUsersStatus(
        ctx.tx,
        enabled.map((user) => user.id),
        'suspended',
        ctx.now,
      )
    ).map((user) => [user.id, user]),
  );
  items.forEach((item, i) => {
    const user = suspended.get(userIds[i]!);
    if (!user) return;
    suspended.delete(user.id);
    recordEvent(
      ctx,
      organizationOf.get(user.id)!,
      'user.status_changed',
      { ...user, previous_status: 'enabled' },
      { slot: item.slot, step: STEP.effects },
    );
  });
}

/** Step 6: in file order, the returns whose money goes one at a time, the notifications of change, and the disables that wait for them. */
async function applyInOrder(ctx: ApplyContext, plan: Plan): Promise<void> {
  type Step = { slot: number; step: number; run: () => Promise<void> };
  const steps: Step[] = [];
  for (const item of plan.returns) {
    if (item.oneByOne) steps.push({ slot: item.slot, step: STEP.money, run: () => applyMoneyOfOne(ctx, item) });
    if (item.effectsInOrder) steps.push({ slot: item.slot, step: STEP.effects, run: () => disableAccounts(ctx, [item]) });
  }
  for (const change of plan.changes) {
    steps.push({
      slot: change.slot,
      step: STEP.money,
      run: async () => {
        plan.outcomes[change.slot] = await applyChange(ctx, change.entry, change.addenda);
      },
    });
  }
  steps.sort((a, b) => a.slot - b.slot || a.step - b.step);
  for (const step of steps) {
    ctx.at = { slot: step.slot, step: step.step };
    await step.run();
  }
}

/**
 * The money of one return that goes in file order: the same rules as every other return's (applyMoney), on this
 * one alone, once the returns before it in the file have run; a debit's intent is read again for what they left.
 */
async function applyMoneyOfOne(ctx: ApplyContext, item: ReturnItem): Promise<void> {
  if (item.kind === 'debit') await readDebitIntents(ctx, [item]);
  await applyMoney(ctx, [item]);
}
