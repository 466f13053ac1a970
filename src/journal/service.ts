import { errors } from '../errors';
import type { ListPage } from '../db/paging';
import { windowBounds } from '../easternDates';
import type { Op } from '../services';
import * as repo from './repo';
import type { BalancesAt, Entry, EntryListQuery, Statement, StatementQuery } from './schemas';

/**
 * The journal's reads for one organization (SPEC §21). An account of another organization is not found,
 * exactly like an unknown one; nothing is read before that check.
 */

async function ownAccount(op: Op, accountId: string): Promise<void> {
  if (!(await repo.accountExists(op.db, op.organizationId, accountId))) throw errors.notFound('account', accountId);
}

export async function accountBalancesAt(op: Op, accountId: string, at: string | undefined): Promise<BalancesAt> {
  await ownAccount(op, accountId);
  const instant = at === undefined ? op.now : new Date(at);
  const balances = await repo.balancesAt(op.db, accountId, instant);
  return { account_id: accountId, at: instant.toISOString(), ...balances };
}

export async function accountEntries(op: Op, accountId: string, query: EntryListQuery): Promise<ListPage<Entry>> {
  await ownAccount(op, accountId);
  return repo.listEntries(op.db, op.organizationId, accountId, query);
}

/** The instants a statement of days `from`..`to` (settlement windows, both included) spans: [start of from, end of to). */
export function statementSpan(cutoff: string, query: Pick<StatementQuery, 'from' | 'to'>): { start: Date; end: Date } {
  return { start: windowBounds(query.from, cutoff).start, end: windowBounds(query.to, cutoff).end };
}

/** The statement's balances and totals, asserted: opening plus the span's entries must be closing. */
export async function accountStatement(op: Op, accountId: string, query: StatementQuery): Promise<Statement> {
  await ownAccount(op, accountId);
  const sums = await repo.statementSums(op.db, accountId, statementSpan(op.deps.config.SETTLEMENT_CUTOFF, query));
  const { opening, closing, derived } = sums;
  if (derived.pending !== closing.pending || derived.available !== closing.available || derived.in_transfer !== closing.in_transfer) {
    // An incident, logged loudly and never shown as a statement.
    op.deps.log.error(
      { invariant: 'statement_opening_plus_entries_is_closing', account_id: accountId, opening, closing, derived },
      'invariant violation: a statement disagrees with the journal',
    );
    throw errors.internal();
  }
  return { account_id: accountId, from: query.from, to: query.to, opening, closing, totals: sums.totals };
}

/** Checks the caller's account before the CSV's first byte, so a 404 is still a proper answer. */
export async function statementCsvSpan(op: Op, accountId: string, query: StatementQuery): Promise<{ start: Date; end: Date }> {
  await ownAccount(op, accountId);
  return statementSpan(op.deps.config.SETTLEMENT_CUTOFF, query);
}
