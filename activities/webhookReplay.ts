import type { LookupAddress } from 'node:dns';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { forEachBounded } from '../src/concurrency';
import { withTransaction } from '../src/db/pool';
import { eventView, type EventRow } from '../src/events/repo';
import { ledgerMetrics } from '../src/metrics';
import { postWebhook } from '../src/webhooks/http';
import { REPLAY_MISSING, WEBHOOK_REPLAY_LIMITS, type WebhookReplayProgress } from '../src/webhooks/replayContract';
import {
  advanceReplay,
  beginReplayAttempts,
  finishReplay,
  finishReplayAttempts,
  loadReplayBatch,
  lockReplay,
  progressOf,
  type ReplayEndpoint,
  type SendResult,
} from '../src/webhooks/replayRepo';
import { disableEndpoint } from '../src/webhooks/repo';
import { openSecret, signPayload } from '../src/webhooks/signing';
import { checkTargetAtDelivery } from '../src/webhooks/ssrf';
import type { ActivityDeps } from './deps';

interface Target {
  url: URL;
  secret: string;
  pinned: LookupAddress[] | null;
  signal: AbortSignal;
}

/** One event, once: signed now, with its event id as webhook-id (the same as every other delivery of it). */
async function sendOne(target: Target, event: EventRow, attemptId: string): Promise<SendResult> {
  const body = JSON.stringify(eventView(event));
  const headers = signPayload(target.secret, event.id, Math.floor(Date.now() / 1000), body);
  const started = performance.now();
  try {
    const status = await postWebhook(target.url, body, { ...headers }, { pinned: target.pinned, signal: target.signal });
    const succeeded = status >= 200 && status < 300;
    return {
      attemptId,
      outcome: succeeded ? 'succeeded' : 'failed',
      responseStatusCode: status,
      durationMs: performance.now() - started,
      error: succeeded ? null : `the endpoint answered ${status}`,
    };
  } catch (error) {
    const err = error as NodeJS.ErrnoException;
    const message = [err.code, err.message].filter(Boolean).join(': ') || 'unknown error';
    return { attemptId, outcome: 'failed', responseStatusCode: null, durationMs: performance.now() - started, error: message };
  }
}

/** Why nothing more may be sent to the endpoint, or null. */
function endpointProblem(endpoint: ReplayEndpoint): string | null {
  if (endpoint.deleted || endpoint.secret_sealed === null) return 'The endpoint was deleted.';
  if (endpoint.status !== 'enabled') return 'The endpoint was disabled.';
  return null;
}

export function createWebhookReplayActivities(deps: ActivityDeps) {
  /** Sends the batch with bounded concurrency, heartbeating so a dead worker's batch moves on within seconds. */
  async function sendBatch(target: Omit<Target, 'signal'>, events: EventRow[], attemptIds: string[]): Promise<SendResult[]> {
    const context = Context.current();
    const heartbeat = setInterval(() => context.heartbeat(), WEBHOOK_REPLAY_LIMITS.batchHeartbeatMs);
    const results: SendResult[] = new Array<SendResult>(events.length);
    try {
      const indexes = events.map((_, index) => index);
      await forEachBounded(indexes, WEBHOOK_REPLAY_LIMITS.sendsConcurrentMax, async (index) => {
        results[index] = await sendOne({ ...target, signal: context.cancellationSignal }, events[index]!, attemptIds[index]!);
      });
    } finally {
      clearInterval(heartbeat);
    }
    for (const result of results) ledgerMetrics.webhookDeliveriesTotal.inc({ outcome: result.outcome });
    return results;
  }

  return {
    /**
     * The replay's next batch: up to batchEventsMax events after its cursor, sent, their attempts recorded and
     * the cursor moved past them in one transaction. Completes the replay when no event is left, fails it when
     * the endpoint can no longer receive. Safe to run again: it always starts from the committed cursor.
     */
    async sendWebhookReplayBatch(input: { replayId: string }): Promise<WebhookReplayProgress> {
      // Waits for the request that created the replay to commit (it holds this lock until then).
      await withTransaction(deps.pool, (tx) => lockReplay(tx, input.replayId));
      const loaded = await loadReplayBatch(deps.pool, input.replayId, WEBHOOK_REPLAY_LIMITS.batchEventsMax);
      if (!loaded) throw ApplicationFailure.nonRetryable(`no webhook replay ${input.replayId}: its request did not commit`, REPLAY_MISSING);
      const { replay, endpoint, events } = loaded;
      if (replay.status !== 'running') return progressOf(replay);
      const problem = endpointProblem(endpoint);
      if (problem) return progressOf(await finishReplay(deps.pool, replay.id, 'failed', problem));
      if (events.length === 0) return progressOf(await finishReplay(deps.pool, replay.id, 'completed', null));
      const url = new URL(endpoint.url);
      const check = await checkTargetAtDelivery(deps.config, url);
      if (!check.ok) return progressOf(await finishReplay(deps.pool, replay.id, 'failed', check.reason));
      // The secret is opened here, inside the activity, so it never enters workflow history.
      const secret = openSecret(endpoint.secret_sealed!, deps.config.WEBHOOK_SECRET_KEY);
      const attemptIds = await beginReplayAttempts(deps.pool, replay, events);
      const results = await sendBatch({ url, secret, pinned: check.addresses }, events, attemptIds);
      const gone = results.some((result) => result.responseStatusCode === 410);
      const row = await withTransaction(deps.pool, async (tx) => {
        await finishReplayAttempts(tx, results);
        const advanced = await advanceReplay(tx, {
          replayId: replay.id,
          fromEventId: replay.cursor_event_id,
          lastEventId: events[events.length - 1]!.id,
          sent: results.length,
          failed: results.filter((result) => result.outcome === 'failed').length,
        });
        if (!gone) return advanced;
        // 410 Gone is the receiver saying "stop", as for any delivery: the endpoint is disabled, the replay ends.
        await disableEndpoint(tx, replay.endpoint_id, 'The endpoint answered 410 Gone.');
        return finishReplay(tx, replay.id, 'failed', 'The endpoint answered 410 Gone; it is now disabled.');
      });
      return progressOf(row);
    },
  };
}

export type WebhookReplayActivities = ReturnType<typeof createWebhookReplayActivities>;
