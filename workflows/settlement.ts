import {
  ApplicationFailure, condition, continueAsNew, defineQuery, defineSignal, log, patched, proxyActivities, setHandler,
  upsertSearchAttributes, workflowInfo,
} from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { createSettlementActivities } from '../activities/settlement';
import { SettlementDateKey, TransferIdKey } from './searchAttributes';

/**
 * Settlement (SPEC §10), two workflows:
 *   settlementWindowWorkflow  — closes window D: one per schedule firing (or manual run); starts one
 *                               accountSettlementWorkflow per account with something eligible, and ends.
 *   accountSettlementWorkflow — one per (account, D), id `settlement-<account>-<D>`: builds the transfer,
 *                               tells the members, hands the transfer to the network, waits for it to
 *                               settle, settles it, tells the members again.
 * The window workflow does not wait for its transfers to settle (that can take days on a real rail), so a
 * buffered next window never waits behind a slow network.
 */

type SettlementActivities = ReturnType<typeof createSettlementActivities>;

/** Set by the Temporal scheduler on every workflow it starts: the firing's nominal time. */
const ScheduledStartTimeKey = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

// Database work of a whole window: long single statements, kept alive by heartbeats so a killed worker is
// noticed in seconds; retried until it succeeds because every step is idempotent and must finish.
const bulk = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '15 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});
const quick = proxyActivities<SettlementActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export interface SettlementWindowInput {
  /** The window to close; absent when started by the schedule, which gives it the firing's nominal time. */
  windowDate?: string;
  /** Only this organization's accounts (sandbox simulation closes the caller's own windows only). */
  organizationId?: string;
  /** Only this account. */
  accountId?: string;
}

export interface SettlementWindowResult {
  windowDate: string;
  accountsStarted: number;
  accountsAlreadyStarted: number;
}

export const windowProgressQuery = defineQuery<SettlementWindowResult & { done: boolean }>('windowProgress');

export async function settlementWindowWorkflow(input: SettlementWindowInput = {}): Promise<SettlementWindowResult> {
  let windowDate = input.windowDate;
  if (!windowDate) {
    // The schedule's nominal time, never the clock: a late, caught-up or backfilled firing closes the window
    // it was scheduled for.
    const scheduledAt = workflowInfo().typedSearchAttributes.get(ScheduledStartTimeKey);
    if (!scheduledAt) throw ApplicationFailure.nonRetryable('no windowDate given and not started by the settlement schedule', 'NoWindow');
    windowDate = (await quick.windowOfScheduledTime({ scheduledAt: scheduledAt.toISOString() })).windowDate;
  }
  upsertSearchAttributes([{ key: SettlementDateKey, value: windowDate }]);
  const progress = { windowDate, accountsStarted: 0, accountsAlreadyStarted: 0, done: false };
  setHandler(windowProgressQuery, () => progress);

  let afterAccountId: string | null = null;
  do {
    const page: Awaited<ReturnType<SettlementActivities['startAccountSettlements']>> = await bulk.startAccountSettlements({
      windowDate, organizationId: input.organizationId, accountId: input.accountId, afterAccountId,
    });
    progress.accountsStarted += page.started;
    progress.accountsAlreadyStarted += page.alreadyStarted;
    afterAccountId = page.nextAfterAccountId;
  } while (afterAccountId !== null);
  progress.done = true;
  log.info('settlement window closed', { windowDate, accounts: progress.accountsStarted + progress.accountsAlreadyStarted });
  return { windowDate, accountsStarted: progress.accountsStarted, accountsAlreadyStarted: progress.accountsAlreadyStarted };
}

/**
 * The network settled this transfer (sandbox: POST /simulate/transfer/{id}/settle). Arriving while the transfer
 * waits for its settlement date, it also ends that wait: the simulated network settles early on request.
 */
export const networkSettledSignal = defineSignal('networkSettled');

export type SettlementPhase =
  | 'building' | 'notifying_assigned' | 'awaiting_date' | 'awaiting_network' | 'settling' | 'notifying_settled' | 'done';

/**
 * patched() id of the hold before the rail hand-off (SPEC §15). Executions that passed this point on older code
 * replay without it; every new one (and an old one still before it) waits for the transfer's date.
 */
export const HAND_OFF_ON_SETTLEMENT_DATE_PATCH = 'settlement-hand-off-on-settlement-date';

export interface TransferInfo {
  transferId: string;
  amountCents: number;
  direction: 'disbursement' | 'collection';
  status: 'pending' | 'settled';
  transactionCount: number;
}

export type MemberCursor = { createdAt: string; id: string } | null;

export interface AccountSettlementInput {
  accountId: string;
  windowDate: string;
  /** Carried across continue-as-new in very large windows. */
  resume?: { phase: SettlementPhase; transfer: TransferInfo; cursor: MemberCursor; networkSettled: boolean; notified: number };
}

