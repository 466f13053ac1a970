import { AccountIdKey, OrganizationIdKey, SettlementDateKey } from '../platform/searchAttributes';
import type { TemporalCommand } from '../platform/temporalCommands';
import {
  accountSettlementWorkflowId,
  networkSettledSignal,
  SETTLEMENT_WINDOW_WORKFLOW_TYPE,
  settlementTaskQueue,
  settlementWindowWorkflowId,
  type SettlementWindowInput,
} from './workflowContract';

/**
 * Settlement's Temporal commands, written once: the API queues them (enqueueTemporalCommand, the one road of
 * docs/temporal-road.md) and the CLI delivers the same command at once (src/settlement/client.ts).
 */

/**
 * Closes window D now: the fan-out workflow for D and the given scope, on settlement's own task queue (derived
 * from the deployment's lifecycle queue). A close of the same window and scope still running is joined (a
 * second delivery answers already started); one that has finished runs again (ALLOW_DUPLICATE: harmless,
 * every (account, D) settles once).
 */
export function windowCloseCommand(lifecycleTaskQueue: string, input: SettlementWindowInput & { windowDate: string }): TemporalCommand {
  const args: [SettlementWindowInput] = [input];
  return {
    kind: 'start',
    workflowId: settlementWindowWorkflowId(input),
    workflowType: SETTLEMENT_WINDOW_WORKFLOW_TYPE,
    taskQueue: settlementTaskQueue(lifecycleTaskQueue),
    args,
    idReusePolicy: 'allow_duplicate',
    searchAttributes: {
      [SettlementDateKey.name]: input.windowDate,
      ...(input.organizationId ? { [OrganizationIdKey.name]: input.organizationId } : {}),
      ...(input.accountId ? { [AccountIdKey.name]: input.accountId } : {}),
    },
    summary: `close settlement window ${input.windowDate}`,
  };
}

/**
 * The network settled the transfer of (account, window) (sandbox: POST /simulate/transfer/{id}/settle; a real
 * rail's callback). The signal only sets a flag, so a second delivery changes nothing; a settlement workflow
 * that has finished needs no signal.
 */
export function networkSettledCommand(accountId: string, windowDate: string): TemporalCommand {
  return { kind: 'signal', workflowId: accountSettlementWorkflowId(accountId, windowDate), signal: networkSettledSignal.name };
}
