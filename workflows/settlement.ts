import {
  ApplicationFailure,
  condition,
  continueAsNew,
  executeChild,
  log,
  patched,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SettlementActivities } from '../activities/settlement';
import { ScheduledStartTimeKey, SettlementDateKey, TransferIdKey } from '../src/platform/searchAttributes';
import {
  HAND_OFF_ON_SETTLEMENT_DATE_PATCH,
  memberNotificationWorkflowId,
  networkSettledSignal,
  NOTIFY_MEMBERS_IN_CHILD_PATCH,
  SETTLEMENT_PHASES,
  settlementProgressQuery,
  type AccountSettlementInput,
  type AccountSettlementResult,
  type MemberNotice,
  type MemberNotificationInput,
  type SettlementPhase,
  type SettlementProgress,
  type SettlementWindowInput,
  type SettlementWindowResult,
  type TransferInfo,
} from '../src/settlement/workflowContract';
import { bulk, quick } from './settlementActivities';
import { settlementNotificationWorkflow, tellMembers } from './settlementNotification';

/**
 * Settlement (SPEC §10), two workflows:
 *   settlementWindowWorkflow  — closes window D: one per schedule firing (or manual run); starts one
 *                               accountSettlementWorkflow per account with something eligible, and ends.
 *   accountSettlementWorkflow — one per (account, D), id `settlement-<account>-<D>`: builds the transfer,
 *                               tells the members, hands the transfer to the network, waits for it to
 *                               settle, settles it, tells the members again. Telling the members is a child
 *                               workflow of its own (workflows/settlementNotification.ts).
 * The window workflow does not wait for its transfers to settle (that can take days on a real rail), so a
 * buffered next window never waits behind a slow network.
 */

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
  // Before the first command, once per run: a run begun on older code replays (and finishes) as it began.
  const notify = patched(NOTIFY_MEMBERS_IN_CHILD_PATCH) ? notifyThroughChild : notifyFromThisRun;
  const run = watchSettlement(input);

  const transfer = input.resume?.transfer ?? (await bulk.createTransfer({ accountId, windowDate }));
  if (!transfer) {
    run.progress.phase = 'done';
    return { accountId, windowDate, transferId: null, amountCents: 0, direction: null, transactionCount: 0 };
  }
  run.progress.transferId = transfer.transferId;
  run.progress.transactionCount = transfer.transactionCount;
  upsertSearchAttributes([{ key: TransferIdKey, value: transfer.transferId }]);

  if (transfer.status === 'pending' && !passed(run, 'notifying_assigned')) await notify(run, transfer, 'assigned');
  if (transfer.status === 'pending' && !passed(run, 'settling')) {
    await holdUntilSettlementDate(run, transfer);
    await handToNetwork(run, transfer);
    run.progress.phase = 'settling';
    await bulk.settleTransfer({ transferId: transfer.transferId });
  }
  await notify(run, transfer, 'settled');
  run.progress.phase = 'done';
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

/** What one run of an account's settlement knows: where it stands, and whether the network has settled. */
interface SettlementRun {
  input: AccountSettlementInput;
  progress: SettlementProgress;
  networkSettled: boolean;
  /** The notification pass under way (or last ended), whose count the progress query shows. */
  pass: MemberNotificationInput | null;
}

/** The run's state, picked up where a continued-as-new run left it, with the signal and query that reach it. */
function watchSettlement(input: AccountSettlementInput): SettlementRun {
  const run: SettlementRun = {
    input,
    progress: {
      phase: input.resume?.phase ?? 'building',
      transferId: input.resume?.transfer.transferId ?? null,
      transactionCount: input.resume?.transfer.transactionCount ?? 0,
      notified: input.resume?.notified ?? 0,
    },
    networkSettled: input.resume?.networkSettled ?? false,
    pass: null,
  };
  setHandler(networkSettledSignal, () => {
    run.networkSettled = true;
  });
  setHandler(settlementProgressQuery, () => ({ ...run.progress, notified: run.pass?.notified ?? run.progress.notified }));
  return run;
}

/** Whether the run (or the run it continues) is already past `phase`. */
function passed(run: SettlementRun, phase: SettlementPhase): boolean {
  return SETTLEMENT_PHASES.indexOf(run.progress.phase) > SETTLEMENT_PHASES.indexOf(phase);
}

const NOTIFYING: Record<MemberNotice, SettlementPhase> = { assigned: 'notifying_assigned', settled: 'notifying_settled' };

/** Enters the notifying phase of `kind`, resuming the pass a continued-as-new run carried (if it was this one). */
function startPass(run: SettlementRun, transfer: TransferInfo, kind: MemberNotice): MemberNotificationInput {
  const phase = NOTIFYING[kind];
  const resumed = run.input.resume?.phase === phase ? run.input.resume : undefined;
  run.progress.phase = phase;
  run.pass = { transferId: transfer.transferId, kind, cursor: resumed?.cursor ?? null, notified: resumed?.notified ?? 0 };
  return run.pass;
}

/** The members are told by a child workflow, one per (account, window, notice), which continues as new itself. */
async function notifyThroughChild(run: SettlementRun, transfer: TransferInfo, kind: MemberNotice): Promise<void> {
  const pass = startPass(run, transfer, kind);
  const { notified } = await executeChild(settlementNotificationWorkflow, {
    workflowId: memberNotificationWorkflowId(run.input.accountId, run.input.windowDate, kind),
    args: [pass],
  });
  pass.notified = notified;
}

/**
 * How runs begun before notification had a workflow of its own tell the members (kept so they replay): from this
 * run's history, handing the whole settlement over to a fresh run when the history grows long.
 */
async function notifyFromThisRun(run: SettlementRun, transfer: TransferInfo, kind: MemberNotice): Promise<void> {
  const phase = NOTIFYING[kind];
  await tellMembers(startPass(run, transfer, kind), ({ cursor, notified }) =>
    continueAsNew<typeof accountSettlementWorkflow>({
      accountId: run.input.accountId,
      windowDate: run.input.windowDate,
      resume: { phase, transfer, cursor, networkSettled: run.networkSettled, notified },
    }),
  );
}

/**
 * Money moves on business days: the rail gets the transfer on its settlement date, which may be days after the
 * window closed (a weekend, a holiday). A durable timer, so a worker restart changes nothing; the network's
 * settlement (the sandbox's early settle) ends it too. A 0 transfer goes nowhere, so it never waits.
 */
async function holdUntilSettlementDate(run: SettlementRun, transfer: TransferInfo): Promise<void> {
  if (transfer.amountCents <= 0 || !patched(HAND_OFF_ON_SETTLEMENT_DATE_PATCH)) return;
  const { handOffAt } = await quick.transferHandOff({ transferId: transfer.transferId });
  const waitMs = Date.parse(handOffAt) - Date.now();
  if (waitMs <= 0) return;
  run.progress.phase = 'awaiting_date';
  run.progress.handOffAt = handOffAt;
  await condition(() => run.networkSettled, waitMs);
}

/** Hands the transfer to the rail and waits until the network settles it (a 0 transfer moves no money: nothing to send). */
async function handToNetwork(run: SettlementRun, transfer: TransferInfo): Promise<void> {
  run.progress.phase = 'awaiting_network';
  if (transfer.amountCents <= 0) return;
  const { settleAfterSeconds } = await quick.submitTransfer({ transferId: transfer.transferId });
  if (settleAfterSeconds === null) await condition(() => run.networkSettled);
  else if (settleAfterSeconds > 0) await condition(() => run.networkSettled, `${settleAfterSeconds} seconds`);
}
