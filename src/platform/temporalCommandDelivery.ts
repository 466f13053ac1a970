import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType, WorkflowIdReusePolicy } from '@temporalio/common';
import type { IdReusePolicy, TemporalCommand, WorkflowStartSpec } from './temporalCommands';

/**
 * The Temporal side of the one road (src/platform/temporalCommands.ts): one queued command as one Temporal
 * call. Only the drainer and the CLI (which acts at once, outside any request) call it.
 */

export type DeliveryResult = 'started' | 'already_started' | 'signalled' | 'not_running';

const ID_REUSE_POLICIES: Record<IdReusePolicy, WorkflowIdReusePolicy> = {
  reject_duplicate: WorkflowIdReusePolicy.REJECT_DUPLICATE,
  allow_duplicate: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
  allow_duplicate_failed_only: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
};

function startOptions(workflowId: string, spec: WorkflowStartSpec) {
  return {
    workflowId,
    taskQueue: spec.taskQueue,
    args: [...spec.args],
    workflowIdReusePolicy: ID_REUSE_POLICIES[spec.idReusePolicy],
    typedSearchAttributes: Object.entries(spec.searchAttributes ?? {}).map(([name, value]) => ({
      key: defineSearchAttributeKey(name, SearchAttributeType.KEYWORD),
      value,
    })),
    ...(spec.memo === undefined ? {} : { memo: { ...spec.memo } }),
    ...(spec.summary === undefined ? {} : { staticSummary: spec.summary }),
  };
}

/**
 * Has Temporal accept `command`. Already started (a start delivered twice, a signal_with_start whose workflow
 * id the reuse policy refuses) and not running (a signal to a workflow that has finished) are answers about
 * a command that needs nothing more: the caller counts them delivered. Anything else throws.
 */
export async function deliverTemporalCommand(client: Client, command: TemporalCommand): Promise<DeliveryResult> {
  try {
    switch (command.kind) {
      case 'start':
        await client.workflow.start(command.workflowType, startOptions(command.workflowId, command));
        return 'started';
      case 'signal_with_start':
        await client.workflow.signalWithStart(command.workflowType, {
          ...startOptions(command.workflowId, command),
          signal: command.signal,
          signalArgs: [...(command.signalArgs ?? [])],
        });
        return 'signalled';
      case 'signal':
        await client.workflow.getHandle(command.workflowId).signal(command.signal, ...(command.signalArgs ?? []));
        return 'signalled';
    }
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return 'already_started';
    if (error instanceof WorkflowNotFoundError) return 'not_running';
    throw error;
  }
}
