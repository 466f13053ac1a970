import { OrganizationIdKey } from '../platform/searchAttributes';
import type { TemporalCommand } from '../platform/temporalCommands';
import { SELF_EXCLUSION_WORKFLOW_TYPE, selfExclusionWorkflowId, type SelfExclusionWorkflowInput } from './workflowContract';

/**
 * The start of the workflow whose durable timer ends one self-exclusion (SPEC §26), queued in the transaction
 * that records the exclusion (the one road, docs/temporal-road.md). REJECT_DUPLICATE on the exclusion's own id:
 * a second delivery answers already-started, and an ended exclusion's timer never runs again.
 */
export function selfExclusionEndCommand(taskQueue: string, organizationId: string, input: SelfExclusionWorkflowInput): TemporalCommand {
  const args: [SelfExclusionWorkflowInput] = [input];
  return {
    kind: 'start',
    workflowId: selfExclusionWorkflowId(input.selfExclusionId),
    workflowType: SELF_EXCLUSION_WORKFLOW_TYPE,
    taskQueue,
    args,
    idReusePolicy: 'reject_duplicate',
    searchAttributes: { [OrganizationIdKey.name]: organizationId },
    summary: `self-exclusion of ${input.userId} until ${new Date(input.untilMs).toISOString()}`,
  };
}
