import { OrganizationIdKey } from '../platform/searchAttributes';
import type { TemporalCommand } from '../platform/temporalCommands';
import { WEBHOOK_DELIVERY_WORKFLOW_TYPE, webhookResendWorkflowId, type WebhookDeliveryInput } from './workflowContract';
import { WEBHOOK_REPLAY_WORKFLOW_TYPE, type WebhookReplayInput } from './replayContract';

/**
 * The Temporal commands of sending events again (SPEC §17), queued by resend and replay in their request's
 * transaction (docs/temporal-road.md). Each workflow id is new per request (the attempt row's id, the
 * replay's id) and REJECT_DUPLICATE: a command delivered twice never sends anything twice, even after the
 * first run finished.
 */

/** The delivery workflow of one resend: its first attempt is the attempt row the request answered with. */
export function resendCommand(input: {
  taskQueue: string;
  organizationId: string;
  delivery: WebhookDeliveryInput & { firstAttemptId: string };
}): TemporalCommand {
  const args: [WebhookDeliveryInput] = [input.delivery];
  return {
    kind: 'start',
    workflowId: webhookResendWorkflowId(input.delivery.firstAttemptId),
    workflowType: WEBHOOK_DELIVERY_WORKFLOW_TYPE,
    taskQueue: input.taskQueue,
    args,
    idReusePolicy: 'reject_duplicate',
    searchAttributes: { [OrganizationIdKey.name]: input.organizationId },
  };
}

/** The replay's workflow (id = replay id); its memo shows the endpoint and the count in the Temporal UI. */
export function replayCommand(input: {
  taskQueue: string;
  organizationId: string;
  endpointId: string;
  eventsTotal: number;
  replay: WebhookReplayInput;
}): TemporalCommand {
  const args: [WebhookReplayInput] = [input.replay];
  return {
    kind: 'start',
    workflowId: input.replay.replayId,
    workflowType: WEBHOOK_REPLAY_WORKFLOW_TYPE,
    taskQueue: input.taskQueue,
    args,
    idReusePolicy: 'reject_duplicate',
    searchAttributes: { [OrganizationIdKey.name]: input.organizationId },
    memo: { endpoint_id: input.endpointId, events_total: input.eventsTotal },
  };
}
