import {
  ApplicationFailure,
  condition,
  continueAsNew,
  log,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SettlementActivities } from '../activities/settlement';
import { ScheduledStartTimeKey, SettlementDateKey, TransferIdKey } from '../src/platform/searchAttributes';
import {
  HAND_OFF_ON_SETTLEMENT_DATE_PATCH,
  networkSettledSignal,
  SETTLEMENT_LIMITS,
  settlementProgressQuery,
  type AccountSettlementInput,
  type AccountSettlementResult,
  type MemberCursor,
  type SettlementPhase,
  type SettlementProgress,
  type SettlementWindowInput,
  type SettlementWindowResult,
} from '../src/settlement/contract';

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
  const progress = { accountsStarted: 0, accountsAlreadyStarted: 0 };

  let afterAccountId: string | null = null;
  do {
    const page: Awaited<ReturnType<SettlementActivities['startAccountSettlements']>> = await bulk.startAccountSettlements({
      windowDate,
      organizationId: input.organizationId,
      accountId: input.accountId,
      afterAccountId,
    });
    progress.accountsStarted += page.started;
    progress.accountsAlreadyStarted += page.alreadyStarted;
    afterAccountId = page.nextAfterAccountId;
  } while (afterAccountId !== null);
  log.info('settlement window closed', { windowDate, accounts: progress.accountsStarted + progress.accountsAlreadyStarted });
  return { windowDate, accountsStarted: progress.accountsStarted, accountsAlreadyStarted: progress.accountsAlreadyStarted };
}

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
      const batch: Awaited<ReturnType<SettlementActivities['notifyMembers']>> = await bulk.notifyMembers({
        transferId: transfer.transferId,
        kind,
        after: cursor,
      });
      progress.notified += batch.signalled + batch.notRunning;
      cursor = batch.next;
      if (cursor !== null && (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > SETTLEMENT_LIMITS.historyEventsMax)) {
        await continueAsNew<typeof accountSettlementWorkflow>({
          accountId,
          windowDate,
          resume: { phase, transfer, cursor, networkSettled, notified: progress.notified },
        });
      }
    } while (cursor !== null);
  };

  const phaseOrder: SettlementPhase[] = [
    'building',
    'notifying_assigned',
    'awaiting_date',
    'awaiting_network',
    'settling',
    'notifying_settled',
    'done',
  ];
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
    accountId,
    windowDate,
    transferId: transfer.transferId,
    amountCents: transfer.amountCents,
    direction: transfer.direction,
    transactionCount: transfer.transactionCount,
  };
}
