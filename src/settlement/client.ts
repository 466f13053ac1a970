import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { deliverTemporalCommand } from '../platform/temporalCommandDelivery';
import { AccountIdKey, OrganizationIdKey, SettlementDateKey } from '../platform/searchAttributes';
import { windowCloseCommand } from './commands';
import {
  ACCOUNT_SETTLEMENT_WORKFLOW_TYPE,
  accountSettlementWorkflowId,
  type AccountSettlementInput,
  type SettlementWindowInput,
} from './workflowContract';

/** The Temporal client side of settlement: starting window closes and account settlements (activities, the CLI). */

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
 * Closes window D now (`settlement run`, the benches): delivers windowCloseCommand at once. The API queues the
 * same command instead (src/settlement/service.ts), so no request waits on Temporal.
 */
export async function startWindowClose(
  client: Client,
  lifecycleTaskQueue: string,
  input: SettlementWindowInput & { windowDate: string },
): Promise<{ workflowId: string; started: boolean }> {
  const command = windowCloseCommand(lifecycleTaskQueue, input);
  return { workflowId: command.workflowId, started: (await deliverTemporalCommand(client, command)) === 'started' };
}