export interface AccountSettlementResult {
  accountId: string;
  windowDate: string;
  transferId: string | null;
  amountCents: number;
  direction: 'disbursement' | 'collection' | null;
  transactionCount: number;
}

export interface SettlementProgress {
  phase: SettlementPhase;
  transferId: string | null;
  transactionCount: number;
  /** Members signalled in the current notification phase. */
  notified: number;
  /** While `awaiting_date`: when the transfer goes to the rail (the start of its date, Eastern time). */
  handOffAt?: string;
}

export const settlementProgressQuery = defineQuery<SettlementProgress>('settlementProgress');

export async function accountSettlementWorkflow(input: AccountSettlementInput): Promise<AccountSettlementResult> {
  const { accountId, windowDate } = input;
  let networkSettled = input.resume?.networkSettled ?? false;
  setHandler(networkSettledSignal, () => {
    networkSettled = true;
  });
  const progress: SettlementProgress = {
    phase: input.resume?.phase ?? 'building',
    transferId: input.resume?.transfer.transferId ?? null,
    transactionCount: input.resume?.transfer.transactionCount ?? 0,
    notified: input.resume?.notified ?? 0,
  };
  setHandler(settlementProgressQuery, () => progress);

  const transfer = input.resume?.transfer ?? (await bulk.createTransfer({ accountId, windowDate }));
  if (!transfer) {
    progress.phase = 'done';
    return { accountId, windowDate, transferId: null, amountCents: 0, direction: null, transactionCount: 0 };
  }
  progress.transferId = transfer.transferId;
  progress.transactionCount = transfer.transactionCount;
  upsertSearchAttributes([{ key: TransferIdKey, value: transfer.transferId }]);

  /**
   * Signals every member (cash_out only for `assigned`) page by page from activities, so each member
   * workflow gets one signal per step and this workflow's history grows by one activity per batch of pages.
   * Hands over to a fresh run when the history grows long.
   */
  const notify = async (kind: 'assigned' | 'settled', phase: SettlementPhase) => {
    let cursor: MemberCursor = input.resume?.phase === phase ? input.resume.cursor : null;
    if (input.resume?.phase !== phase) progress.notified = 0;
    progress.phase = phase;
    do {
      const batch: Awaited<ReturnType<SettlementActivities['notifyMembers']>> = await bulk.notifyMembers({ transferId: transfer.transferId, kind, after: cursor });
      progress.notified += batch.signalled + batch.notRunning;
      cursor = batch.next;
      if (cursor !== null && (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > HISTORY_EVENTS_MAX)) {
        await continueAsNew<typeof accountSettlementWorkflow>({
          accountId, windowDate, resume: { phase, transfer, cursor, networkSettled, notified: progress.notified },
        });
      }
    } while (cursor !== null);
  };

  const phaseOrder: SettlementPhase[] = ['building', 'notifying_assigned', 'awaiting_date', 'awaiting_network', 'settling', 'notifying_settled', 'done'];
  const reached = (phase: SettlementPhase) => phaseOrder.indexOf(progress.phase) > phaseOrder.indexOf(phase);

  if (transfer.status === 'pending' && !reached('notifying_assigned')) await notify('assigned', 'notifying_assigned');
  if (transfer.status === 'pending' && !reached('settling')) {
    if (transfer.amountCents > 0 && patched(HAND_OFF_ON_SETTLEMENT_DATE_PATCH)) {
      // Money moves on business days: the rail gets the transfer on its settlement date, which may be days
      // after the window closed (a weekend, a holiday). A durable timer, so a worker restart changes nothing.
      const { handOffAt } = await quick.transferHandOff({ transferId: transfer.transferId });
      const waitMs = Date.parse(handOffAt) - Date.now();
      if (waitMs > 0) {
        progress.phase = 'awaiting_date';
        progress.handOffAt = handOffAt;
        await condition(() => networkSettled, waitMs);
      }
    }
    progress.phase = 'awaiting_network';
    if (transfer.amountCents > 0) {
      // A 0 transfer moves no money: nothing to send, nothing to wait for.
      const { settleAfterSeconds } = await quick.submitTransfer({ transferId: transfer.transferId });
      if (settleAfterSeconds === null) await condition(() => networkSettled);
      else if (settleAfterSeconds > 0) await condition(() => networkSettled, `${settleAfterSeconds} seconds`);
    }
    progress.phase = 'settling';
    await bulk.settleTransfer({ transferId: transfer.transferId });
  }
  await notify('settled', 'notifying_settled');
  progress.phase = 'done';
  log.info('transfer settled', { transferId: transfer.transferId, accountId, windowDate });
  return {
    accountId, windowDate, transferId: transfer.transferId, amountCents: transfer.amountCents,
    direction: transfer.direction, transactionCount: transfer.transactionCount,
  };
}

/** Mirrors SETTLEMENT_LIMITS.historyEventsMax (workflow code cannot import the Node-side module). */
const HISTORY_EVENTS_MAX = 10_000;
