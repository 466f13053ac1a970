// What the self-exclusion workflow, its activity and the code that starts it agree on (SPEC §26). Pure: workflow
// code imports it.

/** Workflow type of one self-exclusion's end; its workflow id is selfExclusionWorkflowId(the exclusion's id). */
export const SELF_EXCLUSION_WORKFLOW_TYPE = 'selfExclusionWorkflow';

export const selfExclusionWorkflowId = (selfExclusionId: string) => `self-exclusion-end:${selfExclusionId}`;

export interface SelfExclusionWorkflowInput {
  selfExclusionId: string;
  userId: string;
  /** The end, epoch ms: the workflow's durable timer fires then. */
  untilMs: number;
}

/** What the ending activity found: the user returned, a later exclusion that replaced this one, or not yet due. */
export type SelfExclusionEnd = 'ended' | 'superseded' | 'already_ended' | 'not_due';
