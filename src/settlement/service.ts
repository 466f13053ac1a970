import { errors } from '../errors';
import { listTransferTransactions } from '../ledger/contract';
import { resolveAccountId } from '../ledger/contract';
import { settlementDateOf } from '../easternDates';
import type { PageRequest } from '../db/paging';
import type { Op, Outcome } from '../services';
import { enqueueTemporalCommand } from '../platform/temporalCommands';
import { networkSettledCommand, windowCloseCommand } from './commands';
import { isCalendarDate } from './dates';
import * as repo from './repo';
import type { SimulateSettlementBody, Transfer } from './schemas';

/** Settlement's operations behind the API (SPEC §10): reading transfers and the sandbox's window and network simulation. */

/** The transfer and one page of its members; another organization's transfer is not found. */
export async function transferWithTransactions(op: Op, transferId: string, page: PageRequest) {
  const row = await repo.getTransferRow(op.db, transferId, op.organizationId);
  if (!row) throw errors.notFound('transfer', transferId);
  const transactions = await listTransferTransactions(op.db, op.organizationId, row.id, page);
  return { ...repo.renderTransfer(row), transactions };
}

/**
 * Sandbox: closes window `date` (default: the one open now) for the caller's accounts. The close's workflow
 * start is queued in the request's transaction (docs/temporal-road.md): the answer never waits on Temporal,
 * and its `started` is committed with it.
 */
export async function closeWindowNow(
  op: Op,
  input: SimulateSettlementBody,
): Promise<
  Outcome<{
    id: string;
    window_date: string;
    account_id: string | null;
    status: 'started';
  }>
> {
  if (input.date !== undefined && !isCalendarDate(input.date)) throw errors.validation([{ param: 'date', message: 'not a calendar date' }]);
  if (input.account_id !== undefined) {
    const account = await resolveAccountId(op.db, op.organizationId, input.account_id);
    if (!account.ok) throw errors.resourceMissing('account_id', input.account_id);
  }
  const windowDate = input.date ?? settlementDateOf(op.now, op.deps.config.SETTLEMENT_CUTOFF);
  const scope = { windowDate, organizationId: op.organizationId, ...(input.account_id ? { accountId: input.account_id } : {}) };
  const { taskQueue } = op.deps.services;
  const command = windowCloseCommand(taskQueue, scope);
  await enqueueTemporalCommand(op.db, { drainQueue: taskQueue, now: op.now }, command);
  return {
    body: { id: command.workflowId, window_date: windowDate, account_id: input.account_id ?? null, status: 'started' },
    afterCommit: () => op.lifecyclePoke.poke(),
  };
}

/**
 * Sandbox: the network settles a pending transfer now. The signal to its settlement workflow is queued in the
 * request's transaction and delivered by a drainer once Temporal answers; the workflow settles it then.
 */
export async function settleTransferNow(op: Op, transferId: string): Promise<Outcome<Transfer>> {
  const row = await repo.getTransferRow(op.db, transferId, op.organizationId);
  if (!row) throw errors.notFound('transfer', transferId);
  if (row.status !== 'pending') throw errors.invalidState(`This transfer is ${row.status}; only a pending transfer can be settled.`);
  const { taskQueue } = op.deps.services;
  await enqueueTemporalCommand(op.db, { drainQueue: taskQueue, now: op.now }, networkSettledCommand(row.account_id, row.window_date));
  return { body: repo.renderTransfer(row), afterCommit: () => op.lifecyclePoke.poke() };
}
