// The webhook replay's contract with Temporal (SPEC §17): workflow type, input, progress and its query,
// shared by the workflow, its activity and the service that starts it. Pure: workflow code imports it.
import { defineQuery } from '@temporalio/workflow';

export const WEBHOOK_REPLAY_WORKFLOW_TYPE = 'webhookReplayWorkflow';

export type WebhookReplayStatus = 'running' | 'completed' | 'failed';

/** What the replay's row says after a batch; also its Temporal memo and the answer of its query. */
export interface WebhookReplayProgress {
  status: WebhookReplayStatus;
  eventsTotal: number;
  eventsSent: number;
  eventsFailed: number;
}

export interface WebhookReplayInput {
  /** Also the workflow id: one workflow per replay. */
  replayId: string;
  /** Carried across continue-as-new, so the query answers at once in the new run. */
  progress?: WebhookReplayProgress;
  /** Batches before continuing as new; WEBHOOK_REPLAY_LIMITS.batchesPerRunMax unless given (tests shorten it). */
  batchesPerRunMax?: number;
}

export const webhookReplayProgressQuery = defineQuery<WebhookReplayProgress | null>('webhookReplayProgress');

/** A replay whose row never committed (its request failed after starting the workflow): nothing to do, never retried. */
export const REPLAY_MISSING = 'WebhookReplayMissing';

/** Limits of a replay, every one explicit (TIGER_STYLE). No imports: workflow code reads them. */
export const WEBHOOK_REPLAY_LIMITS = {
  /** Events one activity sends; its progress is committed after each batch, so a crash resends at most this many. */
  batchEventsMax: 100,
  /** Requests of one batch in flight at once. */
  sendsConcurrentMax: 16,
  /** Batches one workflow run sends before it continues as new, keeping its history short. */
  batchesPerRunMax: 200,
  /** One batch: up to batchEventsMax / sendsConcurrentMax rounds of 15-second attempts, and its database writes. */
  batchActivityTimeoutMs: 5 * 60_000,
  /** A worker killed mid-batch is noticed after this long without a heartbeat, and the batch runs again elsewhere. */
  batchHeartbeatTimeoutMs: 10_000,
  batchHeartbeatMs: 1_000,
  /** Types one replay may name. */
  typesMax: 32,
};
