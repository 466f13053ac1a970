import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { AccountIdKey, OrganizationIdKey, SettlementDateKey } from '../platform/searchAttributes';
import {
  ACCOUNT_SETTLEMENT_WORKFLOW_TYPE,
  accountSettlementWorkflowId,
  networkSettledSignal,
  SETTLEMENT_WINDOW_WORKFLOW_TYPE,
  settlementTaskQueue,
  settlementWindowWorkflowId,
  type AccountSettlementInput,
  type SettlementWindowInput,
} from './contract';

/** The Temporal client side of settlement: starting window closes and account settlements, and the network's signal. */

/**
 * Starts the settlement workflow of (account, window). Starting it again is success: a re-run of the window
 * finds it running or done and creates nothing. Only a workflow that failed or was terminated may run again
 * under the same id (its activities are idempotent, so the new run converges on the same transfer).
 */
export async function startAccountSettlement(
  client: Client,
  taskQueue: string,
  input: { accountId: string; organizationId: string; windowDate: string },
): Promise<'started' | 'already_started'> {
  try {
    const args: [AccountSettlementInput] = [{ accountId: input.accountId, windowDate: input.windowDate }];
    await client.workflow.start(ACCOUNT_SETTLEMENT_WORKFLOW_TYPE, {
      workflowId: accountSettlementWorkflowId(input.accountId, input.windowDate),
      taskQueue,
      args,
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
      typedSearchAttributes: [
        { key: OrganizationIdKey, value: input.organizationId },
        { key: AccountIdKey, value: input.accountId },
        { key: SettlementDateKey, value: input.windowDate },
      ],
      staticSummary: `settle ${input.accountId} window ${input.windowDate}`,
    });
    return 'started';
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return 'already_started';
    throw error;
  }
}

/**
 * Closes window D now (POST /simulate/settlement, `settlement run`): starts the fan-out workflow for D and the
 * given scope. A close of the same window and scope still running is joined, not duplicated; one that has
 * finished runs again (harmless: every (account, D) settles once). It runs on settlement's own task queue,
 * derived from the deployment's lifecycle queue, and starts its account settlements there too.
 */
export async function startWindowClose(
  client: Client,
  lifecycleTaskQueue: string,
  input: SettlementWindowInput & { windowDate: string },
): Promise<{ workflowId: string; runId: string | null }> {
  const workflowId = settlementWindowWorkflowId(input);
  try {
    const args: [SettlementWindowInput] = [input];
    const handle = await client.workflow.start(SETTLEMENT_WINDOW_WORKFLOW_TYPE, {
      workflowId,
      taskQueue: settlementTaskQueue(lifecycleTaskQueue),
      args,
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
      typedSearchAttributes: [
        { key: SettlementDateKey, value: input.windowDate },
        ...(input.organizationId ? [{ key: OrganizationIdKey, value: input.organizationId }] : []),
        ...(input.accountId ? [{ key: AccountIdKey, value: input.accountId }] : []),
      ],
      staticSummary: `close settlement window ${input.windowDate}`,
    });
    return { workflowId, runId: handle.firstExecutionRunId };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return { workflowId, runId: null };
    throw error;
  }
}

/** The network settled the transfer (sandbox: POST /simulate/transfer/{id}/settle; a real rail's callback). */
export async function signalNetworkSettled(client: Client, accountId: string, windowDate: string): Promise<void> {
  await client.workflow.getHandle(accountSettlementWorkflowId(accountId, windowDate)).signal(networkSettledSignal);
}
