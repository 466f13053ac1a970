import { continueAsNew, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  memberNotificationProgressQuery,
  SETTLEMENT_LIMITS,
  type MemberNotificationInput,
  type MemberNotificationResult,
} from '../src/settlement/workflowContract';
import { bulk } from './settlementActivities';

/**
 * Tells every member of a transfer one thing (cash_outs only for `assigned`), page by page from activities, so
 * each member workflow gets one signal per step and the notifying history grows by one activity per batch of
 * pages. `pass` is updated as it goes (whoever watches it sees the count grow); when the history grows long,
 * `handOver` continues as new from where the pass stands and never returns.
 */
export async function tellMembers(
  pass: MemberNotificationInput,
  handOver: (pass: MemberNotificationInput) => Promise<never>,
): Promise<void> {
  do {
    const batch = await bulk.notifyMembers({ transferId: pass.transferId, kind: pass.kind, after: pass.cursor });
    pass.notified += batch.signalled + batch.notRunning;
    pass.cursor = batch.next;
    if (pass.cursor !== null && historyIsLong()) await handOver(pass);
  } while (pass.cursor !== null);
}

function historyIsLong(): boolean {
  const info = workflowInfo();
  return info.continueAsNewSuggested || info.historyLength > SETTLEMENT_LIMITS.historyEventsMax;
}

/**
 * One notification pass of an account's settlement, as a child workflow of its own (id from the account and window,
 * see memberNotificationWorkflowId): its continue-as-new carries only the pass, and the settlement's own history
 * stays a handful of events however many members the transfer has.
 */
export async function settlementNotificationWorkflow(input: MemberNotificationInput): Promise<MemberNotificationResult> {
  const pass = { ...input };
  setHandler(memberNotificationProgressQuery, () => ({ kind: pass.kind, notified: pass.notified }));
  await tellMembers(pass, (where) => continueAsNew<typeof settlementNotificationWorkflow>(where));
  return { notified: pass.notified };
}
