// Settlement's contract with Temporal: workflow types, ids, inputs, results, signals and queries shared by
// the settlement workflows, their activities, the clients that start and signal them, and the CLI. Pure (no
// Node modules, no I/O): workflow code imports it.
import { defineQuery, defineSignal } from '@temporalio/workflow';

export const SETTLEMENT_WINDOW_WORKFLOW_TYPE = 'settlementWindowWorkflow';

/**
 * Settlement's own task queue beside the lifecycle queue it is derived from, so a window close and its
 * transfers never wait behind a backlog of lifecycle tasks. Every worker polls both.
 */
export function settlementTaskQueue(lifecycleTaskQueue: string): string {
  return `${lifecycleTaskQueue}-settlement`;
}
export const ACCOUNT_SETTLEMENT_WORKFLOW_TYPE = 'accountSettlementWorkflow';

/** Limits of settlement's workflows and activities, every one explicit. */
export const SETTLEMENT_LIMITS = {
  /** Members signalled per page; one heartbeat per page. */
  notifyPageSize: 500,
  /** Pages one notify activity handles before handing its cursor back to the workflow. */
  notifyPagesPerActivity: 20,
  /** Signals in flight at once from one activity. */
  notifyConcurrency: 32,
  /** Accounts whose settlement workflow one fan-out activity starts. */
  fanOutPageSize: 200,
  /** Workflow starts in flight at once from one fan-out activity. */
  fanOutConcurrency: 16,
  /** Continue-as-new once a notifying workflow's history grows past this many events. */
  historyEventsMax: 10_000,
};

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

/**
 * The network settled this transfer (sandbox: POST /simulate/transfer/{id}/settle; a real rail's callback).
 * Arriving while the transfer waits for its settlement date, it also ends that wait: the simulated network
 * settles early on request.
 */
export const networkSettledSignal = defineSignal('networkSettled');

/**
 * The phases of an account's settlement, in the order it passes them (a phase may be skipped: a transfer dated in
 * the past never waits in `awaiting_date`). The order is what resume logic and progress watchers compare.
 */
export const SETTLEMENT_PHASES = [
  'building',
  'notifying_assigned',
  'awaiting_date',
  'awaiting_network',
  'settling',
  'notifying_settled',
  'done',
] as const;

export type SettlementPhase = (typeof SETTLEMENT_PHASES)[number];

/**
 * patched() id of the hold before the rail hand-off (SPEC §15). Executions that passed this point on older code
 * replay without it; every new one (and an old one still before it) waits for the transfer's date.
 */
export const HAND_OFF_ON_SETTLEMENT_DATE_PATCH = 'settlement-hand-off-on-settlement-date';

/**
 * patched() id of member notification in a child workflow of its own (settlementNotificationWorkflow), decided once
 * at the start of each run: a run begun on older code keeps notifying from its own history (and continuing as new
 * itself) to its end; every new run, including one continued as new by older code, notifies through the child.
 */
export const NOTIFY_MEMBERS_IN_CHILD_PATCH = 'settlement-notify-members-in-child';

export interface TransferInfo {
  transferId: string;
  amountCents: number;
  direction: 'disbursement' | 'collection';
  status: 'pending' | 'settled';
  transactionCount: number;
}

/** Where a notification pass over a transfer's members stands: the last member signalled (newest first). */
export type MemberCursor = { createdAt: string; id: string } | null;

/** What the members of a transfer are told: a cash_out is `assigned` to it; every member is `settled` with it. */
export type MemberNotice = 'assigned' | 'settled';

/** One pass telling a transfer's members one thing; carried across the notification workflow's continue-as-new. */
export interface MemberNotificationInput {
  transferId: string;
  kind: MemberNotice;
  /** Where the pass resumes (null: from the newest member). */
  cursor: MemberCursor;
  /** Members already told in this pass (signalled, or counted as not running). */
  notified: number;
}

export interface MemberNotificationResult {
  notified: number;
}

/** Members told so far by a running notification workflow (the account's `settlementProgress` counts a pass once it ends). */
export const memberNotificationProgressQuery = defineQuery<{ kind: MemberNotice; notified: number }>('memberNotificationProgress');

export interface AccountSettlementInput {
  accountId: string;
  windowDate: string;
  /**
   * Carried across continue-as-new by runs that notify from their own history (begun before notification moved to
   * its child workflow) in very large windows.
   */
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
  /**
   * Members told in the current notification phase: counted live by a run that notifies from its own history,
   * when the pass ends by one that notifies through its child (whose `memberNotificationProgress` counts live).
   */
  notified: number;
  /** While `awaiting_date`: when the transfer goes to the rail (the start of its date, Eastern time). */
  handOffAt?: string;
}

export const settlementProgressQuery = defineQuery<SettlementProgress>('settlementProgress');

/** Deterministic workflow ids: one settlement workflow per (account, window), whoever starts it. */
export function accountSettlementWorkflowId(accountId: string, windowDate: string): string {
  return `settlement-${accountId}-${windowDate}`;
}

/**
 * The child workflow telling an account's window members one thing: one per (account, window, notice), so a
 * repeated start finds the same pass.
 */
export function memberNotificationWorkflowId(accountId: string, windowDate: string, kind: MemberNotice): string {
  return `${accountSettlementWorkflowId(accountId, windowDate)}-notify-${kind}`;
}

/** One close of window D per scope (an account, an organization, or all). */
export function settlementWindowWorkflowId(input: SettlementWindowInput & { windowDate: string }): string {
  const scope = input.accountId ?? input.organizationId ?? 'all';
  return `settlement-window-${input.windowDate}-${scope}`;
}
