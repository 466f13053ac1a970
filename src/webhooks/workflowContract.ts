// The webhook feature's contract with Temporal: the delivery workflow's type, id, input and result, shared
// by the workflow, its activity and the dispatcher that starts it. Pure (no Node modules, no I/O).

export const WEBHOOK_DELIVERY_WORKFLOW_TYPE = 'webhookDeliveryWorkflow';

/** Deterministic per (event, endpoint): a dispatcher that starts it again after a crash finds it already there. */
export function webhookDeliveryWorkflowId(eventId: string, endpointId: string): string {
  return `webhook-${eventId}-${endpointId}`;
}

export interface WebhookDeliveryInput {
  eventId: string;
  endpointId: string;
  /** The retry schedule, fixed when the delivery was dispatched (WEBHOOK_RETRY_INITIAL_MS / _MAX_MS). */
  retry: { initialIntervalMs: number; maxIntervalMs: number };
  /**
   * A resend (POST /webhook/{id}/resend): the attempt row its request wrote, which the first attempt fills in
   * instead of writing its own, so the record the request answered is the one that shows the outcome.
   */
  firstAttemptId?: string;
}

/** A resend is a delivery of its own, named by the attempt row its request wrote: every resend runs once. */
export function webhookResendWorkflowId(attemptId: string): string {
  return `webhook-resend-${attemptId}`;
}

/**
 * How a delivery ended. `delivered`: a 2xx. `endpoint_disabled`: the endpoint answered 410 and is now
 * disabled. `refused`: the target resolved to a forbidden address. `endpoint_inactive`: the endpoint was
 * deleted or disabled before this attempt, so nothing was sent.
 */
export type WebhookDeliveryOutcome = 'delivered' | 'endpoint_disabled' | 'refused' | 'endpoint_inactive';

/** `expired`: every attempt in the 3-day window failed. */
export interface WebhookDeliveryResult {
  outcome: WebhookDeliveryOutcome | 'expired';
}

/** Thrown for every attempt that should be retried; Temporal's retry policy and the 3-day window apply. */
export const ATTEMPT_FAILED = 'WebhookAttemptFailed';
/** A delivery that must never be retried: the event and endpoint do not belong together. */
export const WEBHOOK_INVARIANT = 'WebhookInvariant';
